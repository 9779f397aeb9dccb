import type { Database } from 'bun:sqlite'
import { readFileSync, statSync } from 'node:fs'

/**
 * What became of the WAL of a file replaced or removed under the store:
 * - `emptied`: every frame copied into the old file, and the WAL truncated to nothing;
 * - `in use`: another connection has the file now at the path open (or that cannot be told): the
 *   WAL may hold its commits, so it is left as SQLite leaves it;
 * - `busy`: a reader or a checkpoint held it (or a transaction is open here): tried again at close.
 */
export type ReplacedWal = 'emptied' | 'in use' | 'busy'

/**
 * Whether any process holds a lock on the file with this inode, from the kernel's table of locks
 * (Linux's /proc/locks): every SQLite connection in WAL mode holds a shared lock on its database
 * file for as long as it is open. Matched by inode alone, which overlay filesystems report as the
 * table does; true where the table cannot be read, so that nothing is emptied on a guess.
 */
function lockedByAnyone(inode: number): boolean {
  let table: string
  try {
    table = readFileSync('/proc/locks', 'utf8')
  } catch {
    return true
  }
  // `1: POSIX  ADVISORY  READ 20300 fe:00:2241624 1073741826 1073742335`: the file is device:inode.
  return table.split('\n').some((line) => line.split(/\s+/).some((field) => field.endsWith(`:${inode}`)))
}

/**
 * Empties the WAL of a database file that was replaced or removed while `db` had it open. SQLite
 * leaves that WAL in place when such a connection closes (its frames may belong to whoever opened
 * the new file), under the name that now pairs it with the new file: the next start would replay
 * the old file's pages onto the new one, which is then malformed. Measured: a `catalogue backup`
 * moved over the served file, no write after it, a clean stop and a start: `database disk image is
 * malformed`, from the frames written before the move.
 *
 * So, when no other process has the new file open, a TRUNCATE checkpoint copies the frames into the
 * old file (still reachable if it was renamed away, and then whole by itself) and truncates the
 * WAL: the new file opens as it was put there. Writes to the old file only, and to the WAL and -shm
 * files only to empty them. Never inside a transaction of `db`.
 */
export function emptyReplacedWal(db: Database, path: string): ReplacedWal {
  if (db.inTransaction) return 'busy'
  const now = statSync(path, { throwIfNoEntry: false })
  if (now && lockedByAnyone(now.ino)) return 'in use'
  try {
    const row = db.query<{ busy: number }, []>('PRAGMA wal_checkpoint(TRUNCATE)').get()
    return row?.busy === 0 ? 'emptied' : 'busy'
  } catch {
    return 'busy'
  }
}
