import { commandHelpLine } from './help'
import { givenBy, settingValue } from './parser'
import { databaseOf } from './rules'
import type { StoreSettings } from './service-config'

/*
 * The settings the operator commands share with the service, read exactly as the service reads
 * them (flag, then environment variable, then default): the database for those that open it, the
 * address for the one that asks the running service.
 */

/** The store settings' flags without their leading dashes, as a command's parser takes them. */
export const storeSettingFlags = {
  'data-dir': 'dataDir',
  'database-url': 'databaseUrl',
  'busy-timeout': 'busyTimeoutMs',
  'database-pool-size': 'databasePoolSize',
  'database-connect-timeout': 'databaseConnectTimeout',
  'statement-timeout': 'statementTimeoutMs',
  'database-prepared-statements': 'databasePreparedStatements',
} as const satisfies Record<string, keyof StoreSettings>

/** The database settings, for a command that has taken their flags (keyed by setting) from its own arguments. */
export function parseStoreSettings(
  flags: Partial<Record<(typeof storeSettingFlags)[keyof typeof storeSettingFlags], string>>,
  env: Readonly<Record<string, string | undefined>>,
): StoreSettings {
  const given = givenBy(flags, env)
  const dataDir = settingValue('dataDir', given)
  return {
    dataDir,
    ...databaseOf(given, dataDir),
    busyTimeoutMs: settingValue('busyTimeoutMs', given),
    databasePoolSize: settingValue('databasePoolSize', given),
    databaseConnectTimeout: settingValue('databaseConnectTimeout', given),
    statementTimeoutMs: settingValue('statementTimeoutMs', given),
    databasePreparedStatements: settingValue('databasePreparedStatements', given),
  }
}

/** The help lines of the database settings, for the --help of a command that takes them. */
export const storeSettingsHelp = [
  commandHelpLine('dataDir'),
  commandHelpLine('databaseUrl'),
  commandHelpLine('busyTimeoutMs', 'milliseconds to wait for a lock another connection (the service) holds'),
  commandHelpLine('databasePoolSize', 'PostgreSQL: most connections the command opens'),
  commandHelpLine('databaseConnectTimeout', 'PostgreSQL: seconds to wait for a connection'),
  commandHelpLine('statementTimeoutMs', 'PostgreSQL: milliseconds one statement may run (0: no limit)'),
  commandHelpLine('databasePreparedStatements', 'PostgreSQL: false sends no named prepared statements (PgBouncer)'),
].join('\n')

/** Where the service listens, read as the service reads it: for a command that asks the running service. */
export function parseAddressSettings(
  flags: { readonly host?: string; readonly port?: string },
  env: Readonly<Record<string, string | undefined>>,
): { readonly host: string; readonly port: number } {
  const given = givenBy(flags, env)
  return { host: settingValue('host', given), port: settingValue('port', given) }
}

/** The help lines of the address settings, for the --help of a command that takes them. */
export const addressSettingsHelp = [commandHelpLine('host'), commandHelpLine('port')].join('\n')
