import type { SQL } from 'bun'
import type { MigrationApplied } from '../migration-state'

/**
 * Versioned schema migrations for the PostgreSQL store, the same schema as the SQLite store's in
 * PostgreSQL's terms (migrations.ts). A migration, once released, is never edited: add a new one.
 */
export interface PostgresMigration {
  readonly version: number
  readonly name: string
  readonly sql: string
}

/** Any number fits: the key of the advisory lock that makes the instances starting together migrate one at a time. */
const MIGRATION_LOCK = 7_419_233_001

/**
 * Brings the schema up to the last of `migrations`, each in its own transaction. Each transaction
 * first takes a transaction-scoped advisory lock and only then reads the version, so that many
 * instances starting together apply each migration once: whoever comes second waits for the
 * first's commit and then sees the version it wrote.
 */
export async function migratePostgres(
  sql: SQL,
  migrations: readonly PostgresMigration[],
  onApplied: (migration: MigrationApplied) => void = () => {},
): Promise<void> {
  const latest = migrations.at(-1)?.version ?? 0
  for (;;) {
    const started = performance.now()
    const applied = await sql.begin(async (tx): Promise<PostgresMigration | null> => {
      // STATEMENT_TIMEOUT is for requests: waiting for another instance's migration, or building
      // an index over a large table, may take longer.
      await tx`SET LOCAL statement_timeout = 0`
      await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`
      await tx`CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`
      const [{ current }] = await tx`SELECT COALESCE(MAX(version), 0)::int AS current FROM schema_migrations`
      if (current > latest) {
        throw new Error(`the database schema is at version ${current}, newer than this build knows (${latest})`)
      }
      const next = migrations.find((migration) => migration.version > current)
      if (!next) return null
      await tx.unsafe(next.sql)
      await tx`INSERT INTO schema_migrations (version, name) VALUES (${next.version}, ${next.name})`
      return next
    })
    if (!applied) return
    onApplied({ version: applied.version, name: applied.name, durationMs: performance.now() - started })
  }
}

/** The version of the last migration applied to the database: 0 when it has none (no catalogue yet). */
export async function postgresSchemaVersion(sql: SQL): Promise<number> {
  const [row] = await sql`SELECT to_regclass('schema_migrations') IS NOT NULL AS known`
  if (!row?.known) return 0
  const [{ current }] = await sql`SELECT COALESCE(MAX(version), 0)::int AS current FROM schema_migrations`
  return Number(current)
}
