import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { type CorsOrigins, parseCorsOrigins } from './http/access/cors'
import { DEFAULT_LONG_ANSWERS } from './http/long-answers'
import { DEFAULT_LIMITS, type RequestLimits } from './jsonapi/limits'
import { type LogLevel, logLevels } from './logger'
import { type DatabaseLocation, parseDatabaseUrl, parseReplicaUrls } from './store/open'
import { type Durability, durabilities } from './store/sqlite/open-database'

/** The settings; the request limits are settings too, one each. */
export interface Config extends RequestLimits {
  readonly port: number
  readonly host: string
  /** The folder of the service's data: the default SQLite database is catalogue.db in it. */
  readonly dataDir: string
  readonly databaseUrl: string
  readonly database: DatabaseLocation
  /** PostgreSQL: read replicas' URLs (none: every read on the primary), and seconds one may lag before reads leave it. */
  readonly databaseReplicaUrl: readonly string[]
  readonly replicaMaxLag: number
  readonly logLevel: LogLevel
  readonly maxBodyBytes: number
  readonly maxPageSize: number
  readonly maxOperations: number
  readonly busyTimeoutMs: number
  /** SQLite: when a write is answered (src/store/open.ts). */
  readonly durability: Durability
  /** PostgreSQL: connections in the pool, seconds to connect, milliseconds a statement may run (0: no limit). */
  readonly databasePoolSize: number
  readonly databaseConnectTimeout: number
  readonly statementTimeoutMs: number
  /** PostgreSQL: false sends no named prepared statements (behind PgBouncer in transaction pooling). */
  readonly databasePreparedStatements: boolean
  readonly shutdownTimeout: number
  readonly readWorkers: number
  /** Processes that share the port (1: this process alone serves). */
  readonly workers: number
  /** The token file's path; null: no tokens, the service is open. */
  readonly apiTokensFile: string | null
  readonly publicRead: boolean
  /** Requests a minute per token or client address; 0: no limit. */
  readonly rateLimit: number
  /** null: no CORS headers. */
  readonly corsOrigins: CorsOrigins | null
  readonly requireIfMatch: boolean
  /** Whether GET /metrics is served (and the request metrics kept). */
  readonly metrics: boolean
  /** Long answers (whole lists) in flight at once, in all and per client (src/http/long-answers.ts). */
  readonly maxLongAnswers: number
  readonly maxLongAnswersPerClient: number
}

/** A bad setting: reported as one line, exit code 2. */
export class ConfigError extends Error {}

/** Where the data lives unless DATA_DIR says otherwise, and the database file's name in it. */
const DEFAULT_DATA_DIR = 'data'
const DATABASE_FILE = 'catalogue.db'

/** The SQLite database in the data folder: what DATABASE_URL is when it is not set. */
function defaultDatabaseUrl(dataDir: string): string {
  return `sqlite://${join(dataDir, DATABASE_FILE)}`
}

/** The data folder, from its flag, variable or default; an empty one is refused. */
function dataDirOf(value: string): string {
  if (value.trim() === '') throw new ConfigError('DATA_DIR must not be empty')
  return value
}

interface Setting {
  readonly flag: string
  readonly env: string
  readonly fallback: string
  readonly help: string
}

const settings = {
  port: { flag: '--port', env: 'PORT', fallback: '3000', help: 'TCP port to listen on (0 picks a free one)' },
  host: { flag: '--host', env: 'HOST', fallback: '0.0.0.0', help: 'address to listen on' },
  dataDir: {
    flag: '--data-dir',
    env: 'DATA_DIR',
    fallback: DEFAULT_DATA_DIR,
    help: `folder of the service's data, relative to the working folder or absolute: without DATABASE_URL the database is ${DATABASE_FILE} in it (made when missing)`,
  },
  databaseUrl: {
    flag: '--database-url',
    env: 'DATABASE_URL',
    fallback: defaultDatabaseUrl(DEFAULT_DATA_DIR),
    help: `sqlite://relative/path.db, sqlite:///absolute/path.db, sqlite://:memory: or postgres://user@host:port/db; unset: ${DATABASE_FILE} in DATA_DIR`,
  },
  databaseReplicaUrl: {
    flag: '--database-replica-url',
    env: 'DATABASE_REPLICA_URL',
    fallback: '',
    help: "PostgreSQL: read replicas (standbys of DATABASE_URL), postgres:// URLs separated by commas: a client's reads go to one that has replayed its last write, else to the primary (docs/postgres.md)",
  },
  replicaMaxLag: {
    flag: '--replica-max-lag',
    env: 'REPLICA_MAX_LAG',
    fallback: '5',
    help: 'PostgreSQL: seconds a replica may lag behind the primary before reads leave it, 1 to 3600',
  },
  logLevel: { flag: '--log-level', env: 'LOG_LEVEL', fallback: 'info', help: logLevels.join(', ') },
  maxBodyBytes: {
    flag: '--max-body-bytes',
    env: 'MAX_BODY_BYTES',
    fallback: String(1024 * 1024),
    help: 'largest request body accepted, in bytes (413 above it)',
  },
  maxPageSize: {
    flag: '--max-page-size',
    env: 'MAX_PAGE_SIZE',
    fallback: '100',
    help: 'largest page[size] a list accepts (400 above it)',
  },
  maxOperations: {
    flag: '--max-operations',
    env: 'MAX_OPERATIONS',
    fallback: '100',
    help: 'most operations one atomic request may carry (400 above it)',
  },
  busyTimeoutMs: {
    flag: '--busy-timeout',
    env: 'BUSY_TIMEOUT',
    fallback: '5000',
    help: 'milliseconds a write waits for a lock another connection holds (503 after it)',
  },
  durability: {
    flag: '--durability',
    env: 'DURABILITY',
    fallback: 'full',
    help: 'SQLite: full (a write is answered once on disk: survives power loss) or normal (survives a crash of the service, not of the machine; faster writes)',
  },
  databasePoolSize: {
    flag: '--database-pool-size',
    env: 'DATABASE_POOL_SIZE',
    fallback: '10',
    help: 'PostgreSQL: most connections the service opens',
  },
  databaseConnectTimeout: {
    flag: '--database-connect-timeout',
    env: 'DATABASE_CONNECT_TIMEOUT',
    fallback: '10',
    help: 'PostgreSQL: seconds to wait for a connection (503 after it)',
  },
  statementTimeoutMs: {
    flag: '--statement-timeout',
    env: 'STATEMENT_TIMEOUT',
    fallback: '30000',
    help: 'PostgreSQL: milliseconds one statement may run before it is cancelled (503; 0: no limit)',
  },
  databasePreparedStatements: {
    flag: '--database-prepared-statements',
    env: 'DATABASE_PREPARED_STATEMENTS',
    fallback: 'true',
    help: 'PostgreSQL: false sends no named prepared statements, for PgBouncer in transaction pooling (docs/postgres.md)',
  },
  readWorkers: {
    flag: '--read-workers',
    env: 'READ_WORKERS',
    fallback: '2',
    help: 'threads that answer lists and other reads that grow with the data (0: the main thread)',
  },
  workers: {
    flag: '--workers',
    env: 'WORKERS',
    fallback: '1',
    help: 'processes that serve on the one port, 1 to 64, or auto: one per CPU core (docs/workers.md)',
  },
  requireIfMatch: {
    flag: '--require-if-match',
    env: 'REQUIRE_IF_MATCH',
    fallback: 'false',
    help: 'true: every write but a create (PATCH, PUT, DELETE, POST to a relationship, atomic updates) needs If-Match (428 without it)',
  },
  shutdownTimeout: {
    flag: '--shutdown-timeout',
    env: 'SHUTDOWN_TIMEOUT',
    fallback: '10',
    help: 'seconds a stop waits for requests in flight before closing their connections',
  },
  metrics: {
    flag: '--metrics',
    env: 'METRICS',
    fallback: 'true',
    help: 'serve GET /metrics, the Prometheus metrics: true or false (then 404, and no metric is kept)',
  },
  maxLongAnswers: {
    flag: '--max-long-answers',
    env: 'MAX_LONG_ANSWERS',
    fallback: String(DEFAULT_LONG_ANSWERS.total),
    help: 'long answers (whole lists, records with all their related ids) sent at once (503 with Retry-After above it)',
  },
  maxLongAnswersPerClient: {
    flag: '--max-long-answers-per-client',
    env: 'MAX_LONG_ANSWERS_PER_CLIENT',
    fallback: String(DEFAULT_LONG_ANSWERS.perClient),
    help: 'long answers sent at once to one API token, or one client address without one (503 with Retry-After above it)',
  },
  maxSearchWords: {
    flag: '--max-search-words',
    env: 'MAX_SEARCH_WORDS',
    fallback: String(DEFAULT_LIMITS.maxSearchWords),
    help: 'most words filter[search] may hold (400 above it)',
  },
  maxIncludeDepth: {
    flag: '--max-include-depth',
    env: 'MAX_INCLUDE_DEPTH',
    fallback: String(DEFAULT_LIMITS.maxIncludeDepth),
    help: 'most relationships in one include path (400 above it)',
  },
  maxIncludePaths: {
    flag: '--max-include-paths',
    env: 'MAX_INCLUDE_PATHS',
    fallback: String(DEFAULT_LIMITS.maxIncludePaths),
    help: 'most comma-separated paths in include (400 above it)',
  },
  maxFilterIds: {
    flag: '--max-filter-ids',
    env: 'MAX_FILTER_IDS',
    fallback: String(DEFAULT_LIMITS.maxFilterIds),
    help: 'most ids in one relationship filter (400 above it)',
  },
  maxRelationshipIds: {
    flag: '--max-relationship-ids',
    env: 'MAX_RELATIONSHIP_IDS',
    fallback: String(DEFAULT_LIMITS.maxRelationshipIds),
    help: 'most resource identifiers in one to-many relationship write (400 above it)',
  },
  maxAtomicIds: {
    flag: '--max-atomic-ids',
    env: 'MAX_ATOMIC_IDS',
    fallback: String(DEFAULT_LIMITS.maxAtomicIds),
    help: 'most resource identifiers in all the relationship operations of one atomic request together (400 above it)',
  },
  maxBodyMembers: {
    flag: '--max-body-members',
    env: 'MAX_BODY_MEMBERS',
    fallback: String(DEFAULT_LIMITS.maxBodyMembers),
    help: 'most object members (name/value pairs) in a request body, counted before parsing (413 above it); unset, at least 2 per identifier MAX_RELATIONSHIP_IDS and MAX_ATOMIC_IDS allow',
  },
  maxErrors: {
    flag: '--max-errors',
    env: 'MAX_ERRORS',
    fallback: String(DEFAULT_LIMITS.maxErrors),
    help: 'errors an error document lists in full; one more counts the rest',
  },
  apiTokensFile: {
    flag: '--api-tokens-file',
    env: 'API_TOKENS_FILE',
    fallback: '',
    help: 'file of API tokens, "NAME read|write SHA256" a line (catalogue token create makes them); read again on SIGHUP',
  },
  publicRead: {
    flag: '--public-read',
    env: 'PUBLIC_READ',
    fallback: 'false',
    help: 'true: with API tokens, reads need none (writes still do)',
  },
  rateLimit: {
    flag: '--rate-limit',
    env: 'RATE_LIMIT',
    fallback: '0',
    help: 'requests a minute per API token, or per client address without one (429 above it; 0: no limit)',
  },
  corsOrigins: {
    flag: '--cors-origins',
    env: 'CORS_ORIGINS',
    fallback: '',
    help: 'origins browsers may call the API from, comma-separated, or *',
  },
} satisfies Record<keyof Omit<Config, 'database'>, Setting>

/** Every setting's environment variable, as --help lists them. */
export const settingVariables: readonly string[] = Object.values(settings).map((s) => s.env)

// Column widths of the help table: the longest flag and variable, plus two spaces.
const flagColumn = Math.max(...Object.values(settings).map((s) => `${s.flag} <value>`.length)) + 2
const envColumn = Math.max(...Object.values(settings).map((s) => s.env.length)) + 2

export const helpText = `catalogue: the library catalogue JSON:API service

Usage: catalogue [options]

Each option can also be set by its environment variable; the command line wins.

${Object.values(settings)
  .map(
    (s) =>
      `  ${`${s.flag} <value>`.padEnd(flagColumn)}${s.env.padEnd(envColumn)}${s.help} (default ${s.fallback || 'none'})`,
  )
  .join('\n')}
  ${'--help'.padEnd(flagColumn)}${''.padEnd(envColumn)}print this text and exit
`

function boolean(name: string, value: string): boolean {
  if (value !== 'true' && value !== 'false') throw new ConfigError(`${name} must be true or false (got "${value}")`)
  return value === 'true'
}

function integer(name: string, value: string, min: number, max: number): number {
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max} (got "${value}")`)
  }
  return Number(value)
}

/** Reads the settings from the command line and the environment; `'help'` when --help was asked. */
export function parseConfig(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): Config | 'help' {
  const fromFlags = new Map<string, string>()
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string
    if (arg === '--help' || arg === '-h') return 'help'
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg]
    const setting = Object.values(settings).find((s) => s.flag === flag)
    if (!setting) throw new ConfigError(`unknown option "${arg}" (see --help)`)
    const value = inline ?? argv[++i]
    if (value === undefined) throw new ConfigError(`${flag} needs a value`)
    fromFlags.set(setting.flag, value)
  }
  const read = (s: Setting) => fromFlags.get(s.flag) ?? env[s.env] ?? s.fallback

  const port = integer(settings.port.env, read(settings.port), 0, 65535)
  const host = read(settings.host)
  if (host.trim() === '') throw new ConfigError('HOST must not be empty')
  const dataDir = dataDirOf(read(settings.dataDir))
  const databaseUrl =
    fromFlags.get(settings.databaseUrl.flag) ?? env[settings.databaseUrl.env] ?? defaultDatabaseUrl(dataDir)
  const database = parseDatabaseUrl(databaseUrl)
  if (typeof database === 'string') throw new ConfigError(database)
  const databaseReplicaUrl = parseReplicaUrls(read(settings.databaseReplicaUrl), database)
  if (typeof databaseReplicaUrl === 'string') throw new ConfigError(databaseReplicaUrl)
  const replicaMaxLag = integer(settings.replicaMaxLag.env, read(settings.replicaMaxLag), 1, 3600)
  const logLevel = read(settings.logLevel) as LogLevel
  if (!logLevels.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${logLevels.join(', ')} (got "${logLevel}")`)
  }
  const maxBodyBytes = integer(settings.maxBodyBytes.env, read(settings.maxBodyBytes), 1, 1024 ** 3)
  const maxPageSize = integer(settings.maxPageSize.env, read(settings.maxPageSize), 1, 100_000)
  const maxOperations = integer(settings.maxOperations.env, read(settings.maxOperations), 1, 10_000)
  const busyTimeoutMs = integer(settings.busyTimeoutMs.env, read(settings.busyTimeoutMs), 0, 600_000)
  const durability = read(settings.durability) as Durability
  if (!durabilities.includes(durability)) {
    throw new ConfigError(`DURABILITY must be one of ${durabilities.join(', ')} (got "${durability}")`)
  }
  const databasePoolSize = integer(settings.databasePoolSize.env, read(settings.databasePoolSize), 1, 1000)
  const databaseConnectTimeout = integer(
    settings.databaseConnectTimeout.env,
    read(settings.databaseConnectTimeout),
    1,
    600,
  )
  const statementTimeoutMs = integer(settings.statementTimeoutMs.env, read(settings.statementTimeoutMs), 0, 3_600_000)
  const databasePreparedStatements = boolean(
    settings.databasePreparedStatements.env,
    read(settings.databasePreparedStatements),
  )
  const shutdownTimeout = integer(settings.shutdownTimeout.env, read(settings.shutdownTimeout), 0, 3600)
  const workersValue = read(settings.workers)
  const workers = workersValue === 'auto' ? Math.min(availableParallelism(), 64) : Number(workersValue)
  if (!/^(\d+|auto)$/.test(workersValue) || workers < 1 || workers > 64) {
    throw new ConfigError(`WORKERS must be an integer from 1 to 64 or auto (got "${workersValue}")`)
  }
  const readWorkersSet = fromFlags.has(settings.readWorkers.flag) || env[settings.readWorkers.env] !== undefined
  // Unset, each of several processes gets one read thread: the processes already share the cores.
  // One core alone keeps 2: a thread there only takes turns with the main one, and crossing to it
  // costs a long list about a fifth more CPU, but the turns are what keep a single GET answered
  // within milliseconds while lists of 100,000 books are written (bench -- hostile: a p99 of about
  // 10 ms with them, over a second without).
  const readWorkers =
    workers > 1 && !readWorkersSet ? 1 : integer(settings.readWorkers.env, read(settings.readWorkers), 0, 64)
  const apiTokensFile = read(settings.apiTokensFile).trim() || null
  const publicRead = boolean(settings.publicRead.env, read(settings.publicRead))
  const rateLimit = integer(settings.rateLimit.env, read(settings.rateLimit), 0, 1_000_000)
  const corsOrigins = parseCorsOrigins(read(settings.corsOrigins))
  if (corsOrigins !== null && typeof corsOrigins === 'object' && 'error' in corsOrigins)
    throw new ConfigError(corsOrigins.error)
  const requireIfMatch = boolean(settings.requireIfMatch.env, read(settings.requireIfMatch))
  const metrics = boolean(settings.metrics.env, read(settings.metrics))
  const maxLongAnswers = integer(settings.maxLongAnswers.env, read(settings.maxLongAnswers), 1, 100_000)
  const maxLongAnswersPerClient = integer(
    settings.maxLongAnswersPerClient.env,
    read(settings.maxLongAnswersPerClient),
    1,
    100_000,
  )
  const limit = (key: keyof RequestLimits, max: number) => integer(settings[key].env, read(settings[key]), 1, max)
  const maxRelationshipIds = limit('maxRelationshipIds', 1_000_000)
  const maxAtomicIds = limit('maxAtomicIds', 10_000_000)
  // Each identifier is two members ({"type":..,"id":..}): unset, the members limit lets through
  // the bodies the identifier limits allow, each operation with a few members of its own.
  const membersSet = fromFlags.has(settings.maxBodyMembers.flag) || env[settings.maxBodyMembers.env] !== undefined
  const maxBodyMembers = membersSet
    ? limit('maxBodyMembers', 100_000_000)
    : Math.max(DEFAULT_LIMITS.maxBodyMembers, 2 * maxRelationshipIds + 100, 2 * maxAtomicIds + 20 * maxOperations)
  return {
    port,
    host,
    dataDir,
    databaseUrl,
    database,
    databaseReplicaUrl,
    replicaMaxLag,
    logLevel,
    maxBodyBytes,
    maxPageSize,
    maxOperations,
    busyTimeoutMs,
    durability,
    databasePoolSize,
    databaseConnectTimeout,
    statementTimeoutMs,
    databasePreparedStatements,
    shutdownTimeout,
    readWorkers,
    workers,
    apiTokensFile,
    publicRead,
    rateLimit,
    corsOrigins,
    requireIfMatch,
    metrics,
    maxLongAnswers,
    maxLongAnswersPerClient,
    maxSearchWords: limit('maxSearchWords', 1000),
    maxIncludeDepth: limit('maxIncludeDepth', 100),
    maxIncludePaths: limit('maxIncludePaths', 1000),
    maxFilterIds: limit('maxFilterIds', 100_000),
    maxRelationshipIds,
    maxAtomicIds,
    maxBodyMembers,
    maxErrors: limit('maxErrors', 100_000),
  }
}

/** The settings an operator command shares with the service: its database and how it connects and waits. */
export type StoreSettings = Pick<
  Config,
  | 'dataDir'
  | 'databaseUrl'
  | 'database'
  | 'busyTimeoutMs'
  | 'databasePoolSize'
  | 'databaseConnectTimeout'
  | 'statementTimeoutMs'
  | 'databasePreparedStatements'
>

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

/**
 * Reads the database settings exactly as the service does (flag, then environment variable, then
 * default), for a command that has taken the store settings' flags (keyed by setting) from its own arguments.
 */
export function parseStoreSettings(
  flags: Partial<Record<(typeof storeSettingFlags)[keyof typeof storeSettingFlags], string>>,
  env: Readonly<Record<string, string | undefined>>,
): StoreSettings {
  const read = (key: keyof typeof flags) => flags[key] ?? env[settings[key].env] ?? settings[key].fallback
  const dataDir = dataDirOf(read('dataDir'))
  const databaseUrl = flags.databaseUrl ?? env[settings.databaseUrl.env] ?? defaultDatabaseUrl(dataDir)
  const database = parseDatabaseUrl(databaseUrl)
  if (typeof database === 'string') throw new ConfigError(database)
  return {
    dataDir,
    databaseUrl,
    database,
    busyTimeoutMs: integer(settings.busyTimeoutMs.env, read('busyTimeoutMs'), 0, 600_000),
    databasePoolSize: integer(settings.databasePoolSize.env, read('databasePoolSize'), 1, 1000),
    databaseConnectTimeout: integer(settings.databaseConnectTimeout.env, read('databaseConnectTimeout'), 1, 600),
    statementTimeoutMs: integer(settings.statementTimeoutMs.env, read('statementTimeoutMs'), 0, 3_600_000),
    databasePreparedStatements: boolean(settings.databasePreparedStatements.env, read('databasePreparedStatements')),
  }
}

/**
 * A setting's line in a command's --help, its flag in the column of the command's own options (a
 * flag too long for it on a line of its own), then its variable, help and default.
 */
function commandHelpLine(s: Setting): string {
  const flag = `${s.flag} <value>`
  const rest = `${s.env.padEnd(30)}${s.help} (default ${s.fallback})`
  return flag.length <= 34 ? `  ${flag.padEnd(36)}${rest}` : `  ${flag}\n  ${''.padEnd(36)}${rest}`
}

/** The help lines of the database settings, for the --help of a command that takes them. */
export const storeSettingsHelp = [
  settings.dataDir,
  settings.databaseUrl,
  { ...settings.busyTimeoutMs, help: 'milliseconds to wait for a lock another connection (the service) holds' },
  { ...settings.databasePoolSize, help: 'PostgreSQL: most connections the command opens' },
  { ...settings.databaseConnectTimeout, help: 'PostgreSQL: seconds to wait for a connection' },
  { ...settings.statementTimeoutMs, help: 'PostgreSQL: milliseconds one statement may run (0: no limit)' },
  { ...settings.databasePreparedStatements, help: 'PostgreSQL: false sends no named prepared statements (PgBouncer)' },
]
  .map(commandHelpLine)
  .join('\n')

/** Where the service listens, read as the service reads it: for a command that asks the running service. */
export function parseAddressSettings(
  flags: { readonly host?: string; readonly port?: string },
  env: Readonly<Record<string, string | undefined>>,
): { readonly host: string; readonly port: number } {
  const host = flags.host ?? env[settings.host.env] ?? settings.host.fallback
  if (host.trim() === '') throw new ConfigError('HOST must not be empty')
  const port = integer(settings.port.env, flags.port ?? env[settings.port.env] ?? settings.port.fallback, 0, 65535)
  return { host, port }
}

/** The help lines of the address settings, for the --help of a command that takes them. */
export const addressSettingsHelp = [settings.host, settings.port].map(commandHelpLine).join('\n')
