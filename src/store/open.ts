import { Database } from 'bun:sqlite'
import { existsSync } from 'node:fs'
import { SQL } from 'bun'
import type { ResourceRegistry } from '../resources/registry'
import type { IndexBuilt, MigrationApplied } from './migration-state'
import { postgresSchemaVersion } from './postgres/migrate'
import { postgresMigrations, postgresMigrationsWith } from './postgres/migrations'
import type { PostgresOptions } from './postgres/open-database'
import { PREPARED_STATEMENTS_REFUSAL, sharesServerConnections } from './postgres/pooler'
import { PostgresStore } from './postgres/postgres-store'
import type { ReplicaStateListener } from './postgres/replicas/replica'
import type { SharedMigration } from './sql/schema-changes'
import { fileIdentity } from './sqlite/file-guard'
import { schemaVersion } from './sqlite/migrate'
import { sqliteMigrations, sqliteMigrationsWith } from './sqlite/migrations'
import type { Durability } from './sqlite/open-database'
import { SqliteStore } from './sqlite/sqlite-store'
import type { Store } from './store'

/** Where the data lives, as parsed from DATABASE_URL. */
export type DatabaseLocation =
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'postgres'; readonly url: string }

/**
 * Parses `sqlite://relative/path.db`, `sqlite:///absolute/path.db`, `sqlite://:memory:` and
 * `postgres://` / `postgresql://` URLs that name a database. Returns an error sentence for anything else.
 */
export function parseDatabaseUrl(url: string): DatabaseLocation | string {
  if (url.startsWith('sqlite://')) {
    const path = url.slice('sqlite://'.length)
    if (path === '') return 'DATABASE_URL sqlite:// needs a file path, as in sqlite://data/catalogue.db'
    return { kind: 'sqlite', path }
  }
  if (/^postgres(ql)?:\/\//.test(url)) return postgresLocation(url)
  return `DATABASE_URL must start with sqlite:// or postgres:// (got "${url}")`
}

/**
 * A postgres:// URL that names its database, in the path or as `?dbname=` / `?database=` (which
 * Bun's client also reads). Without one the server picks the user's own, often `postgres`, the
 * maintenance database, which the service would then migrate: refused, as sqlite:// without a path is.
 * A URL that does not parse is refused without being shown, since its password may be what broke it.
 */
function postgresLocation(url: string): DatabaseLocation | string {
  if (!URL.canParse(url)) {
    return 'DATABASE_URL is not a valid postgres:// URL: percent-encode the characters @ : / ? # % in the user name and password (@ as %40)'
  }
  const parsed = new URL(url)
  const named = [
    parsed.pathname.replace(/^\//, ''),
    parsed.searchParams.get('dbname'),
    parsed.searchParams.get('database'),
  ]
  if (!named.some((name) => name !== null && name !== '')) {
    return `DATABASE_URL ${shownDatabaseUrl(url)} names no database: add its name after the host, as in postgres://catalogue@127.0.0.1:5432/catalogue (without one the server would pick the user's, often the postgres maintenance database)`
  }
  return { kind: 'postgres', url }
}

/**
 * DATABASE_REPLICA_URL: postgres:// URLs separated by commas, each naming its database (as
 * DATABASE_URL must), none twice; empty: no replicas. Returns an error sentence for anything else,
 * showing no password. Replicas need a PostgreSQL primary: `primary` is DATABASE_URL's location.
 */
export function parseReplicaUrls(text: string, primary: DatabaseLocation): string[] | string {
  const urls = text
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url !== '')
  if (urls.length === 0) return []
  if (primary.kind !== 'postgres')
    return 'DATABASE_REPLICA_URL needs a postgres:// DATABASE_URL: replicas are PostgreSQL standbys'
  const seen = new Set<string>()
  for (const url of urls) {
    const location = /^postgres(ql)?:\/\//.test(url) ? postgresLocation(url) : null
    if (location === null) return 'DATABASE_REPLICA_URL takes postgres:// URLs separated by commas'
    if (typeof location === 'string') return location.replace(/^DATABASE_URL/, 'DATABASE_REPLICA_URL')
    const shown = shownDatabaseUrl(url)
    if (seen.has(shown)) return `DATABASE_REPLICA_URL names ${shown} twice`
    seen.add(shown)
  }
  return urls
}

/** The URL as logs and messages may show it: a password in it replaced by `***`. */
export function shownDatabaseUrl(url: string): string {
  if (!/^postgres(ql)?:\/\//.test(url) || !URL.canParse(url)) return url
  const parsed = new URL(url)
  if (parsed.password === '') return url
  parsed.password = '***'
  return parsed.toString()
}

/**
 * Whether read workers (threads, each with a read-only connection of its own) should answer this
 * database's long reads: a SQLite file's, which hold the event loop while they run. Not a database
 * in memory (one connection's alone), nor PostgreSQL (its reads wait on the network: the pool serves them).
 */
export function servedByReadWorkers(location: DatabaseLocation): boolean {
  return location.kind === 'sqlite' && location.path !== ':memory:'
}

/**
 * Why an operator's command, a process of its own, cannot work on this database (named `url` in
 * the message), or null. A database in memory: the service's is out of the command's reach, and
 * what the command stored would vanish with it. `existing`: a SQLite file that is not there, for a
 * command that only reads (opening would create an empty one).
 */
export function refusedToCommands(
  location: DatabaseLocation,
  url: string,
  options: { readonly existing?: boolean } = {},
): string | null {
  if (location.kind !== 'sqlite') return null
  if (location.path === ':memory:') {
    return "sqlite://:memory: lives inside one process only: a command cannot reach the service's, and what it stored would be lost; give the database file"
  }
  if (options.existing && !existsSync(location.path)) return `there is no database at ${url}`
  return null
}

/**
 * Whether the database holds a catalogue (the schema_migrations table a first migration leaves),
 * without creating or changing anything: a SQLite file that is not there (or holds no catalogue,
 * an empty file), a PostgreSQL database without the catalogue's tables, holds none. A PostgreSQL
 * database that does not exist at all cannot be opened: that rejects, as any connection failure.
 */
export async function holdsCatalogue(
  location: DatabaseLocation,
  options: { readonly connectTimeoutSeconds?: number; readonly preparedStatements?: boolean } = {},
): Promise<boolean> {
  if (location.kind === 'sqlite') {
    if (location.path === ':memory:' || !existsSync(location.path)) return false
    const db = new Database(location.path, { readonly: true })
    try {
      return schemaVersion(db) > 0
    } finally {
      db.close()
    }
  }
  const clientOptions = {
    max: 1,
    connectionTimeout: options.connectTimeoutSeconds ?? 10,
    prepare: options.preparedStatements ?? true,
  }
  const sql = new SQL(location.url, clientOptions)
  try {
    // Refused as the store's opening refuses it (open-database.ts), before the command reads anything.
    if (clientOptions.prepare && (await sharesServerConnections(sql, location.url, clientOptions))) {
      throw new Error(PREPARED_STATEMENTS_REFUSAL)
    }
    return (await postgresSchemaVersion(sql)) > 0
  } finally {
    await sql.close()
  }
}

/** The schema version this build migrates the database to: its last migration's (versions may skip a number). */
export function migrationCount(location: DatabaseLocation): number {
  const migrations = location.kind === 'sqlite' ? sqliteMigrations : postgresMigrations
  return migrations.at(-1)?.version ?? 0
}

export interface StoreOptions {
  /** How long a write waits for a lock another connection holds before it fails as `busy`. */
  readonly busyTimeoutMs?: number
  /** For a read worker: a connection that only reads, the writer having migrated the schema. */
  readonly readOnly?: boolean
  /** PostgreSQL: most connections in the pool. */
  readonly poolSize?: number
  /** PostgreSQL: seconds to wait for a connection to be established. */
  readonly connectTimeoutSeconds?: number
  /** PostgreSQL: milliseconds a statement may run (0: no limit). */
  readonly statementTimeoutMs?: number
  /** PostgreSQL: false sends no named prepared statements (PgBouncer in transaction pooling). */
  readonly preparedStatements?: boolean
  /** PostgreSQL: read replicas (DATABASE_REPLICA_URL), for the service; commands read the primary. */
  readonly replicaUrls?: readonly string[]
  /** PostgreSQL: milliseconds a replica may lag before reads leave it (REPLICA_MAX_LAG). */
  readonly replicaMaxLagMs?: number
  /** PostgreSQL: told each time a replica changes state (the service logs it). */
  readonly onReplicaState?: ReplicaStateListener
  /** PostgreSQL: where the change feed LISTENs (DATABASE_LISTEN_URL); null: polling alone; default the URL. */
  readonly listenUrl?: string | null
  /** PostgreSQL: told when LISTEN cannot work (through a pooler in transaction mode, or failed): the service logs it. */
  readonly onListenWarning?: PostgresOptions['onListenWarning']
  /**
   * This opening is a start of the service (one process, or a --workers supervisor), not a worker
   * or an operator's command: it draws a new generation for version(), so that a database put back
   * from a backup never repeats a tag given before. Commands and workers leave it alone, so that a
   * nightly export or a restarted worker does not void every client's cached tags.
   */
  readonly newGeneration?: boolean
  /** SQLite: when a write is answered (see Durability in sqlite/open-database.ts). */
  readonly durability?: Durability
  /** SQLite: checkpoint the WAL on a thread of its own (SqliteOptions.offloadDiskWaits). */
  readonly offloadDiskWaits?: boolean
  /**
   * PostgreSQL: told when the change feed starts over because the database is not the one its
   * changes were recorded in (a restore, a database made again, a promoted standby:
   * docs/changes.md); the service logs it.
   */
  readonly onFeedRestart?: () => void
  /** Told of each migration this opening applies, once it is committed (catalogue migrate lists them). */
  readonly onMigration?: (migration: MigrationApplied) => void
  /** SQLite: told of each index the opening built because the file lacked it (an import stopped part-way). */
  readonly onIndexBuilt?: (built: IndexBuilt) => void
  /**
   * false: the database is neither created nor migrated nor written to (a dry run's store; SQLite
   * opens it read-only). A schema behind this build's is refused, saying to run `catalogue migrate`.
   */
  readonly migrate?: boolean
  /**
   * The migrations written for both backends (src/store/shared-migrations.ts by default): a test
   * serving a type of its own gives its registry and these together.
   */
  readonly sharedMigrations?: readonly SharedMigration[]
  /**
   * The Store.identity of the store the service opened first: a connection opened later on its
   * behalf (a read worker, a worker process) serves nothing (503) if the database is no longer that
   * one. SQLite: the file, which may have been replaced under the service.
   */
  readonly sameDatabaseAs?: string
}

/**
 * What Store.identity would be for a store opened on `location` now: the SQLite file's device and
 * inode (null when there is no file); undefined where the name is the identity (PostgreSQL, memory).
 */
export function databaseIdentity(location: DatabaseLocation): string | null | undefined {
  return location.kind === 'sqlite' && location.path !== ':memory:' ? fileIdentity(location.path) : undefined
}

export async function openStore(
  location: DatabaseLocation,
  registry: ResourceRegistry,
  options: StoreOptions = {},
): Promise<Store> {
  switch (location.kind) {
    case 'sqlite':
      return SqliteStore.open(location.path, registry, {
        busyTimeoutMs: options.busyTimeoutMs,
        readOnly: options.readOnly,
        migrate: options.migrate,
        onMigration: options.onMigration,
        onIndexBuilt: options.onIndexBuilt,
        newGeneration: options.newGeneration,
        durability: options.durability,
        offloadDiskWaits: options.offloadDiskWaits,
        sameFileAs: options.sameDatabaseAs,
        ...(options.sharedMigrations ? { migrations: sqliteMigrationsWith(options.sharedMigrations) } : {}),
      })
    case 'postgres':
      return PostgresStore.open(location.url, registry, {
        poolSize: options.poolSize,
        connectTimeoutSeconds: options.connectTimeoutSeconds,
        statementTimeoutMs: options.statementTimeoutMs,
        preparedStatements: options.preparedStatements,
        replicaUrls: options.replicaUrls,
        replicaMaxLagMs: options.replicaMaxLagMs,
        onReplicaState: options.onReplicaState,
        listenUrl: options.listenUrl,
        onListenWarning: options.onListenWarning,
        newGeneration: options.newGeneration,
        migrate: options.migrate,
        onMigration: options.onMigration,
        onFeedRestart: options.onFeedRestart,
        ...(options.sharedMigrations ? { migrations: postgresMigrationsWith(options.sharedMigrations) } : {}),
      })
  }
}
