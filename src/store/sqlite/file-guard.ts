import { constants, type Database } from 'bun:sqlite'
import { statSync } from 'node:fs'
import { StoreUnavailableError } from '../faults'

/** The file at `path` (links followed) as `<device>:<inode>`, or null when there is none. */
export function fileIdentity(path: string): string | null {
  const stats = statSync(path, { throwIfNoEntry: false })
  return stats ? `${stats.dev}:${stats.ino}` : null
}

/** What every request gets once the store has seen its file replaced or removed: a 503 until a restart. */
export function fileReplaced(): StoreUnavailableError {
  return new StoreUnavailableError(
    'replaced',
    'DATABASE_FILE_REPLACED',
    'the database file was replaced or removed while the service runs: the service must be restarted',
  )
}

/**
 * Whether the database file a connection opened is still the one at its path.
 *
 * A file replaced (`mv backup.db catalogue.db`) or removed under an open connection goes on
 * answering through it: reads from the old file, and commits into the WAL and -shm files, which
 * keep their names and so now pair with the new file; the next start replays those frames onto it
 * and finds it malformed. So a store asks before each read and before each write transaction
 * begins and commits, and once it has seen the file moved it refuses everything, for good: the
 * operator put another file there, and only a restart serves it.
 *
 * The check is SQLite's own (SQLITE_FCNTL_HAS_MOVED: a stat of the path, its inode against the
 * one the connection holds, or no file at all): 0.40 µs, measured against 0.81-1.28 µs for
 * node:fs statSync and 0.99 µs for a one-row SELECT. A GET of one record makes one store call, a
 * group commit two checks (before BEGIN and before COMMIT); what is left is the moment between the
 * check and the COMMIT. A database in memory has no file: its flag stays 0.
 */
export class FileGuard {
  private readonly moved = new Int32Array(2)
  private seen: StoreUnavailableError | undefined

  constructor(
    private readonly db: Database,
    /** Told once, when the file is first seen replaced or removed. */
    private readonly onReplaced: () => void = () => {},
  ) {}

  /** Whether the file has been seen replaced or removed. */
  get replaced(): boolean {
    return this.seen !== undefined
  }

  /** The fault to answer with once the file was seen replaced or removed (from then on, always), else undefined. */
  fault(): StoreUnavailableError | undefined {
    if (this.seen) return this.seen
    this.db.fileControl(constants.SQLITE_FCNTL_HAS_MOVED, this.moved)
    if (this.moved[0] === 0) return undefined
    this.markReplaced()
    return this.seen
  }

  /** The file is not the one this store must serve (another opened it first, see SqliteOptions.sameFileAs). */
  markReplaced(): void {
    if (this.seen) return
    this.seen = fileReplaced()
    this.onReplaced()
  }
}
