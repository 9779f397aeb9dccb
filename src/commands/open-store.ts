import { existsSync } from 'node:fs'
import type { StoreSettings } from '../config'
import type { ResourceRegistry } from '../resources/registry'
import { openStore, shownDatabaseUrl } from '../store/open'
import type { Store } from '../store/store'
import { UsageError } from './command'

/**
 * Opens the store a command works on, as the service does (migrations included). `existing`: a
 * command that only reads refuses a database file that is not there rather than create an empty one.
 */
export async function openCommandStore(
  settings: StoreSettings,
  registry: ResourceRegistry,
  options: { readonly existing?: boolean } = {},
): Promise<Store> {
  const { database, databaseUrl } = settings
  if (database.kind === 'sqlite' && database.path === ':memory:') {
    // An import would report books stored that vanish as it exits; an export would find none.
    throw new UsageError(
      "sqlite://:memory: lives inside one process only: a command cannot reach the service's, and what it stored would be lost; give the database file",
    )
  }
  if (options.existing && database.kind === 'sqlite' && !existsSync(database.path)) {
    throw new UsageError(`there is no database at ${databaseUrl}`)
  }
  try {
    return await openStore(database, registry, {
      busyTimeoutMs: settings.busyTimeoutMs,
      poolSize: settings.databasePoolSize,
      connectTimeoutSeconds: settings.databaseConnectTimeout,
      statementTimeoutMs: settings.statementTimeoutMs,
    })
  } catch (error) {
    throw new UsageError(`cannot open the database at ${shownDatabaseUrl(databaseUrl)}: ${(error as Error).message}`)
  }
}
