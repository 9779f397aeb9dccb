import { commandHelpLine } from './help'
import { givenBy, settingValue } from './parser'
import { databaseOf } from './rules'
import type { SettingName, StoreSettings } from './service-config'
import { settings } from './table'

/*
 * The settings the operator commands share with the service, read exactly as the service reads
 * them (flag, then environment variable, then default): the database for those that open it, the
 * address for the one that asks the running service. A command reads only the settings it names,
 * and its --help lists those (test/commands/command-help.test.ts holds each command to that).
 */

/** A database setting a command may read; where the database is (`database`) follows from the first two. */
export type StoreSettingName = Exclude<keyof StoreSettings, 'database'>

/** Each database setting's line in a command's --help: its words for the commands, where they differ from the service's. */
const storeSettingLines: Readonly<Record<StoreSettingName, string>> = {
  dataDir: commandHelpLine('dataDir'),
  databaseUrl: commandHelpLine('databaseUrl'),
  busyTimeoutMs: commandHelpLine(
    'busyTimeoutMs',
    'milliseconds to wait for a lock another connection (the service) holds',
  ),
  databasePoolSize: commandHelpLine('databasePoolSize', 'PostgreSQL: most connections the command opens'),
  databaseConnectTimeout: commandHelpLine('databaseConnectTimeout', 'PostgreSQL: seconds to wait for a connection'),
  statementTimeoutMs: commandHelpLine(
    'statementTimeoutMs',
    'PostgreSQL: milliseconds one statement may run (0: no limit)',
  ),
  databasePreparedStatements: commandHelpLine(
    'databasePreparedStatements',
    'PostgreSQL: false sends no named prepared statements (PgBouncer)',
  ),
}

/** What a command that opens the database on either backend reads: where it is, and how to connect and wait. */
export const STORE_SETTINGS = [
  'dataDir',
  'databaseUrl',
  'busyTimeoutMs',
  'databasePoolSize',
  'databaseConnectTimeout',
  'statementTimeoutMs',
  'databasePreparedStatements',
] as const satisfies readonly StoreSettingName[]

/** What a command that copies a SQLite file reads: where it is, and how long to wait for the service's lock. */
export const SQLITE_FILE_SETTINGS = [
  'dataDir',
  'databaseUrl',
  'busyTimeoutMs',
] as const satisfies readonly StoreSettingName[]

/** The database settings `N` as a command reads them, with where the database is. */
export type CommandStoreSettings<N extends StoreSettingName> = Pick<StoreSettings, N | 'database'>

/** A setting's flag without its leading dashes, as a command's parser takes it. */
export function settingFlag(name: SettingName): string {
  return settings[name].flag.slice(2)
}

/**
 * The database settings `names` (which hold dataDir and databaseUrl), for a command that has taken
 * their flags (keyed by setting) from its own arguments; no other setting's variable is read.
 */
export function parseStoreSettings<N extends StoreSettingName>(
  names: readonly N[],
  flags: Partial<Record<N, string>>,
  env: Readonly<Record<string, string | undefined>>,
): CommandStoreSettings<N> {
  const given = givenBy(flags, env, names)
  const values: Partial<Record<StoreSettingName, unknown>> = {}
  for (const name of names) if (name !== 'databaseUrl') values[name] = settingValue(name, given)
  const { databaseUrl, database } = databaseOf(given, settingValue('dataDir', given))
  return { ...values, databaseUrl, database } as CommandStoreSettings<N>
}

/** The help lines of the database settings `names`, for the --help of a command that reads them. */
export function storeSettingsHelp(names: readonly StoreSettingName[]): string {
  return names.map((name) => storeSettingLines[name]).join('\n')
}

/** Where the service listens, read as the service reads it: for a command that asks the running service. */
export function parseAddressSettings(
  flags: { readonly host?: string; readonly port?: string },
  env: Readonly<Record<string, string | undefined>>,
): { readonly host: string; readonly port: number } {
  const given = givenBy(flags, env, ['host', 'port'])
  return { host: settingValue('host', given), port: settingValue('port', given) }
}

/** The help lines of the address settings, for the --help of a command that takes them. */
export const addressSettingsHelp = [commandHelpLine('host'), commandHelpLine('port')].join('\n')
