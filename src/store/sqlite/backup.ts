import { statSync } from 'node:fs'

export interface BackupWorkerData {
  readonly source: string
  readonly target: string
  readonly busyTimeoutMs: number
}

export type BackupMessage =
  /** The copy has begun; it will be about this large (the pages in use). */
  | { readonly kind: 'started'; readonly expectedBytes: number }
  | { readonly kind: 'done' }
  | { readonly kind: 'failed'; readonly message: string }

/** How often the size of the copy is read for the progress. */
const POLL_MS = 100

/**
 * The worker's module. In the executable it is an entry point of `bun build --compile` (see
 * package.json), found by its path from src/; this module is bundled into the main one there, so a
 * path relative to it would not resolve.
 */
const workerUrl = import.meta.url.includes('$bunfs')
  ? './store/sqlite/threads/backup-worker.ts'
  : new URL('./threads/backup-worker.ts', import.meta.url).href

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
