import { Database } from 'bun:sqlite'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import type { ResourceRegistry } from '../../resources/registry'
import { type IndexBuilt, type MigrationApplied, unmigrated } from '../migration-state'
import { skipToNow } from './change-history'
import { storeError } from './faults'
import { fileIdentity, fileReplaced } from './file-guard'
import { migrate, schemaVersion, useWal } from './migrate'
import { type Migration, sqliteMigrations } from './migrations'
import { checkSchema } from './schema'

/**
 * When a write is answered, on SQLite. `full`: once its commit is on disk (synchronous=FULL), so
 * it survives a power loss. `normal`: once its commit is in the WAL file (synchronous=NORMAL), so
 * it survives a crash of the service (a SIGKILL loses nothing), but a power loss or a crash of the
 * machine may undo the last commits (never half of one: the file stays sound). PostgreSQL's
 * durability is the server's own (`synchronous_commit`), set there.
 */
export const durabilities = ['full', 'normal'] as const
export type Durability = (typeof durabilities)[number]

export interface SqliteOptions {
  readonly busyTimeoutMs?: number
  readonly migrations?: readonly Migration[]
  /**
   * A connection that only reads (a read worker's): it neither migrates nor writes, and finds
   * the schema as the writer left it.
   */
  readonly readOnly?: boolean
  /** false: open read-only, and refuse a schema behind this build's rather than migrate it (StoreOptions.migrate). */
  readonly migrate?: boolean
  /** Told of each migration applied (StoreOptions.onMigration). */
  readonly onMigration?: (migration: MigrationApplied) => void
  /** Told of each missing index the opening built (StoreOptions.onIndexBuilt). */
  readonly onIndexBuilt?: (built: IndexBuilt) => void
  /** A start of the service: draw a new generation for version() (StoreOptions.newGeneration in open.ts). */
  readonly newGeneration?: boolean
  /** `full` by default (see Durability). */
  readonly durability?: Durability
  /**
   * Wait for the disk off this thread: the WAL is checkpointed on a thread of its own rather than
   * in the commits of this connection (sqlite/threads/checkpointer.ts), and at `full` durability a commit
   * is flushed by the runtime's thread pool before its writes are answered (sqlite/threads/wal-flush.ts).
   * What the service does; off by default, for commands and tests that open a store for a moment.
   */
  readonly offloadDiskWaits?: boolean
  /**
   * The file (`<device>:<inode>`, file-guard.ts) that the service opened first: a read worker or a
   * worker process started later must find the same one at the path, or serve nothing (503), since
   * the service's other connections still hold the old one and its WAL (StoreOptions.sameDatabaseAs).
   */
  readonly sameFileAs?: string
}

const DEFAULT_BUSY_TIMEOUT_MS = 5000

/** An open connection, its schema at `schemaVersion`, and how long its users wait for a lock. */
export interface OpenedDatabase {
  readonly db: Database
  /** The version of the last migration this build knows: the schema is at it once open. */
  readonly schemaVersion: number
  readonly busyTimeoutMs: number
}

/**
 * Opens (creating it and its folder if needed), migrates and checks the database at `path` or
 * `:memory:`; read-only (no creation, no migration) for a read worker or `migrate: false`.
 */
export function openDatabase(path: string, registry: ResourceRegistry, options: SqliteOptions): OpenedDatabase {
  const { busyTimeoutMs = DEFAULT_BUSY_TIMEOUT_MS } = options
  const latest = (options.migrations ?? sqliteMigrations).at(-1)?.version ?? 0
  const opened = (db: Database) => ({ db, schemaVersion: latest, busyTimeoutMs })
  // Before anything opens the file: a writer's opening alone may write to it (WAL mode, migrations).
  if (options.sameFileAs !== undefined && fileIdentity(path) !== options.sameFileAs) throw fileReplaced()
  if (options.readOnly || options.migrate === false) {
    let db: Database
    try {
      db = new Database(path, { readonly: true, strict: true })
      db.run(`PRAGMA busy_timeout = ${Math.trunc(busyTimeoutMs)}`)
    } catch (error) {
      // A file gone or unreadable while the service runs: a fault, as for any read.
      throw storeError(error)
    }
    try {
      const current = options.migrate === false ? schemaVersion(db) : latest
      if (current !== latest) throw new Error(unmigrated(current, latest))
      // An index a stopped import left out answers nothing wrong, only slower: a writer builds it.
      checkSchema(db, registry, 'allowed')
    } catch (error) {
      db.close()
      throw storeError(error)
    }
    return opened(db)
  }
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const db = new Database(path, { create: true, strict: true })
  // First: every later statement then waits for another process starting on this file.
  db.run(`PRAGMA busy_timeout = ${Math.trunc(busyTimeoutMs)}`)
  useWal(db)
  // FULL: a commit reaches the disk before the 2xx goes out, so it survives a crash or power loss.
  // NORMAL (in WAL): the commit is in the WAL file, which survives the process, not the machine.
  // With offloadDiskWaits, `full` commits as NORMAL does and flushes the WAL itself (GroupCommit).
  db.run(`PRAGMA synchronous = ${options.durability === 'normal' ? 'NORMAL' : 'FULL'}`)
  db.run('PRAGMA foreign_keys = ON')
  try {
    // A file that held a database before this opening may be a copy put back: its feed's next id
    // moves past every id handed out before (sqlite/change-history.ts). A new one starts at 1.
    const existed = path !== ':memory:' && schemaVersion(db) > 0
    migrate(db, options.migrations ?? sqliteMigrations, options.onMigration)
    checkSchema(db, registry, 'built', options.onIndexBuilt)
    // A new generation at each start of the service: tags given before it (for a file since put
    // back from a backup, say, whose count of changes went back) never match again. The row is
    // made again if someone deleted it (its count then starts over, under the new generation).
    if (options.newGeneration) {
      db.run(`INSERT INTO data_version (id, generation, changes) VALUES (1, lower(hex(randomblob(8))), 0)
        ON CONFLICT (id) DO UPDATE SET generation = excluded.generation`)
    }
    if (existed) skipToNow(db)
  } catch (error) {
    db.close()
    throw error
  }
  // From here on SQLite never waits for a lock itself: its busy handler sleeps in the thread, which
  // would stop every request of this process while another process writes. The store retries on
  // timers instead (group-commit.ts, lock-wait.ts); only the start above may block.
  db.run('PRAGMA busy_timeout = 0')
  return opened(db)
}
