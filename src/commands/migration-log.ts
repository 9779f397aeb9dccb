import type { Logger } from '../logger'
import type { MigrationApplied } from '../store/migration-state'

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
