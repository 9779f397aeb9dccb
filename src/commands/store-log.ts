import type { Logger } from '../logger'
import type { IndexBuilt, MigrationApplied } from '../store/migration-state'

/*
 * What the service logs of its database as it starts (one process, or the supervisor of
 * --workers): the migrations it applies, and a change feed that starts over.
 */

/**
 * The service's line for each migration its start applies (one process, or the supervisor of
 * --workers): an upgrade leaves in the log what it changed and how long each step took, a table
 * rewritten under a large catalogue among them. `catalogue migrate` prints its own lines instead.
 */
export function logMigration(logger: Logger): (migration: MigrationApplied) => void {
  return (migration) =>
    logger.log('info', 'migration applied', {
      migration: migration.version,
      name: migration.name,
      duration_ms: Math.round(migration.durationMs * 1000) / 1000,
    })
}

/** The line of a change feed that starts over (StoreOptions.onFeedRestart), for the operator. */
export function logFeedRestart(logger: Logger): () => void {
  return () =>
    logger.log(
      'warn',
      "the change feed starts over: this database is not the one its changes were recorded in (a restore, a database made again, a promoted standby); followers' positions from before are 410 Gone and they read the lists again (docs/changes.md)",
    )
}

/**
 * The service's line for each index its start built because the file lacked it: an import into an
 * empty catalogue stopped before its end (a crash) leaves some out, and a start that takes longer
 * says why.
 */
export function logIndexBuilt(logger: Logger): (built: IndexBuilt) => void {
  return (built) =>
    logger.log('info', 'index built: an import stopped before its end had left it out', {
      index: built.name,
      duration_ms: Math.round(built.durationMs * 1000) / 1000,
    })
}
