import type { SQL } from 'bun'
import type { ResourceDescription } from '../../model/description'
import type {
  IncludePlan,
  ListPage,
  ListQuery,
  Members,
  RecordGraph,
  SearchOrder,
  StoreFilter,
} from '../../model/query'
import type { Id, StoredRecord } from '../../model/record'
import { asConditional, type RecordInput, type WriteResult } from '../../model/writes'
import type { ResourceRegistry } from '../../resources/registry'
import type { CatalogueRestore, CatalogueSnapshot } from '../catalogue-copy'
import { ChangeSignal } from '../change-signal'
import { StoreUnavailableError } from '../faults'
import { IMPORT_BATCH_SIZE } from '../import-batches'
import { streamList } from '../list-stream'
import type { ReadRouting } from '../read-routing'
import { JoinedFind } from '../sql/joined-find'
import type { Row } from '../sql/table'
import type { BookImport, Store } from '../store'
import { cancelOnAbort } from './cancel-on-abort'
import { type ChangeLogEvents, PostgresChangeLog } from './change-log'
import { PostgresRestore, PostgresSnapshot } from './copy'
import { storeError } from './faults'
import { PostgresBookImport } from './import'
import { DEFAULT_CONNECT_TIMEOUT_SECONDS, openDatabase, type PostgresOptions } from './open-database'
import { listenFailureWarning, listenUrlWarning } from './pooler'
import { PostgresReader, type Queryable } from './reader'
import { replicaName } from './replicas/replica'
import type { ReplicaSet } from './replicas/replicas'
import { PostgresWrites } from './writes'

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
  /** Told after each write this instance commits: the change feed's streams wake at once. */
  private readonly signal = new ChangeSignal()
  readonly changes: PostgresChangeLog

  private constructor(
    private readonly sql: SQL,
    registry: ResourceRegistry,
    private readonly schemaVersion: number,
    /** Null without DATABASE_REPLICA_URL: every read on the pool, at no cost more. */
    private readonly replicas: ReplicaSet | null,
    listenUrl: string | null,
    told: ChangeLogEvents = {},
  ) {
    this.changes = new PostgresChangeLog(sql, this.signal, listenUrl, told)
    this.registry = registry
    if (replicas) this.routing = replicas
    this.reader = new PostgresReader(registry)
    this.writes = new PostgresWrites(sql, this.reader, registry)
  }

  /** Connects, migrates (once across instances starting together) and returns the store (open-database.ts). */
  static async open(url: string, registry: ResourceRegistry, options: PostgresOptions = {}): Promise<PostgresStore> {
    const { sql, schemaVersion, historyMoved, replicas, pooled } = await openDatabase(url, registry, options)
    const listenUrl = options.listenUrl === undefined ? url : options.listenUrl
    const warn = options.onListenWarning
    const fields: Record<string, string> = listenUrl === null ? {} : { listen_url: replicaName(listenUrl) }
    if (listenUrl !== null && warn !== undefined) {
      const warning = await listenUrlWarning(
        listenUrl,
        listenUrl === url ? pooled : null,
        options.connectTimeoutSeconds ?? DEFAULT_CONNECT_TIMEOUT_SECONDS,
      )
      if (warning !== null) warn(warning, fields)
    }
    const store = new PostgresStore(sql, registry, schemaVersion, replicas, listenUrl, {
      restarted: options.onFeedRestart,
      listenFailed: warn && ((error) => warn(listenFailureWarning(error), fields)),
    })
    // A restored or promoted database's feed starts its new history before this instance's first
    // write, which the feed then holds (PostgresChangeLog.adopt); reads adopt it too, for an
    // instance that was running when the database became another.
    try {
      await store.changes.adoptAtStart(historyMoved)
    } catch (error) {
      await store.close()
      throw error
    }
    return store
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
    return this.searchRead(query.filters, (q) => this.reader.list(q, resource.type, query), query.signal)
  }

  page(resource: ResourceDescription, query: ListQuery): Promise<ListPage> {
    return this.searchRead(query.filters, (q) => this.reader.page(q, resource.type, query), query.signal)
  }

  countUpTo(resource: ResourceDescription, filters: readonly StoreFilter[], cap: number): Promise<number> {
    return this.searchRead(filters, (q) => this.reader.countUpTo(q, resource.type, filters, cap))
  }

  matchingIds(resource: ResourceDescription, query: SearchOrder): Promise<Id[]> {
    return this.searchRead(query.filters, (q) => this.reader.matchingIds(q, resource.type, query), query.signal)
  }

  /**
   * A search is read in several statements (postgres/search-reads.ts), which must share a snapshot,
   * and stop when its client goes away (`signal`, see cancel-on-abort.ts).
   */
  private searchRead<T>(
    filters: readonly StoreFilter[],
    work: (q: Queryable) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    if (!filters.some((filter) => filter.kind === 'search')) return this.read(work)
    return this.snapshot(work, signal)
  }

  /** By keyset where the list has no search (its order is then an index's); else its ids once, then by id. */
  stream(resource: ResourceDescription, query: SearchOrder, size: number): AsyncGenerator<StoredRecord[]> {
    const byKeyset = !query.ranked && query.filters.every((filter) => filter.kind !== 'search')
    return streamList(this, resource, query, size, byKeyset)
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

  // Typed by the Store: an expectation's argument, and 'stale' only when one is given (StaleIf).
  readonly update: Store['update'] = (resource, id, input, options) =>
    asConditional(this.committed(this.writes.update(resource, id, input, options?.expect)))

  readonly changeToMany: Store['changeToMany'] = (resource, id, relationship, ids, change, options) =>
    asConditional(
      this.committed(this.writes.changeToMany({ resource, id, relationship, ids, change }, options?.expect)),
    )

  readonly delete: Store['delete'] = (resource, id, options) =>
    asConditional(this.committed(this.writes.delete(resource, id, options?.expect)))

  readonly atomic: Store['atomic'] = (operations, options) =>
    asConditional(this.committed(this.writes.atomic(operations, options)))

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
    await this.changes.close()
    await this.sql.close({ timeout: 5 })
  }

  /** A write, whose client (with replicas) reads the primary until a replica has replayed it. */
  private committed<T>(write: Promise<T>): Promise<T> {
    const done = this.replicas ? this.replicas.afterWrite(write) : write
    return this.signal.listened ? done.finally(() => this.signal.committed()) : done
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

  /**
   * Reads that must agree, in one REPEATABLE READ snapshot (a standby gives them too); with a
   * signal, cancelled when it aborts (cancel-on-abort.ts).
   */
  private async snapshot<T>(work: (q: Queryable) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const run = (sql: SQL) =>
      sql.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', async (tx) => {
        if (!signal) return work(tx)
        const unwatch = await cancelOnAbort(tx, sql, signal)
        try {
          return await work(tx)
        } finally {
          unwatch()
        }
      })
    try {
      return await (this.replicas ? this.replicas.read(this.sql, run) : run(this.sql))
    } catch (error) {
      throw storeError(error)
    }
  }
}
