/**
 * The thread that checkpoints a served SQLite database's WAL (see sqlite/threads/checkpointer.ts), on a
 * connection of its own, so that the disk waits of a checkpoint fall here and not on the thread
 * that answers requests.
 */
import { Database } from 'bun:sqlite'
import { workerData } from 'node:worker_threads'
import {
  type CheckpointMessage,
  type CheckpointRequest,
  type CheckpointWorkerData,
  RESTART_AFTER_FRAMES,
  RESTART_WAIT_MS,
} from './checkpointer'

declare const self: Worker

function post(message: CheckpointMessage): void {
  self.postMessage(message)
}

let db: Database | undefined
try {
  const { path } = workerData as CheckpointWorkerData
  // Never created here: the writer made and migrated the file before starting this thread.
  db = new Database(path, { readwrite: true, create: false, strict: true })
  // NORMAL: a checkpoint syncs the WAL before it copies pages into the file, and the file after,
  // so a WAL the writer starts over never holds the only copy of a commit.
  db.run('PRAGMA synchronous = NORMAL')
  // This connection never writes; were it to, it still must not checkpoint on its own.
  db.run('PRAGMA wal_autocheckpoint = 0')
  // How long a RESTART waits for the writer and the readers: new writes wait as long, the event
  // loop not at all (the writer tries its lock again on a timer).
  db.run(`PRAGMA busy_timeout = ${RESTART_WAIT_MS}`)
  post({ kind: 'ready' })
} catch (error) {
  post({ kind: 'failed', message: (error as Error).message })
}

type CheckpointRow = { busy: number; log: number; checkpointed: number }
// PASSIVE: copies what no reader still needs, without waiting for the writer or any reader.
const passive = db?.prepare<CheckpointRow, []>('PRAGMA wal_checkpoint(PASSIVE)')
// RESTART: waits (up to the busy timeout) for the writer's transaction and the readers to end,
// copies the rest, and holds new writes back until it has: the next commit then starts the WAL over.
const restart = db?.prepare<CheckpointRow, []>('PRAGMA wal_checkpoint(RESTART)')

self.onmessage = (event: MessageEvent<CheckpointRequest>) => {
  if (event.data.kind === 'close') {
    passive?.finalize()
    restart?.finalize()
    db?.close()
    process.exit(0)
  }
  try {
    let row = passive?.get()
    // Commits made while a PASSIVE checkpoint copies are left for the next, so under a steady
    // stream of writes it never catches up and the WAL is never started over: past a bound, the
    // few frames left are copied with new writes held back for that moment. Only when PASSIVE
    // could copy all it found: a reader still using older frames (a backup's long read) would make
    // RESTART wait its whole timeout with writes held back, for nothing.
    if (row && row.log > RESTART_AFTER_FRAMES && row.checkpointed === row.log) row = restart?.get() ?? row
    post({ kind: 'checkpointed', frames: row?.log ?? 0, copied: row?.checkpointed ?? 0 })
  } catch (error) {
    // Another process's checkpoint under way: this one copies nothing now, and the next tries again.
    const code = (error as { code?: string }).code ?? ''
    if (code.startsWith('SQLITE_BUSY') || code === 'SQLITE_PROTOCOL')
      post({ kind: 'checkpointed', frames: 0, copied: 0 })
    else post({ kind: 'failed', message: (error as Error).message })
  }
}
