/** A migration, as the opening that applies it reports it (StoreOptions.onMigration). */
export interface MigrationApplied {
  readonly version: number
  readonly name: string
  /** Milliseconds from its transaction's start to its commit (the service logs it: an upgrade's long step shows). */
  readonly durationMs: number
}

/**
 * An index the generator writes that an opening found missing and built (an import stopped before
 * its end leaves some out: sqlite/import-indexes.ts), as the opening reports it (StoreOptions.onIndexBuilt).
 */
export interface IndexBuilt {
  readonly name: string
  readonly durationMs: number
}

/**
 * Why a store that may not migrate (a dry run's) refuses a schema at version `current` when this
 * build's is at `latest`.
 */
export function unmigrated(current: number, latest: number): string {
  if (current === 0) return 'the database holds no catalogue yet'
  if (current > latest) return `the database schema is at version ${current}, newer than this build knows (${latest})`
  return `the database schema is at version ${current}, and this build needs ${latest}: run catalogue migrate first`
}
