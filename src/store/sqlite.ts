import { constants, Database, type SQLQueryBindings, type Statement } from 'bun:sqlite'
import { mkdirSync, realpathSync } from 'node:fs'
import { dirname } from 'node:path'
import type { ResourceDescription } from '../resources/description'
import type { ResourceRegistry } from '../resources/registry'
import { AtomicAbort, runAtomic, type SyncWriter } from './atomic'
import type { CatalogueRestore, CatalogueSnapshot } from './catalogue-copy'
import { StoreUnavailableError } from './faults'
import { BatchSizer } from './import-batches'
import { without } from './machinery-switches'
import { unmigrated } from './migration-state'
import type { Durability } from './open'
import { WalCheckpointer } from './sqlite-checkpointer'
import { type SqliteAccess, SqliteRestore, SqliteSnapshot } from './sqlite-copy'
import { sqliteFault, storeError } from './sqlite-faults'
import { SqliteBookImport } from './sqlite-import'
import { migrate, schemaVersion, useWal } from './sqlite-migrate'
import { type Migration, sqliteMigrations } from './sqlite-migrations'
import { SqliteReader } from './sqlite-reader'
import { checkSchema } from './sqlite-schema'
import { quote, type Row } from './sqlite-table'
import { WalFlusher } from './sqlite-wal-flush'
import type {
  AtomicOperation,
  AtomicOutcome,
  BookImport,
  DeleteResult,
  Expectation,
  Id,
  ImportCounts,
  IncludePlan,
  ListQuery,
  Members,
  NamedBook,
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
} from './store'
import { sortValuesOf } from './store'

export interface SqliteOptions {
  readonly busyTimeoutMs?: number
  readonly migrations?: readonly Migration[]
  /**
   * A connection that only reads (a read worker's): it neither migrates nor writes, and finds
   * the schema as the writer left it.
   */
  readonly readOnly?: boolean
  /** false: open read-only, and refuse a schema behind this build's rather than migrate it (StoreOptions.migrate). */
  readonly migrate?: boolean
  /** Told of each migration applied (StoreOptions.onMigration). */
  readonly onMigration?: (migration: Migration) => void
  /** A start of the service: draw a new generation for version() (StoreOptions.newGeneration in open.ts). */
  readonly newGeneration?: boolean
  /** `full` by default (see Durability in open.ts). */
  readonly durability?: Durability
  /**
   * Wait for the disk off this thread: the WAL is checkpointed on a thread of its own rather than
   * in the commits of this connection (sqlite-checkpointer.ts), and at `full` durability a commit
   * is flushed by the runtime's thread pool before its writes are answered (sqlite-wal-flush.ts).
   * What the service does; off by default, for commands and tests that open a store for a moment.
   */
  readonly offloadDiskWaits?: boolean
}

const DEFAULT_BUSY_TIMEOUT_MS = 5000
const GROUP_COMMIT = !without('group-commit')

function latestVersion(migrations: readonly Migration[] = sqliteMigrations): number {
  return migrations.at(-1)?.version ?? 0
}

interface PendingWrite {
  /** When it gives up waiting for the write lock (Date.now() milliseconds). */
  readonly deadline: number
  readonly work: () => unknown
  readonly resolve: (value: unknown) => void
  readonly reject: (error: unknown) => void
}

/**
 * A short wait before trying for a lock again: up to 0.25 ms, doubling to 2 ms, with jitter so that
 * processes waiting for the same lock do not all try at once. Short, since another process holds
 * the lock for one group commit (a millisecond or two); a longer ceiling (20 ms) left the lock idle
 * between commits and made two workers' POSTs slower than one's. A failed try costs microseconds.
 */
function lockBackoff(attempt: number): Promise<void> {
  const ceiling = Math.min(2, 0.25 * 2 ** attempt)
  return Bun.sleep(Math.random() * ceiling)
}

/**
 * What a write fails with once a flush of the WAL has failed (503): every write after it too, until
 * the service is started again (see WalFlusher.failed), and /ready says so.
 */
function flushFailed(error: Error, what: string): StoreUnavailableError {
  return new StoreUnavailableError(
    'io',
    'WAL_FLUSH_FAILED',
    `${what} (${error.message}); writes are refused until the service is started again`,
    { cause: error },
  )
}

/** What a write that waited out BUSY_TIMEOUT for the write lock fails with (503, Retry-After: 1). */
function lockedOut(busyTimeoutMs: number): StoreUnavailableError {
  return new StoreUnavailableError(
    'busy',
    'SQLITE_BUSY',
    `database is locked: another connection held the write lock for ${busyTimeoutMs} ms`,
  )
}

/** The embedded default store: one SQLite file in WAL mode, foreign keys on, every write one transaction. */
export class SqliteStore implements Store {
  // Prepared once: bun:sqlite's db.transaction() builds a new wrapper on every call, which costs
  // more than the reads of a single GET.
  private readonly beginWrite: Statement
  private readonly commit: Statement
  private readonly rollback: Statement
  private readonly savepoint: Record<'open' | 'release' | 'undo', Statement>
  /** Writes waiting for the next group commit. */
  private pending: PendingWrite[] = []
  private commitScheduled = false
  /** The group commit under way, waiting for the write lock perhaps; close() waits for it. */
  private committing: Promise<void> | undefined
  /** One import at a time: a dry run's temporary tables belong to the connection. */
  private importing = false
  /** close() has begun: no write is taken any more. */
  private closing = false
  /** A snapshot's read transaction is open on the connection: a write would end it. */
  private snapshotOpen = false
  private readonly registry: ResourceRegistry
  /** For version(): the row every connection to the file reads alike (migration 4). */
  private readonly dataVersion: Statement<{ generation: string; changes: number }>
  /** Checkpoints the WAL off this thread, when the store was opened with offloadDiskWaits. */
  private checkpointer: WalCheckpointer | undefined
  /** At `full` with offloadDiskWaits: flushes each commit off this thread before it is answered. */
  private flusher: WalFlusher | undefined

  private constructor(
    private readonly db: Database,
    /** Every read, on this connection: those of requests and those that writes make. */
    private readonly local: SqliteReader,
    /** The version of the last migration this build knows: the schema is at it once open. */
    private readonly schemaVersion: number,
    /** How long a write or a read waits for a lock another connection holds, without blocking the event loop. */
    private readonly busyTimeoutMs: number,
  ) {
    this.registry = local.registry
    this.dataVersion = db.prepare('SELECT generation, changes FROM data_version')
    // A write takes the write lock up front so that its reads and its writes see one state.
    this.beginWrite = db.prepare('BEGIN IMMEDIATE')
    this.commit = db.prepare('COMMIT')
    this.rollback = db.prepare('ROLLBACK')
    this.savepoint = {
      open: db.prepare('SAVEPOINT one_write'),
      release: db.prepare('RELEASE one_write'),
      undo: db.prepare('ROLLBACK TO one_write'),
    }
  }

  /**
   * Opens (creating it and its folder if needed), migrates and checks the database at `path` or
   * `:memory:`.
   */
  static open(path: string, registry: ResourceRegistry, options: SqliteOptions = {}): SqliteStore {
    const { busyTimeoutMs = DEFAULT_BUSY_TIMEOUT_MS } = options
    if (options.readOnly || options.migrate === false) {
      let db: Database
      try {
        db = new Database(path, { readonly: true, strict: true })
        db.run(`PRAGMA busy_timeout = ${Math.trunc(busyTimeoutMs)}`)
      } catch (error) {
        // A file gone or unreadable while the service runs: a fault, as for any read.
        throw storeError(error)
      }
      try {
        const latest = latestVersion(options.migrations)
        const current = options.migrate === false ? schemaVersion(db) : latest
        if (current !== latest) throw new Error(unmigrated(current, latest))
        checkSchema(db, registry)
      } catch (error) {
        db.close()
        throw storeError(error)
      }
      return new SqliteStore(db, new SqliteReader(db, registry), latestVersion(options.migrations), busyTimeoutMs)
    }
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
    const db = new Database(path, { create: true, strict: true })
    // First: every later statement then waits for another process starting on this file.
    db.run(`PRAGMA busy_timeout = ${Math.trunc(busyTimeoutMs)}`)
    useWal(db)
    // FULL: a commit reaches the disk before the 2xx goes out, so it survives a crash or power loss.
    // NORMAL (in WAL): the commit is in the WAL file, which survives the process, not the machine.
    // With offloadDiskWaits, `full` commits as NORMAL does and flushes the WAL itself (flushOffThread).
    db.run(`PRAGMA synchronous = ${options.durability === 'normal' ? 'NORMAL' : 'FULL'}`)
    db.run('PRAGMA foreign_keys = ON')
    try {
      migrate(db, options.migrations ?? sqliteMigrations, options.onMigration)
      checkSchema(db, registry)
      // A new generation at each start of the service: tags given before it (for a file since put
      // back from a backup, say, whose count of changes went back) never match again. The row is
      // made again if someone deleted it (its count then starts over, under the new generation).
      if (options.newGeneration) {
        db.run(`INSERT INTO data_version (id, generation, changes) VALUES (1, lower(hex(randomblob(8))), 0)
          ON CONFLICT (id) DO UPDATE SET generation = excluded.generation`)
      }
    } catch (error) {
      db.close()
      throw error
    }
    // From here on SQLite never waits for a lock itself: its busy handler sleeps in the thread, which
    // would stop every request of this process while another process writes. The store retries on
    // timers instead (see commitPending and read); only the start above may block.
    db.run('PRAGMA busy_timeout = 0')
    const store = new SqliteStore(db, new SqliteReader(db, registry), latestVersion(options.migrations), busyTimeoutMs)
    if (options.offloadDiskWaits && path !== ':memory:') {
      if (!without('checkpointer')) store.checkpointer = new WalCheckpointer(db, path)
      if (options.durability !== 'normal' && !without('wal-flush')) store.flushOffThread(path)
    }
    return store
  }

  /**
   * At `full`: commits as NORMAL does, and answers them once the WAL is flushed off this thread
   * (sqlite-wal-flush.ts). The WAL is found as SQLite finds it, next to the file a link points to;
   * if it cannot be opened, SQLite's own flush inside COMMIT stays.
   */
  private flushOffThread(path: string): void {
    try {
      this.flusher = new WalFlusher(`${realpathSync(path)}-wal`)
    } catch {
      return
    }
    this.db.run('PRAGMA synchronous = NORMAL')
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
   * or only null, every key in one direction): then each batch starts where the last one ended. Otherwise the ordered ids of
   * the whole list are read once (ids only) and the records fetched by id a batch at a time.
   */
  async *stream(resource: ResourceDescription, query: SearchOrder, size: number): AsyncGenerator<StoredRecord[]> {
    const indexed = query.filters.every((filter) =>
      filter.kind === 'search'
        ? false
        : filter.kind === 'attribute' || filter.ids.length + (filter.orNone ? 1 : 0) === 1,
    )
    // An index is read one way: keys in mixed directions would be sorted again for every batch.
    const oneWay = query.sort.every((key) => key.descending === query.sort[0]?.descending)
    if (indexed && oneWay && !query.ranked) {
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
    return this.write(() => this.createNow(resource, input))
  }

  update(resource: ResourceDescription, id: Id, input: RecordInput): Promise<WriteResult | null>
  update(
    resource: ResourceDescription,
    id: Id,
    input: RecordInput,
    expect: Expectation<StoredRecord> | undefined,
  ): Promise<WriteResult | null | Stale>
  async update(
    resource: ResourceDescription,
    id: Id,
    input: RecordInput,
    expect?: Expectation<StoredRecord>,
  ): Promise<WriteResult | null | Stale> {
    return this.write(() => this.refused(resource, id, expect) ?? this.updateNow(resource, id, input))
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
  async changeToMany(
    resource: ResourceDescription,
    id: Id,
    relationship: string,
    ids: readonly Id[],
    change: ToManyChange,
    expect?: Expectation<readonly Id[]>,
  ): Promise<ToManyResult | Stale> {
    return this.write(() => {
      if (expect && this.local.exists(resource.type, id)) {
        const members = this.local.members(resource.type, relationship, [id]).get(id) ?? []
        if (!expect(members)) return 'stale'
      }
      return this.changeToManyNow(resource, id, relationship, ids, change)
    })
  }

  delete(resource: ResourceDescription, id: Id): Promise<DeleteResult>
  delete(
    resource: ResourceDescription,
    id: Id,
    expect: Expectation<StoredRecord> | undefined,
  ): Promise<DeleteResult | Stale>
  async delete(
    resource: ResourceDescription,
    id: Id,
    expect?: Expectation<StoredRecord>,
  ): Promise<DeleteResult | Stale> {
    return this.write(() => this.refused(resource, id, expect) ?? this.deleteNow(resource, id))
  }

  /**
   * 'stale' when the record exists and `expect` refuses its state, inside the write's transaction;
   * otherwise undefined and the write goes on (a missing record is reported by the write itself).
   */
  private refused(resource: ResourceDescription, id: Id, expect?: Expectation<StoredRecord>): Stale | undefined {
    if (!expect) return undefined
    const current = this.local.find(resource.type, id)
    return current && !expect(current) ? 'stale' : undefined
  }

  async atomic(operations: readonly AtomicOperation[]): Promise<AtomicOutcome> {
    try {
      // One queued write: every operation in the same savepoint, undone together if one fails.
      const results = await this.write(() => runAtomic(operations, this.writer))
      return { ok: true, results }
    } catch (error) {
      if (error instanceof AtomicAbort) return { ok: false, index: error.index, failure: error.failure }
      throw error
    }
  }

  /**
   * Each batch is one queued write: one transaction (BEGIN IMMEDIATE, waiting out busy_timeout for
   * the service's writes) committed to disk before `add` resolves, so that an import stopped half-way
   * keeps the batches it finished, and the service's own writes wait for one batch at most: batches
   * grow with the table, within a budget of time (import-batches.ts).
   */
  openImport(options: { readonly dryRun: boolean }): BookImport {
    if (this.importing) throw new Error('an import is already in progress on this connection')
    const importer = new SqliteBookImport(this.db, options.dryRun)
    const sizer = new BatchSizer()
    this.importing = true
    return {
      get batchSize() {
        return sizer.size
      },
      add: async (batch: readonly NamedBook[]): Promise<ImportCounts> => {
        const started = performance.now()
        const counts = await this.write(() => importer.add(batch))
        if (importer.storedAtStart !== null) sizer.counted(importer.storedAtStart)
        sizer.done(batch.length, performance.now() - started, options.dryRun ? 0 : counts.books)
        return counts
      },
      close: async () => {
        importer.close()
        this.importing = false
      },
    }
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

  /** The synchronous writes, for an atomic batch to run inside its one transaction. */
  private readonly writer: SyncWriter = {
    create: (resource, input) => this.createNow(resource, input),
    update: (resource, id, input) => this.updateNow(resource, id, input),
    delete: (resource, id) => this.deleteNow(resource, id),
    changeToMany: (resource, id, relationship, ids, change) =>
      this.changeToManyNow(resource, id, relationship, ids, change),
  }

  private createNow(resource: ResourceDescription, input: RecordInput): WriteResult {
    const table = this.table(resource)
    const missing = this.local.missing(resource, input.toOne)
    if (missing.length > 0) return { ok: false, missing }
    const set = table.assignments(input)
    const sql =
      set.length === 0
        ? `INSERT INTO ${table.name} DEFAULT VALUES RETURNING ${table.columns}`
        : `INSERT INTO ${table.name} (${set.map(([c]) => quote(c)).join(', ')}) VALUES (${set.map(() => '?').join(', ')}) RETURNING ${table.columns}`
    const row = this.statement(sql).get(...set.map(([, v]) => v)) as Row
    return { ok: true, record: table.toRecord(row) }
  }

  private updateNow(resource: ResourceDescription, id: Id, input: RecordInput): WriteResult | null {
    const table = this.table(resource)
    const missing = this.local.missing(resource, input.toOne)
    // A record that is not there is reported as such first, whatever it was to refer to.
    if (missing.length > 0) return this.local.exists(resource.type, id) ? { ok: false, missing } : null
    const set = table.assignments(input)
    if (set.length === 0) {
      const current = this.local.find(resource.type, id)
      return current ? { ok: true, record: current } : null
    }
    // No read first: the UPDATE returns no row when there is no such record.
    const row = this.statement(
      `UPDATE ${table.name} SET ${set.map(([c]) => `${quote(c)} = ?`).join(', ')} WHERE "id" = ? RETURNING ${table.columns}`,
    ).get(...set.map(([, v]) => v), id) as Row | null
    return row ? { ok: true, record: table.toRecord(row) } : null
  }

  private changeToManyNow(
    resource: ResourceDescription,
    id: Id,
    relationship: string,
    ids: readonly Id[],
    change: ToManyChange,
  ): ToManyResult {
    const inverse = this.registry.inverseOf(resource, relationship)
    const target = this.local.table(resource.relationships[relationship]?.target ?? '')
    const column = quote(inverse.column)
    const members = () =>
      this.statement(`SELECT "id" FROM ${target.name} WHERE ${column} = ? ORDER BY "id"`)
        .values(id)
        .map(([member]) => member as Id)
    if (!this.local.exists(resource.type, id)) return { status: 'not-found' }
    const wanted = JSON.stringify(ids)
    const found = new Set(
      this.statement(`SELECT "id" FROM ${target.name} WHERE "id" IN (SELECT value FROM json_each(?))`)
        .values(wanted)
        .map(([found]) => found as Id),
    )
    const missing = [...new Set(ids)].filter((other) => !found.has(other))
    if (missing.length > 0) return { status: 'missing', ids: missing }
    if (change === 'replace') {
      this.statement(
        `UPDATE ${target.name} SET ${column} = NULL WHERE ${column} = ? AND "id" NOT IN (SELECT value FROM json_each(?))`,
      ).run(id, wanted)
    }
    if (change === 'remove') {
      this.statement(
        `UPDATE ${target.name} SET ${column} = NULL WHERE ${column} = ? AND "id" IN (SELECT value FROM json_each(?))`,
      ).run(id, wanted)
    } else {
      this.statement(`UPDATE ${target.name} SET ${column} = ? WHERE "id" IN (SELECT value FROM json_each(?))`).run(
        id,
        wanted,
      )
    }
    return { status: 'changed', members: members() }
  }

  private deleteNow(resource: ResourceDescription, id: Id): DeleteResult {
    const table = this.table(resource)
    // No read of the record first: a record that is not there has no dependents, and the DELETE
    // then changes nothing.
    for (const dependent of this.registry.dependents(resource.type)) {
      if (dependent.relationship.onTargetDelete !== 'restrict') continue
      const { count } = this.statement(
        `SELECT COUNT(*) AS count FROM ${quote(dependent.resource.table)} WHERE ${quote(dependent.relationship.column)} = ?`,
      ).get(id) as { count: number }
      if (count > 0) return { status: 'restricted', by: dependent.resource, count }
    }
    // Relationships declared `nullify` are cleared by the foreign key's ON DELETE SET NULL.
    const { changes } = this.statement(`DELETE FROM ${table.name} WHERE "id" = ?`).run(id)
    return changes > 0 ? { status: 'deleted' } : { status: 'not-found' }
  }

  async ready(): Promise<void> {
    const failed = this.flusher?.failed
    if (failed) throw flushFailed(failed, 'a flush of the WAL failed')
    await this.read(() => {
      // A file deleted or replaced under the open connection still answers reads (from the
      // unlinked file, or the pages cached): only SQLite's own check of the path tells. A
      // database in memory has no file, and leaves the flag at 0.
      const moved = new Int32Array(2)
      this.db.fileControl(constants.SQLITE_FCNTL_HAS_MOVED, moved)
      if (moved[0] !== 0) {
        throw new StoreUnavailableError(
          'unavailable',
          'SQLITE_FCNTL_HAS_MOVED',
          'the database file was removed or replaced while the service runs',
        )
      }
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
    // Writes asked for from here on are refused (503), rather than meeting a closed connection.
    this.closing = true
    // The commit under way (perhaps waiting for the lock), then the writes queued after it.
    while (this.committing || this.pending.length > 0) await this.flush()
    // Every flush asked for is done (a failed one failed its writes already).
    await this.flusher?.close()
    // Its connection closed first, this one is the last: closing it checkpoints the whole WAL.
    await this.checkpointer?.close()
    const prepared = [this.beginWrite, this.commit, this.rollback, this.dataVersion, ...Object.values(this.savepoint)]
    for (const statement of prepared) statement.finalize()
    this.local.close()
    this.db.close(true)
  }

  /**
   * Group commit: the writes that arrive in one event-loop turn run in one transaction, each in
   * its own savepoint, and are answered after the single COMMIT has reached the disk. With
   * synchronous=FULL every commit waits for the disk, so concurrent writers share that wait
   * instead of queueing for one each. A write that throws is undone alone.
   */
  private write<T>(work: () => T): Promise<T> {
    if (this.closing) {
      return Promise.reject(new StoreUnavailableError('unavailable', 'STORE_CLOSING', 'the service is stopping'))
    }
    if (this.snapshotOpen)
      return Promise.reject(new Error('a snapshot is open on this connection: a write would end it'))
    return new Promise<T>((resolve, reject) => {
      this.pending.push({
        deadline: Date.now() + this.busyTimeoutMs,
        work,
        resolve: resolve as (value: unknown) => void,
        reject,
      })
      // Scheduled even while a commit waits for the lock: that one may end before this turn's
      // writes are seen, and flush() joins it if not.
      if (!this.commitScheduled) {
        this.commitScheduled = true
        setImmediate(() => {
          this.commitScheduled = false
          void this.flush()
        })
      }
    })
  }

  /** The group commit under way, or a new one. */
  private flush(): Promise<void> {
    this.committing ??= this.commitPending().finally(() => {
      this.committing = undefined
    })
    return this.committing
  }

  /**
   * Takes the write lock, then runs what is pending. While another process holds the lock, BEGIN
   * is tried again on a timer (nothing is done before it succeeds, so trying again is safe), and
   * writes queued meanwhile join the batch; each write waits BUSY_TIMEOUT at most, then fails busy.
   */
  private async commitPending(): Promise<void> {
    const failed = this.flusher?.failed
    if (failed) {
      // Nothing more is written once a flush has failed: it could be answered and then lost.
      const refused = this.pending
      this.pending = []
      for (const { reject } of refused) reject(flushFailed(failed, 'an earlier flush of the WAL failed'))
      return
    }
    for (let attempt = 0; this.pending.length > 0; attempt++) {
      if (this.begin()) {
        // Without group commit (a bench's switch, machinery-switches.ts): one write a transaction.
        const batch = this.pending.splice(0, GROUP_COMMIT ? this.pending.length : 1)
        this.runBatch(batch)
        if (GROUP_COMMIT || this.pending.length === 0) return
        attempt = -1
        continue
      }
      this.expire(Date.now())
      if (this.pending.length === 0) return
      await lockBackoff(attempt)
    }
  }

  /** BEGIN IMMEDIATE; false when another connection holds the write lock. Another fault fails what is pending. */
  private begin(): boolean {
    try {
      // A ROLLBACK that failed left its transaction open: it is undone, never committed by this batch.
      if (this.db.inTransaction) this.rollback.run()
      this.beginWrite.run()
      return true
    } catch (error) {
      const fault = sqliteFault(error)
      if (fault?.reason === 'busy') return false
      const failed = this.pending
      this.pending = []
      for (const { reject } of failed) reject(fault ?? error)
      return false
    }
  }

  /** Fails the writes that have waited for the lock as long as they may. */
  private expire(now: number): void {
    const expired = this.pending.filter((write) => write.deadline <= now)
    if (expired.length === 0) return
    this.pending = this.pending.filter((write) => write.deadline > now)
    const error = lockedOut(this.busyTimeoutMs)
    for (const { reject } of expired) reject(error)
  }

  /** Runs `batch` in the transaction begin() opened, and commits it. */
  private runBatch(batch: readonly PendingWrite[]): void {
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = []
    try {
      for (const { work } of batch) {
        this.savepoint.open.run()
        try {
          outcomes.push({ ok: true, value: work() })
        } catch (error) {
          // Disk full, I/O: SQLite may have undone the whole transaction, so the whole batch fails.
          if (sqliteFault(error)) throw error
          this.savepoint.undo.run()
          outcomes.push({ ok: false, error })
        }
        this.savepoint.release.run()
      }
      this.commit.run()
      this.checkpointer?.committed()
    } catch (error) {
      // The batch failed as a whole (disk full, I/O error): nothing of it is stored.
      this.undo()
      for (const { reject } of batch) reject(storeError(error))
      return
    }
    const answer = () =>
      batch.forEach(({ resolve, reject }, i) => {
        const outcome = outcomes[i]
        if (outcome?.ok) resolve(outcome.value)
        else reject(outcome?.error)
      })
    if (!this.flusher) {
      answer()
      return
    }
    // Answered once on disk; meanwhile the next batch may begin and commit.
    this.flusher.flush().then(answer, (error: Error) => {
      const failed = flushFailed(error, 'the commit could not be flushed to disk: what it wrote may be lost')
      for (const { reject } of batch) reject(failed)
    })
  }

  /**
   * Runs a read on this connection; a fault of the database leaves as StoreUnavailableError. WAL
   * readers do not wait for writers, but a read can meet SQLITE_BUSY while another process
   * recovers or removes the WAL: it is tried again on a timer, as BEGIN is, until BUSY_TIMEOUT.
   */
  private async read<T>(read: () => T): Promise<T> {
    const deadline = Date.now() + this.busyTimeoutMs
    for (let attempt = 0; ; attempt++) {
      try {
        return read()
      } catch (error) {
        const fault = sqliteFault(error)
        if (fault?.reason !== 'busy' || Date.now() >= deadline) throw fault ?? error
      }
      await lockBackoff(attempt)
    }
  }

  /** Rolls back what is open (SQLite undoes a transaction itself on some errors). */
  private undo(): void {
    try {
      if (this.db.inTransaction) this.rollback.run()
    } catch {
      // The error that led here is the one to report; a write transaction left open is undone
      // before the next batch begins.
    }
  }

  private table(resource: ResourceDescription) {
    return this.local.table(resource.type)
  }

  private statement(sql: string): Statement<Row, SQLQueryBindings[]> {
    return this.local.statement(sql)
  }
}
