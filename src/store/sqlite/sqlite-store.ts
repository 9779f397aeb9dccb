import type { Database, SQLQueryBindings, Statement } from 'bun:sqlite'
import type { ResourceDescription } from '../../model/description'
import type { IncludePlan, ListQuery, Members, RecordGraph, SearchOrder, StoreFilter } from '../../model/query'
import type { Id, StoredRecord } from '../../model/record'
import {
  type AtomicOperation,
  type AtomicOptions,
  type AtomicOutcome,
  asConditional,
  type RecordInput,
  type Stale,
  type WriteResult,
} from '../../model/writes'
import type { ResourceRegistry } from '../../resources/registry'
import { AtomicAbort, runAtomic } from '../atomic'
import type { CatalogueRestore, CatalogueSnapshot } from '../catalogue-copy'
import { ChangeSignal } from '../change-signal'
import { StoreUnavailableError } from '../faults'
import { streamList } from '../list-stream'
import type { Row } from '../sql/table'
import type { BookImport, Store } from '../store'
import { SqliteChangeLog } from './change-log'
import { GroupCommit } from './commits/group-commit'
import { type SqliteAccess, SqliteRestore, SqliteSnapshot } from './copy'
import { FileGuard, fileIdentity } from './file-guard'
import { sqliteImport } from './import'
import { readRetrying } from './lock-wait'
import { openDatabase, type SqliteOptions } from './open-database'
import { SqliteReader } from './reader'
import { SqliteVocabulary } from './vocabulary'
import { SqliteWrites } from './writes'

/**
 * A read trusts a check of the file made this recently (file-guard.ts): one answered from the old
 * file this long after it was replaced is one that was under way then. Measured, the check is a
 * fifth of a one-row find (0.35 of 1.75 µs); reused, it costs a clock read.
 */
const READ_CHECK_MS = 1

/** The embedded default store: one SQLite file in WAL mode, foreign keys on, every write one transaction. */
export class SqliteStore implements Store {
  /** One import at a time: a dry run's temporary tables belong to the connection. */
  private importing = false
  /** A snapshot's read transaction is open on the connection: a write would end it. */
  private snapshotOpen = false
  private readonly registry: ResourceRegistry
  /** For version(): the row every connection to the file reads alike (migration 4). */
  private readonly dataVersion: Statement<{ generation: string; changes: number }>
  private readonly writes: SqliteWrites
  private readonly commits: GroupCommit
  /** Told after each write this process commits: the change feed's streams wake at once. */
  private readonly signal = new ChangeSignal()
  readonly changes: SqliteChangeLog
  /** Whether the file is still the one opened, asked before every read and write (file-guard.ts). */
  private readonly guard: FileGuard
  /** The file as opened (`<device>:<inode>`), for the connections opened later for it (Store.identity). */
  readonly identity: string | undefined

  private constructor(
    private readonly db: Database,
    /** Every read, on this connection: those of requests and those that writes make. */
    private readonly local: SqliteReader,
    /** The version of the last migration this build knows: the schema is at it once open. */
    private readonly schemaVersion: number,
    /** How long a read waits for a lock another connection holds, without blocking the event loop. */
    private readonly busyTimeoutMs: number,
    /** The file whose WAL this store empties if it is replaced; null when it only reads, or in memory. */
    writtenPath: string | null,
    identity: string | null,
  ) {
    this.registry = local.registry
    this.identity = identity ?? undefined
    this.dataVersion = db.prepare('SELECT generation, changes FROM data_version')
    this.writes = new SqliteWrites(local, this.registry, new SqliteVocabulary(db))
    this.guard = new FileGuard(db, writtenPath)
    this.commits = new GroupCommit(db, busyTimeoutMs, this.guard)
    this.changes = new SqliteChangeLog({
      db,
      read: (work) => this.read(work),
      write: (work) => this.write(work),
      signal: this.signal,
    })
  }

  /**
   * Opens (creating it and its folder if needed), migrates and checks the database at `path` or
   * `:memory:` (open-database.ts).
   */
  static open(path: string, registry: ResourceRegistry, options: SqliteOptions = {}): SqliteStore {
    const { db, schemaVersion, busyTimeoutMs } = openDatabase(path, registry, options)
    const writable = !options.readOnly && options.migrate !== false
    const inFile = path !== ':memory:'
    const identity = inFile ? fileIdentity(path) : null
    const reader = new SqliteReader(db, registry)
    const store = new SqliteStore(db, reader, schemaVersion, busyTimeoutMs, writable && inFile ? path : null, identity)
    // Replaced between openDatabase's look and here: what was opened may be either file.
    if (options.sameFileAs !== undefined && identity !== options.sameFileAs) store.guard.markReplaced()
    if (writable && options.offloadDiskWaits && path !== ':memory:') {
      store.commits.offloadDiskWaits(path, options.durability)
    }
    return store
  }

  /**
   * The generation of the last start and the count of changes ever made to the data (migration
   * 4's row, kept by triggers in each writing transaction): the same for every connection to the
   * file, whichever process holds it, so a worker or an instance tags the same data alike.
   */
  async version(): Promise<string | null> {
    return this.read(() => {
      const row = this.dataVersion.get()
      return row ? `${row.generation}.${row.changes}` : null
    })
  }

  async list(resource: ResourceDescription, query: ListQuery): Promise<StoredRecord[]> {
    return this.read(() => this.local.list(resource.type, query))
  }

  async page(resource: ResourceDescription, query: ListQuery): Promise<{ records: StoredRecord[]; total: number }> {
    return this.read(() => this.local.page(resource.type, query))
  }

  async countUpTo(resource: ResourceDescription, filters: readonly StoreFilter[], cap: number): Promise<number> {
    return this.read(() => this.local.countUpTo(resource.type, filters, cap))
  }

  async matchingIds(resource: ResourceDescription, query: SearchOrder): Promise<Id[]> {
    return this.read(() => this.local.matchingIds(resource.type, query))
  }

  /**
   * By keyset where an index gives the list's order (no search, each relationship filter one id
   * or only null, every key in one direction); otherwise the list's ids once, then by id.
   */
  stream(resource: ResourceDescription, query: SearchOrder, size: number): AsyncGenerator<StoredRecord[]> {
    const indexed = query.filters.every((filter) =>
      filter.kind === 'search'
        ? false
        : filter.kind === 'attribute' || filter.ids.length + (filter.orNone ? 1 : 0) === 1,
    )
    // An index is read one way: keys in mixed directions would be sorted again for every batch.
    const oneWay = query.sort.every((key) => key.descending === query.sort[0]?.descending)
    return streamList(this, resource, query, size, indexed && oneWay && !query.ranked)
  }

  async findMany(resource: ResourceDescription, ids: readonly Id[]): Promise<StoredRecord[]> {
    return this.read(() => this.local.findMany(resource.type, ids))
  }

  async members(resource: ResourceDescription, relationship: string, owners: readonly Id[]): Promise<Members> {
    return this.read(() => this.local.members(resource.type, relationship, owners))
  }

  async find(resource: ResourceDescription, id: Id): Promise<StoredRecord | null> {
    return this.read(() => this.local.find(resource.type, id))
  }

  async findWithRelated(
    resource: ResourceDescription,
    id: Id,
    plan: IncludePlan,
  ): Promise<{ record: StoredRecord; graph: RecordGraph } | null> {
    return this.read(() => this.local.findWithRelated(resource.type, id, plan))
  }

  async missingReferences(resource: ResourceDescription, toOne: RecordInput['toOne']): Promise<string[]> {
    return this.read(() => this.local.missing(resource, toOne))
  }

  async create(resource: ResourceDescription, input: RecordInput): Promise<WriteResult> {
    return this.write(() => this.writes.create(resource, input))
  }

  // Typed by the Store: an expectation's argument, and 'stale' only when one is given (StaleIf).
  readonly update: Store['update'] = (resource, id, input, options) =>
    asConditional(
      this.write(() => this.writes.refused(resource, id, options?.expect) ?? this.writes.update(resource, id, input)),
    )

  readonly changeToMany: Store['changeToMany'] = (resource, id, relationship, ids, change, options) =>
    asConditional(
      this.write(
        () =>
          this.writes.refusedMembers(resource, id, relationship, options?.expect) ??
          this.writes.changeToMany({ resource, id, relationship, ids, change }),
      ),
    )

  readonly delete: Store['delete'] = (resource, id, options) =>
    asConditional(
      this.write(() => this.writes.refused(resource, id, options?.expect) ?? this.writes.delete(resource, id)),
    )

  readonly atomic: Store['atomic'] = (operations, options) => asConditional(this.atomicNow(operations, options))

  private async atomicNow(
    operations: readonly AtomicOperation[],
    options: AtomicOptions | undefined,
  ): Promise<AtomicOutcome | Stale> {
    try {
      // One queued write: every operation in the same savepoint, undone together if one fails.
      const results = await this.write(() => runAtomic(operations, this.writes, options))
      return results === 'stale' ? results : { ok: true, results }
    } catch (error) {
      if (error instanceof AtomicAbort) return { ok: false, index: error.index, failure: error.failure }
      throw error
    }
  }

  /** Each batch one queued write (sqlite/import.ts); one import at a time on the connection. */
  openImport(options: { readonly dryRun: boolean }): BookImport {
    if (this.importing) throw new Error('an import is already in progress on this connection')
    const started = sqliteImport(
      this.db,
      options.dryRun,
      (work) => this.write(work),
      () => {
        this.importing = false
      },
      () => this.guard.fault(),
    )
    this.importing = true
    return started
  }

  /**
   * The catalogue at one moment, in one read transaction on this connection: WAL gives it a
   * snapshot while other processes write. This store takes no write until it is closed.
   */
  async openSnapshot(): Promise<CatalogueSnapshot> {
    if (this.snapshotOpen || this.importing) throw new Error('the connection is busy with a snapshot or an import')
    this.snapshotOpen = true
    try {
      return await SqliteSnapshot.open(this.access, () => {
        this.snapshotOpen = false
      })
    } catch (error) {
      this.snapshotOpen = false
      throw error
    }
  }

  /** Each batch of a restore is one queued write, as an import's. */
  openRestore(): CatalogueRestore {
    return new SqliteRestore(this.access)
  }

  /** What the snapshot and the restore use of this store. */
  private get access(): SqliteAccess {
    return {
      db: this.db,
      registry: this.registry,
      table: (type) => this.local.table(type),
      read: (work) => this.read(work),
      write: (work) => this.write(work),
    }
  }

  async ready(): Promise<void> {
    const failed = this.commits.failure()
    if (failed) throw failed
    // read() refuses first if the file was replaced or removed.
    await this.read(() => {
      const row = this.statement('SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations').get() as {
        version: number
      }
      if (row.version < this.schemaVersion) {
        throw new StoreUnavailableError(
          'unavailable',
          'MIGRATIONS_PENDING',
          `the schema is at version ${row.version}; this build needs ${this.schemaVersion}`,
        )
      }
    })
  }

  /** Commits what is pending and closes; with every statement finalized SQLite checkpoints the WAL into the file. */
  async close(): Promise<void> {
    await this.commits.close()
    this.guard.close()
    this.dataVersion.finalize()
    this.changes.close()
    this.local.close()
    this.db.close(true)
  }

  /** A write for the next group commit; none while a snapshot is open (its read transaction would end). */
  private write<T>(work: () => T): Promise<T> {
    // A store that is closing says so first, whatever else is open.
    if (this.snapshotOpen && !this.commits.closing) {
      return Promise.reject(new Error('a snapshot is open on this connection: a write would end it'))
    }
    const written = this.commits.write(work)
    return this.signal.listened ? written.finally(() => this.signal.committed()) : written
  }

  /** A read on this connection, tried again on a timer while another process holds a lock (lock-wait.ts). */
  private read<T>(read: () => T): Promise<T> {
    const replaced = this.guard.fault(READ_CHECK_MS)
    if (replaced) return Promise.reject(replaced)
    return readRetrying(this.busyTimeoutMs, read)
  }

  private statement(sql: string): Statement<Row, SQLQueryBindings[]> {
    return this.local.statement(sql)
  }
}
