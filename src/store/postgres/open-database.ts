import { SQL } from 'bun'
import type { ResourceRegistry } from '../../resources/registry'
import { type MigrationApplied, unmigrated } from '../migration-state'
import { startHistory } from './change-history'
import { storeError } from './faults'
import { migratePostgres, type PostgresMigration, postgresSchemaVersion } from './migrate'
import { postgresMigrations } from './migrations'
import { PREPARED_STATEMENTS_REFUSAL, sharesServerConnections } from './pooler'
import type { ReplicaStateListener } from './replicas/replica'
import { ReplicaSet } from './replicas/replicas'
import { postgresSchemaMismatch } from './schema'
import { statementTimeoutMismatch } from './timeout'

export interface PostgresOptions {
  /** Most connections the pool opens. */
  readonly poolSize?: number
  /** Seconds to wait for a connection to be established. */
  readonly connectTimeoutSeconds?: number
  /** Milliseconds one statement may run before the server cancels it (0: no limit). */
  readonly statementTimeoutMs?: number
  /** false: no named prepared statements, which a pooler in transaction mode (PgBouncer) mixes up between clients. */
  readonly preparedStatements?: boolean
  readonly migrations?: readonly PostgresMigration[]
  /** A start of the service: draw a new generation for version() (StoreOptions.newGeneration in open.ts). */
  readonly newGeneration?: boolean
  /** false: refuse a schema behind this build's rather than migrate it (StoreOptions.migrate). */
  readonly migrate?: boolean
  /** Told of each migration applied (StoreOptions.onMigration). */
  readonly onMigration?: (migration: MigrationApplied) => void
  /** Read replicas of the database (DATABASE_REPLICA_URL): the service's reads go to them (postgres/replicas/replicas.ts). */
  readonly replicaUrls?: readonly string[]
  /** Milliseconds a replica may lag before reads leave it (REPLICA_MAX_LAG). */
  readonly replicaMaxLagMs?: number
  /** Told each time a replica changes state (the service logs it). */
  readonly onReplicaState?: ReplicaStateListener
  /**
   * Where the change feed LISTENs for other instances' writes: a direct connection, not through
   * PgBouncer (DATABASE_LISTEN_URL); by default the store's URL; null: polling alone.
   */
  readonly listenUrl?: string | null
  /** Told when the change feed starts over in a new history (PostgresChangeLog.adopt): the service logs it. */
  readonly onFeedRestart?: () => void
  /**
   * Told, for the log, when the change feed's LISTEN cannot work: its URL goes through a pooler in
   * transaction mode (checked at open), or LISTEN failed. Without it, the LISTEN URL is not checked.
   */
  readonly onListenWarning?: (message: string, fields: Readonly<Record<string, string>>) => void
}

/** STATEMENT_TIMEOUT's default (src/config.ts), for a store opened without one. */
const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000
/** DATABASE_CONNECT_TIMEOUT's default, for a store opened without one. */
export const DEFAULT_CONNECT_TIMEOUT_SECONDS = 10

/**
 * How the store sets up Bun's client; test/store/postgres-client.test.ts holds the client so set
 * up to what the store relies on (every result its own query's, no stall, no hang after an error).
 */
export function postgresClientOptions(options: PostgresOptions = {}): SQL.PostgresOrMySQLOptions {
  return {
    max: options.poolSize ?? 10,
    connectionTimeout: options.connectTimeoutSeconds ?? DEFAULT_CONNECT_TIMEOUT_SECONDS,
    // A connection to a server gone away is dropped, and a new one opened on the next query:
    // the store recovers by itself when the database is back.
    idleTimeout: 60,
    connection: { statement_timeout: options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS },
    // Off, each query is parsed anew as the unnamed statement, which lives within its own round trip.
    prepare: options.preparedStatements ?? true,
  }
}

/** The pool, the schema's version (this build's last migration), and the replicas' routing if any. */
export interface OpenedDatabase {
  readonly sql: SQL
  readonly schemaVersion: number
  /** Whether the history stored differs from the database's (startHistory): the store adopts it. */
  readonly historyMoved: boolean
  /** Null without DATABASE_REPLICA_URL. */
  readonly replicas: ReplicaSet | null
  /**
   * Whether the start found a pooler in transaction mode between the service and the server
   * (pooler.ts); null when it did not ask (no prepared statements, no LISTEN to warn of).
   */
  readonly pooled: boolean | null
}

/** Connects, migrates (once across instances starting together) and checks the schema. */
export async function openDatabase(
  url: string,
  registry: ResourceRegistry,
  options: PostgresOptions = {},
): Promise<OpenedDatabase> {
  const migrations = options.migrations ?? postgresMigrations
  // The start runs on a connection of its own without STATEMENT_TIMEOUT, which is for requests:
  // waiting for another instance's migration or building an index may take longer, and even the
  // BEGIN that would turn the timeout off could be cut by a very short one. (Behind PgBouncer,
  // which drops the parameter, the migrations and the schema check turn it off with SET LOCAL.)
  const startingOptions = { ...postgresClientOptions(options), max: 1, connection: { statement_timeout: 0 } }
  const starting = new SQL(url, startingOptions)
  const latest = migrations.at(-1)?.version ?? 0
  let mismatch: string | null
  let pooled: boolean | null = null
  let historyMoved = false
  try {
    if (startingOptions.prepare || options.onListenWarning) {
      pooled = await sharesServerConnections(starting, url, startingOptions)
      // Not a fault of the database either: requests would fail on each other's prepared statements.
      if (pooled && startingOptions.prepare) throw new Error(PREPARED_STATEMENTS_REFUSAL)
    }
    // Not a fault of the database either: the timeout would not hold (behind a pooler).
    const unheld = await statementTimeoutMismatch(starting, options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS)
    if (unheld !== null) throw new Error(unheld)
    if (options.migrate === false) {
      const current = await postgresSchemaVersion(starting)
      mismatch = current === latest ? null : unmigrated(current, latest)
    } else {
      await migratePostgres(starting, migrations, options.onMigration)
      mismatch = null
    }
    mismatch ??= await postgresSchemaMismatch(starting, registry)
    // A new generation at each start of the service (migration 4): tags given before a restore
    // never match again. The row is made again if someone deleted it.
    if (mismatch === null && options.newGeneration) {
      await starting`INSERT INTO data_generation (only_row, generation) VALUES (true, gen_random_uuid()::text)
        ON CONFLICT (only_row) DO UPDATE SET generation = EXCLUDED.generation`
    }
    // The feed's start (change-history.ts) here too, not on the pool, whose BEGIN a very short
    // STATEMENT_TIMEOUT could cut ("canceling statement due to user request", seen in CI at 1 ms).
    if (mismatch === null) historyMoved = (await startHistory(starting)).moved
  } catch (error) {
    throw storeError(error)
  } finally {
    await starting.close()
  }
  // Not a fault of the database (no 503, no retry): this build and its schema disagree.
  if (mismatch !== null) throw new Error(mismatch)
  const clientOptions = postgresClientOptions(options)
  const sql = new SQL(url, clientOptions)
  const urls = options.replicaUrls ?? []
  const replicas =
    urls.length === 0
      ? null
      : await ReplicaSet.start(url, {
          urls,
          maxLagMs: options.replicaMaxLagMs,
          clientOptions,
          onStateChange: options.onReplicaState,
        }).catch(async (error) => {
          await sql.close()
          throw error
        })
  return { sql, schemaVersion: latest, historyMoved, replicas, pooled }
}
