import { existsSync } from 'node:fs'
import type { StoreSettings } from '../config'
import type { ResourceRegistry } from '../resources/registry'
import { openStore } from '../store/open'
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
  if (options.existing && database.kind === 'sqlite' && database.path !== ':memory:' && !existsSync(database.path)) {
    throw new UsageError(`there is no database at ${databaseUrl}`)
  }
  try {
    return await openStore(database, registry, { busyTimeoutMs: settings.busyTimeoutMs })
  } catch (error) {
    throw new UsageError(`cannot open the database at ${databaseUrl}: ${(error as Error).message}`)
  }
}
