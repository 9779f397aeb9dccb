import { SQL } from 'bun'
import type { ResourceDescription } from '../../model/description'
import type { ResourceRegistry } from '../../resources/registry'
import type { CatalogueRestore, CatalogueSnapshot } from '../catalogue-copy'
import { StoreUnavailableError } from '../faults'
import { IMPORT_BATCH_SIZE } from '../import-batches'
import { unmigrated } from '../migration-state'
import type { ReadRouting } from '../read-routing'
import { JoinedFind } from '../sql/joined-find'
import type { Row } from '../sql/table'
import type {
  AtomicOperation,
  AtomicOutcome,
  BookImport,
  DeleteResult,
  Expectation,
  Id,
  IncludePlan,
  ListPage,
  ListQuery,
  Members,
  RecordGraph,
  RecordInput,
  SearchOrder,
  Stale,
  Store,
  StoredRecord,
  StoreFilter,
  ToManyChange,
  ToManyResult,
  WriteResult,
} from '../store'
import { sortValuesOf } from '../store'
import { PostgresRestore, PostgresSnapshot } from './copy'
import { storeError } from './faults'
import { PostgresBookImport } from './import'
import { migratePostgres, type PostgresMigration, postgresSchemaVersion } from './migrate'
import { postgresMigrations } from './migrations'
import { PostgresReader, type Queryable } from './reader'
import type { ReplicaStateListener } from './replicas/replica'
import { ReplicaSet } from './replicas/replicas'
import { postgresSchemaMismatch } from './schema'
import { statementTimeoutMismatch } from './timeout'
import { PostgresWrites } from './writes'

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
  readonly onMigration?: (migration: PostgresMigration) => void
  /** Read replicas of the database (DATABASE_REPLICA_URL): the service's reads go to them (postgres/replicas/replicas.ts). */
  readonly replicaUrls?: readonly string[]
  /** Milliseconds a replica may lag before reads leave it (REPLICA_MAX_LAG). */
  readonly replicaMaxLagMs?: number
  /** Told each time a replica changes state (the service logs it). */
  readonly onReplicaState?: ReplicaStateListener
}

/** STATEMENT_TIMEOUT's default (src/config.ts), for a store opened without one. */
const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000

/**
 * How the store sets up Bun's client; test/store/postgres-client.test.ts holds the client so set
 * up to what the store relies on (every result its own query's, no stall, no hang after an error).
 */
export function postgresClientOptions(options: PostgresOptions = {}): SQL.PostgresOrMySQLOptions {
  return {
    max: options.poolSize ?? 10,
    connectionTimeout: options.connectTimeoutSeconds ?? 10,
    // A connection to a server gone away is dropped, and a new one opened on the next query:
    // the store recovers by itself when the database is back.
    idleTimeout: 60,
    connection: { statement_timeout: options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS },
    // Off, each query is parsed anew as the unnamed statement, which lives within its own round trip.
    prepare: options.preparedStatements ?? true,
  }
}

/**
 * The PostgreSQL store: a pool of connections (Bun's SQL client), every write one transaction
 * (READ COMMITTED, with the rows a write depends on locked), reads straight on the pool: a page
 * and its total in one statement, a record and its includes in one REPEATABLE READ transaction.
 */
export class PostgresStore implements Store {
  private readonly reader: PostgresReader
  private readonly writes: PostgresWrites
  private readonly registry: ResourceRegistry
  private readonly joinedFinds = new WeakMap<IncludePlan, { resource: ResourceDescription; find: JoinedFind | null }>()
  readonly routing?: ReadRouting

  private constructor(
    private readonly sql: SQL,
    registry: ResourceRegistry,
    private readonly schemaVersion: number,
    /** Null without DATABASE_REPLICA_URL: every read on the pool, at no cost more. */
    private readonly replicas: ReplicaSet | null,
  ) {
    this.registry = registry
    if (replicas) this.routing = replicas
    this.reader = new PostgresReader(registry)
    this.writes = new PostgresWrites(sql, this.reader, registry)
  }

  /** Connects, migrates (once across instances starting together) and returns the store. */
  static async open(url: string, registry: ResourceRegistry, options: PostgresOptions = {}): Promise<PostgresStore> {
    const migrations = options.migrations ?? postgresMigrations
    // The start runs on a connection of its own without STATEMENT_TIMEOUT, which is for requests:
    // waiting for another instance's migration or building an index may take longer, and even the
    // BEGIN that would turn the timeout off could be cut by a very short one. (Behind PgBouncer,
    // which drops the parameter, the migrations and the schema check turn it off with SET LOCAL.)
    const starting = new SQL(url, { ...postgresClientOptions(options), max: 1, connection: { statement_timeout: 0 } })
    const latest = migrations.at(-1)?.version ?? 0
    let mismatch: string | null
    try {
      // Not a fault of the database either: the timeout would not hold (behind a pooler).
      const unheld = await statementTimeoutMismatch(
        starting,
        options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS,
      )
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
    return new PostgresStore(sql, registry, latest, replicas)
  }

  /**
   * The database's generation (drawn anew at each instance's start) and the commits that changed
   * its data (data_version, counted by a trigger in the committing transaction itself): it changes
   * exactly when the data does, whoever wrote, and is the same whichever instance reads it. The
   * database's oid goes first: a database dropped and created again under the same name (a restore
   * while the service runs, whose connections then reach the new one) has another, so its tags
   * never repeat one given before, even with the generation and counts of an old dump.
   */
  async version(): Promise<string | null> {
    const [row] = await this.read((q) =>
      this.reader.rows(
        q,
        `SELECT (SELECT oid::text FROM pg_database WHERE datname = current_database()) || '-' ||
            (SELECT generation FROM data_generation) || '.' || COALESCE(SUM(commits), 0)::text AS version
           FROM data_version`,
      ),
    )
    // No generation row (deleted by hand): no tag at all, rather than one that never changes.
    return row?.version == null ? null : String(row.version)
  }

  list(resource: ResourceDescription, query: ListQuery): Promise<StoredRecord[]> {
    return this.searchRead(query.filters, (q) => this.reader.list(q, resource.type, query))
  }

  page(resource: ResourceDescription, query: ListQuery): Promise<ListPage> {
    return this.searchRead(query.filters, (q) => this.reader.page(q, resource.type, query))
  }

  countUpTo(resource: ResourceDescription, filters: readonly StoreFilter[], cap: number): Promise<number> {
    return this.searchRead(filters, (q) => this.reader.countUpTo(q, resource.type, filters, cap))
  }

  matchingIds(resource: ResourceDescription, query: SearchOrder): Promise<Id[]> {
    return this.searchRead(query.filters, (q) => this.reader.matchingIds(q, resource.type, query))
  }

  /** A search is read in several statements (postgres/search-reads.ts), which must share a snapshot. */
  private searchRead<T>(filters: readonly StoreFilter[], work: (q: Queryable) => Promise<T>): Promise<T> {
    return filters.some((filter) => filter.kind === 'search') ? this.snapshot(work) : this.read(work)
  }

  /** By keyset where the list has no search (its order is then an index's); else its ids once, then by id. */
  async *stream(resource: ResourceDescription, query: SearchOrder, size: number): AsyncGenerator<StoredRecord[]> {
    if (!query.ranked && query.filters.every((filter) => filter.kind !== 'search')) {
      let after: (string | number)[] | undefined
      for (;;) {
        const batch = await this.list(resource, { ...query, limit: size, after })
        if (batch.length > 0) yield batch
        const last = batch.at(-1)
        if (batch.length < size || !last) return
        after = sortValuesOf(query.sort, last)
      }
    }
    const ids = await this.matchingIds(resource, query)
    for (let start = 0; start < ids.length; start += size) {
      yield await this.findMany(resource, ids.slice(start, start + size))
    }
  }

  find(resource: ResourceDescription, id: Id): Promise<StoredRecord | null> {
    return this.read((q) => this.reader.find(q, resource.type, id))
  }

  findMany(resource: ResourceDescription, ids: readonly Id[]): Promise<StoredRecord[]> {
    return this.read((q) => this.reader.findMany(q, resource.type, ids))
  }

  members(resource: ResourceDescription, relationship: string, owners: readonly Id[]): Promise<Members> {
    return this.read((q) => this.reader.members(q, resource.type, relationship, owners))
  }

  findWithRelated(
    resource: ResourceDescription,
    id: Id,
    plan: IncludePlan,
  ): Promise<{ record: StoredRecord; graph: RecordGraph } | null> {
    // One statement when the plan follows only to-one relationships: one snapshot, no transaction.
    const joined = this.joinedFind(resource, plan)
    if (joined) return this.read(async (q) => joined.answer(((await q.unsafe(joined.sql, [id])) as Row[])[0], id))
    return this.snapshot((q) => this.reader.findWithRelated(q, resource.type, id, plan))
  }

  /** The joined statement of a plan, made once per plan object (a resource's default plan is reused). */
  private joinedFind(resource: ResourceDescription, plan: IncludePlan): JoinedFind | null {
    const made = this.joinedFinds.get(plan)
    if (made !== undefined && made.resource === resource) return made.find
    const find = JoinedFind.of(this.registry, (type) => this.reader.table(type), resource, plan, '$1')
    this.joinedFinds.set(plan, { resource, find })
    return find
  }

  missingReferences(resource: ResourceDescription, toOne: RecordInput['toOne']): Promise<string[]> {
    return this.read((q) => this.reader.missing(q, resource, toOne))
  }

  create(resource: ResourceDescription, input: RecordInput): Promise<WriteResult> {
    return this.committed(this.writes.create(resource, input))
  }

  update(resource: ResourceDescription, id: Id, input: RecordInput): Promise<WriteResult | null>
  update(
    resource: ResourceDescription,
    id: Id,
    input: RecordInput,
    expect: Expectation<StoredRecord> | undefined,
  ): Promise<WriteResult | null | Stale>
  update(
    resource: ResourceDescription,
    id: Id,
    input: RecordInput,
    expect?: Expectation<StoredRecord>,
  ): Promise<WriteResult | null | Stale> {
    return this.committed(this.writes.update(resource, id, input, expect))
  }

  changeToMany(
    resource: ResourceDescription,
    id: Id,
    relationship: string,
    ids: readonly Id[],
    change: ToManyChange,
  ): Promise<ToManyResult>
  changeToMany(
    resource: ResourceDescription,
    id: Id,
    relationship: string,
    ids: readonly Id[],
    change: ToManyChange,
    expect: Expectation<readonly Id[]> | undefined,
  ): Promise<ToManyResult | Stale>
  changeToMany(
    resource: ResourceDescription,
    id: Id,
    relationship: string,
    ids: readonly Id[],
    change: ToManyChange,
    expect?: Expectation<readonly Id[]>,
  ): Promise<ToManyResult | Stale> {
    return this.committed(this.writes.changeToMany(resource, id, relationship, ids, change, expect))
  }

  delete(resource: ResourceDescription, id: Id): Promise<DeleteResult>
  delete(
    resource: ResourceDescription,
    id: Id,
    expect: Expectation<StoredRecord> | undefined,
  ): Promise<DeleteResult | Stale>
  delete(resource: ResourceDescription, id: Id, expect?: Expectation<StoredRecord>): Promise<DeleteResult | Stale> {
    return this.committed(this.writes.delete(resource, id, expect))
  }

  atomic(operations: readonly AtomicOperation[]): Promise<AtomicOutcome> {
    return this.committed(this.writes.atomic(operations))
  }

  /**
   * Each batch one transaction on a connection held for the import (a dry run's temporary tables
   * live on it), committed before `add` resolves.
   */
  openImport(options: { readonly dryRun: boolean }): BookImport {
    const importer = this.sql.reserve().then((connection) => new PostgresBookImport(connection, options.dryRun))
    // Reported by the first add(); not an unhandled rejection meanwhile.
    importer.catch(() => {})
    return {
      // A commit writes WAL records, not the pages a batch changed (as SQLite's does): larger
      // batches measured no faster, and took more memory (import-batches.ts).
      batchSize: IMPORT_BATCH_SIZE,
      add: async (batch) => {
        try {
          return await (await importer).add(batch)
        } catch (error) {
          throw storeError(error)
        }
      },
      close: async () => (await importer).close(),
    }
  }

  /** The catalogue at one moment: a REPEATABLE READ transaction on a connection of its own. */
  openSnapshot(): Promise<CatalogueSnapshot> {
    return PostgresSnapshot.open(this.sql, this.reader)
  }

  /** Each batch of a restore one transaction on the pool. */
  openRestore(): CatalogueRestore {
    return new PostgresRestore(this.sql, this.reader, this.registry)
  }

  /**
   * One small query: the schema's version. A database dropped and created again under the service
   * is served as soon as it holds the catalogue (its tags differ: see version()), so this asks no
   * more than that.
   */
  async ready(): Promise<void> {
    const [row] = await this.read((q) =>
      this.reader.rows(q, 'SELECT COALESCE(MAX(version), 0)::int AS version FROM schema_migrations'),
    )
    const version = Number(row?.version)
    if (version < this.schemaVersion) {
      throw new StoreUnavailableError(
        'unavailable',
        'MIGRATIONS_PENDING',
        `the schema is at version ${version}; this build needs ${this.schemaVersion}`,
      )
    }
  }

  async close(): Promise<void> {
    await this.replicas?.close()
    await this.sql.close({ timeout: 5 })
  }

  /** A write, whose client (with replicas) reads the primary until a replica has replayed it. */
  private committed<T>(write: Promise<T>): Promise<T> {
    return this.replicas ? this.replicas.afterWrite(write) : write
  }

  /**
   * A read on the pool, or with replicas on the node of the request it is made for; a fault of the
   * database leaves as StoreUnavailableError.
   */
  private async read<T>(work: (q: Queryable) => Promise<T>): Promise<T> {
    try {
      return await (this.replicas ? this.replicas.read(this.sql, work) : work(this.sql))
    } catch (error) {
      throw storeError(error)
    }
  }

  /** Reads that must agree, in one REPEATABLE READ snapshot (a standby gives them too). */
  private async snapshot<T>(work: (q: Queryable) => Promise<T>): Promise<T> {
    const run = (sql: SQL) => sql.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', (tx) => work(tx))
    try {
      return await (this.replicas ? this.replicas.read(this.sql, run) : run(this.sql))
    } catch (error) {
      throw storeError(error)
    }
  }
}
