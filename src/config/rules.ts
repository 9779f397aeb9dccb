import { type DatabaseLocation, parseDatabaseUrl, parseReplicaUrls } from '../store/open'
import { type Given, givenOnCommandLine, settingValue, settingValues } from './parser'
import type { Config } from './service-config'
import { ConfigError } from './setting'
import { defaultDatabaseUrl } from './settings/database'

/*
 * The rules between settings, each written once: what a setting is when unset may follow another,
 * and a setting may be refused for what another says. Everything else is the table's (table.ts).
 */

/** DATABASE_URL, else the database in DATA_DIR; and where it points. */
export function databaseOf(given: Given, dataDir: string): Pick<Config, 'databaseUrl' | 'database'> {
  const databaseUrl = given.has('databaseUrl') ? settingValue('databaseUrl', given) : defaultDatabaseUrl(dataDir)
  const database = parseDatabaseUrl(databaseUrl)
  if (typeof database === 'string') throw new ConfigError(database)
  return { databaseUrl, database }
}

/** Read replicas are PostgreSQL standbys: only a postgres:// DATABASE_URL has them. */
function replicasOf(urls: readonly string[], database: DatabaseLocation): string[] {
  const replicas = parseReplicaUrls(urls.join(','), database)
  if (typeof replicas === 'string') throw new ConfigError(replicas)
  return replicas
}

/**
 * Unset, each of several processes gets one read thread: the processes already share the cores.
 * One process keeps the default of 2: a thread there only takes turns with the main one, and
 * crossing to it costs a long list about a fifth more CPU, but the turns are what keep a single GET
 * answered within milliseconds while lists of 100,000 books are written (bench -- hostile: a p99 of
 * about 10 ms with them, over a second without).
 */
function readWorkersOf(given: Given, readWorkers: number, workers: number): number {
  return workers > 1 && !given.has('readWorkers') ? 1 : readWorkers
}

/**
 * Each identifier is two members ({"type":..,"id":..}): unset, the members limit lets through the
 * bodies the identifier limits allow, each operation with a few members of its own.
 */
function maxBodyMembersOf(
  given: Given,
  values: Pick<Config, 'maxBodyMembers' | 'maxRelationshipIds' | 'maxAtomicIds' | 'maxOperations'>,
): number {
  if (given.has('maxBodyMembers')) return values.maxBodyMembers
  // values.maxBodyMembers is the default here.
  return Math.max(
    values.maxBodyMembers,
    2 * values.maxRelationshipIds + 100,
    2 * values.maxAtomicIds + 20 * values.maxOperations,
  )
}

/** Reads the settings from the command line and the environment; `'help'` when --help was asked. */
export function parseConfig(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): Config | 'help' {
  const given = givenOnCommandLine(argv, env)
  if (given === 'help') return 'help'
  const values = settingValues(given)
  const { databaseUrl, database } = databaseOf(given, values.dataDir)
  return {
    ...values,
    databaseUrl,
    database,
    databaseReplicaUrl: replicasOf(values.databaseReplicaUrl, database),
    readWorkers: readWorkersOf(given, values.readWorkers, values.workers),
    maxBodyMembers: maxBodyMembersOf(given, values),
  }
}
