import type { Database } from 'bun:sqlite'
import type { MigrationApplied } from '../migration-state'
import type { Migration } from './migrations'

/** How often, and how far apart, switching to WAL is tried again while another process holds the file. */
const WAL_TRIES = 100
const WAL_RETRY_MS = 20

/**
 * Puts the database in WAL mode. The switch needs the file to itself, and SQLite answers
 * SQLITE_BUSY at once, without waiting out busy_timeout, while another connection holds the write
 * lock of a file still in rollback-journal mode (a database from before WAL, several processes
 * converting it at once): so it is tried again, for up to two seconds.
 */
export function useWal(db: Database): void {
  for (let attempt = 1; ; attempt++) {
    try {
      db.run('PRAGMA journal_mode = WAL')
      return
    } catch (error) {
      const busy = String((error as { code?: unknown }).code).startsWith('SQLITE_BUSY')
      if (!busy || attempt === WAL_TRIES) throw error
      Bun.sleepSync(WAL_RETRY_MS)
    }
  }
}

/**
 * Brings the schema up to the last of `migrations`, one migration per transaction. Each
 * transaction takes the write lock first (BEGIN IMMEDIATE, waiting out busy_timeout) and only then
 * reads the version, so that processes starting together on one file apply each migration once:
 * whoever comes second sees the version the first one committed.
 */
export function migrate(
  db: Database,
  migrations: readonly Migration[],
  onApplied: (migration: MigrationApplied) => void = () => {},
): void {
  const latest = migrations.at(-1)?.version ?? 0
  const step = db.transaction((): Migration | null => {
    db.run(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
    )
    const { current } = db.query('SELECT COALESCE(MAX(version), 0) AS current FROM schema_migrations').get() as {
      current: number
    }
    if (current > latest) {
      throw new Error(`the database schema is at version ${current}, newer than this build knows (${latest})`)
    }
    const next = migrations.find((migration) => migration.version > current)
    if (!next) return null
    if (next.sql.trim() !== '') db.run(next.sql)
    next.rewrite?.(db)
    db.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
      next.version,
      next.name,
      new Date().toISOString(),
    )
    return next
  })
  // One migration per transaction, until none is left; each told once committed, with its time.
  for (;;) {
    const started = performance.now()
    const applied = step.immediate()
    if (!applied) return
    onApplied({ version: applied.version, name: applied.name, durationMs: performance.now() - started })
  }
}

/** The version of the last migration applied to the database: 0 when it has none (a new file). */
export function schemaVersion(db: Database): number {
  const known = db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get()
  if (!known) return 0
  const row = db.query('SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations').get() as {
    version: number
  }
  return row.version
}
