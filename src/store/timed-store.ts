import type { ResourceDescription } from '../model/description'
import type { CatalogueRestore, CatalogueSnapshot } from './catalogue-copy'
import type {
  AtomicOperation,
  AtomicOutcome,
  BookImport,
  DeleteResult,
  Expectation,
  Id,
  IncludePlan,
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
} from './store'

/** The store calls that are timed: every one a request makes. */
export type StoreOperation = Exclude<
  keyof Store,
  'ready' | 'close' | 'openImport' | 'openSnapshot' | 'openRestore' | 'routing'
>

/** Told how long one store call took, in seconds, whether it succeeded or failed. */
export type StoreTimer = (operation: StoreOperation, seconds: number) => void

/**
 * A store that times every call of another, for the database-time metric: the wall time from the
 * call to its answer, so a write includes its wait for the group commit and a stream one
 * observation per batch. A pair of performance.now() per call; nothing else changes.
 */
export class TimedStore implements Store {
  constructor(
    private readonly store: Store,
    private readonly observe: StoreTimer,
  ) {}

  /** `call` is started here, after the clock: a SQLite read runs whole within the call itself. */
  private timed<T>(operation: StoreOperation, call: () => Promise<T>): Promise<T> {
    const start = performance.now()
    return call().finally(() => this.observe(operation, (performance.now() - start) / 1000))
  }

  list(resource: ResourceDescription, query: ListQuery): Promise<StoredRecord[]> {
    return this.timed('list', () => this.store.list(resource, query))
  }

  page(resource: ResourceDescription, query: ListQuery): Promise<{ records: StoredRecord[]; total: number }> {
    return this.timed('page', () => this.store.page(resource, query))
  }

  countUpTo(resource: ResourceDescription, filters: readonly StoreFilter[], cap: number): Promise<number> {
    return this.timed('countUpTo', () => this.store.countUpTo(resource, filters, cap))
  }

  matchingIds(resource: ResourceDescription, query: SearchOrder): Promise<Id[]> {
    return this.timed('matchingIds', () => this.store.matchingIds(resource, query))
  }

  /** Times each batch as it is read; a consumer that stops early closes the inner stream. */
  async *stream(
    resource: ResourceDescription,
    query: SearchOrder,
    size: number,
  ): AsyncGenerator<readonly StoredRecord[]> {
    const batches = this.store.stream(resource, query, size)[Symbol.asyncIterator]()
    let finished = false
    try {
      for (;;) {
        const next = await this.timed('stream', () => batches.next())
        if (next.done) {
          finished = true
          return
        }
        yield next.value
      }
    } finally {
      if (!finished) await batches.return?.()
    }
  }

  find(resource: ResourceDescription, id: Id): Promise<StoredRecord | null> {
    return this.timed('find', () => this.store.find(resource, id))
  }

  findMany(resource: ResourceDescription, ids: readonly Id[]): Promise<StoredRecord[]> {
    return this.timed('findMany', () => this.store.findMany(resource, ids))
  }

  members(resource: ResourceDescription, relationship: string, owners: readonly Id[]): Promise<Members> {
    return this.timed('members', () => this.store.members(resource, relationship, owners))
  }

  findWithRelated(
    resource: ResourceDescription,
    id: Id,
    plan: IncludePlan,
  ): Promise<{ record: StoredRecord; graph: RecordGraph } | null> {
    return this.timed('findWithRelated', () => this.store.findWithRelated(resource, id, plan))
  }

  missingReferences(resource: ResourceDescription, toOne: RecordInput['toOne']): Promise<string[]> {
    return this.timed('missingReferences', () => this.store.missingReferences(resource, toOne))
  }

  create(resource: ResourceDescription, input: RecordInput): Promise<WriteResult> {
    return this.timed('create', () => this.store.create(resource, input))
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
    return this.timed('update', () => this.store.update(resource, id, input, expect))
  }

  delete(resource: ResourceDescription, id: Id): Promise<DeleteResult>
  delete(
    resource: ResourceDescription,
    id: Id,
    expect: Expectation<StoredRecord> | undefined,
  ): Promise<DeleteResult | Stale>
  delete(resource: ResourceDescription, id: Id, expect?: Expectation<StoredRecord>): Promise<DeleteResult | Stale> {
    return this.timed('delete', () => this.store.delete(resource, id, expect))
  }

  atomic(operations: readonly AtomicOperation[]): Promise<AtomicOutcome> {
    return this.timed('atomic', () => this.store.atomic(operations))
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
    return this.timed('changeToMany', () => this.store.changeToMany(resource, id, relationship, ids, change, expect))
  }

  /** Timed: every list reads it first. */
  version(): Promise<string | null> {
    return this.timed('version', () => this.store.version())
  }

  /** Not timed: the import command, not a request, uses it. */
  openImport(options: { readonly dryRun: boolean }): BookImport {
    return this.store.openImport(options)
  }

  /** Not timed: the export and import commands use them. */
  openSnapshot(): Promise<CatalogueSnapshot> {
    return this.store.openSnapshot()
  }

  openRestore(): CatalogueRestore {
    return this.store.openRestore()
  }

  ready(): Promise<void> {
    return this.store.ready()
  }

  close(): Promise<void> {
    return this.store.close()
  }
}
