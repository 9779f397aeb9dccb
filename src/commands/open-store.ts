import type { StoreSettings } from '../config'
import type { ResourceRegistry } from '../resources/registry'
import { openStore, refusedToCommands, type StoreOptions, shownDatabaseUrl } from '../store/open'
import type { Store } from '../store/store'
import { UsageError } from './command'

/**
 * Opens the store a command works on, as the service does (migrations included). `existing`: a
 * command that only reads refuses a database file that is not there rather than create an empty one.
 */
export async function openCommandStore(
  settings: StoreSettings,
  registry: ResourceRegistry,
  options: {
    readonly existing?: boolean
    /** false: neither create nor migrate it (a dry run): a schema behind this build's is refused. */
    readonly migrate?: boolean
    readonly onMigration?: StoreOptions['onMigration']
    readonly onIndexBuilt?: StoreOptions['onIndexBuilt']
  } = {},
): Promise<Store> {
  const { database, databaseUrl } = settings
  const refused = refusedToCommands(database, databaseUrl, options)
  if (refused !== null) throw new UsageError(refused)
  try {
    return await openStore(database, registry, {
      busyTimeoutMs: settings.busyTimeoutMs,
      poolSize: settings.databasePoolSize,
      connectTimeoutSeconds: settings.databaseConnectTimeout,
      statementTimeoutMs: settings.statementTimeoutMs,
      preparedStatements: settings.databasePreparedStatements,
      migrate: options.migrate,
      onMigration: options.onMigration,
      onIndexBuilt: options.onIndexBuilt,
    })
  } catch (error) {
    throw new UsageError(`cannot open the database at ${shownDatabaseUrl(databaseUrl)}: ${(error as Error).message}`)
  }
}
