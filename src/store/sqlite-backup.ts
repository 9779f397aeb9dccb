import { statSync } from 'node:fs'
import { without } from './machinery-switches'
import { type BackupMessage, type BackupWorkerData, copySqlite } from './sqlite-backup-copy'

/** How often the size of the copy is read for the progress. */
const POLL_MS = 100

/**
 * The worker's module. In the executable it is an entry point of `bun build --compile` (see
 * package.json), found by its path from src/; this module is bundled into the main one there, so a
 * path relative to it would not resolve.
 */
const workerUrl = import.meta.url.includes('$bunfs')
  ? './store/sqlite-backup-worker.ts'
  : new URL('./sqlite-backup-worker.ts', import.meta.url).href

function sizeOf(path: string): number {
  try {
    return statSync(path).size
  } catch {
    return 0
  }
}

/**
 * Copies the SQLite database at `source` to the new file `target` while other connections go on
 * reading and writing it: SQLite's VACUUM INTO, which writes a consistent snapshot (the database as
 * of one transaction) in a compact file of its own, checked with quick_check afterwards. It runs on
 * a thread of its own; `progress` is told the bytes written so far and the bytes expected.
 */
export async function backupSqlite(
  source: string,
  target: string,
  options: { readonly busyTimeoutMs: number; readonly progress: (written: number, expected: number) => void },
): Promise<void> {
  const data: BackupWorkerData = { source, target, busyTimeoutMs: options.busyTimeoutMs }
  if (without('backup-thread')) return copyHere(data, options.progress)
  const worker = new Worker(workerUrl, { workerData: data, smol: true } as WorkerOptions)
  let expected = 0
  // Nothing to show until the worker has said how large the copy will be.
  const poll = setInterval(() => expected > 0 && options.progress(sizeOf(target), expected), POLL_MS)
  try {
    await new Promise<void>((resolve, reject) => {
      worker.onmessage = (event: MessageEvent<BackupMessage>) => {
        const message = event.data
        if (message.kind === 'started') expected = message.expectedBytes
        else if (message.kind === 'done') resolve()
        else reject(new Error(message.message))
      }
      worker.onerror = (event) => reject(new Error(event.message))
      worker.addEventListener('close', () => reject(new Error('the backup thread stopped')), { once: true })
    })
    // The estimate counted pages the copy may not need: done is all of it.
    const written = sizeOf(target)
    options.progress(written, written)
  } finally {
    clearInterval(poll)
    worker.terminate()
  }
}

/** CATALOGUE_WITHOUT=backup-thread (machinery-switches.ts): the copy on this thread, no progress meanwhile. */
function copyHere(data: BackupWorkerData, progress: (written: number, expected: number) => void): void {
  let outcome: BackupMessage | undefined
  copySqlite(data, (message) => {
    if (message.kind !== 'started') outcome = message
  })
  if (outcome?.kind !== 'done')
    throw new Error(outcome?.kind === 'failed' ? outcome.message : 'the copy did not finish')
  const written = sizeOf(data.target)
  progress(written, written)
}
