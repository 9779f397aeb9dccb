import type { CorsOrigins } from '../http/access/cors'
import type { RequestLimits } from '../jsonapi/limits'
import type { LogLevel } from '../logger'
import type { DatabaseLocation } from '../store/open'
import type { Durability } from '../store/sqlite/open-database'

/** The settings; the request limits are settings too, one each. */
export interface Config extends RequestLimits {
  readonly port: number
  readonly host: string
  /** The folder of the service's data: the default SQLite database is catalogue.db in it. */
  readonly dataDir: string
  readonly databaseUrl: string
  /** Where DATABASE_URL points: not a setting of its own, read from it (rules.ts). */
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
  /** PostgreSQL: where the change feed LISTENs: '' (DATABASE_URL), a URL, or 'off' (polling alone). */
  readonly databaseListenUrl: string
  readonly shutdownTimeout: number
  readonly readWorkers: number
  /** Processes that share the port (1: this process alone serves). */
  readonly workers: number
  /** The token file's path; null: no tokens, the service is open. */
  readonly apiTokensFile: string | null
  readonly publicRead: boolean
  /** Requests a minute per token or client address; 0: no limit. */
  readonly rateLimit: number
  /** Addresses and CIDR ranges of the reverse proxies whose forwarding headers are read; none: the TCP peer is the client. */
  readonly trustedProxies: readonly string[]
  /** null: no CORS headers. */
  readonly corsOrigins: CorsOrigins | null
  readonly requireIfMatch: boolean
  /** Whether GET /metrics is served (and the request metrics kept). */
  readonly metrics: boolean
  /** Long answers (whole lists) in flight at once, in all and per client (src/http/streaming/long-answers.ts). */
  readonly maxLongAnswers: number
  readonly maxLongAnswersPerClient: number
  /** The change feed: seconds a change is kept, live streams per process, seconds between heartbeats (docs/changes.md). */
  readonly changesRetention: number
  readonly maxChangeStreams: number
  readonly maxChangeStreamsPerClient: number
  readonly changeStreamHeartbeat: number
}

/** Every setting's name: each is one entry of the table (table.ts). */
export type SettingName = keyof Omit<Config, 'database'>

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
