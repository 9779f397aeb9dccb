import type { ResourceDescription } from '../model/description'
import type { ImportCounts, NamedBook } from '../model/imports'
import type { IncludePlan, ListPage, ListQuery, Members, RecordGraph, SearchOrder, StoreFilter } from '../model/query'
import type { Id, StoredRecord } from '../model/record'
import type {
  AtomicOperation,
  AtomicOptions,
  AtomicOutcome,
  DeleteResult,
  NoOptions,
  RecordInput,
  StaleIf,
  ToManyChange,
  ToManyResult,
  WriteOptions,
  WriteResult,
} from '../model/writes'
import type { CatalogueRestore, CatalogueSnapshot } from './catalogue-copy'
import type { ChangeLog } from './change-log'
import type { ReadRouting } from './read-routing'

/** An import in progress: batches of books added one after another, each in one transaction. */
export interface BookImport {
  /**
   * How many books the next batch should hold: more as the table grows, within what its
   * transaction should hold the database for (src/store/import-batches.ts).
   */
  readonly batchSize: number
  /** Adds a batch in one transaction and resolves to what it added once that is committed. */
  add(batch: readonly NamedBook[]): Promise<ImportCounts>
  /** Ends the import (a dry run forgets what it would have added). */
  close(): Promise<void>
}

/**
 * The one storage interface. Every backend implements it; nothing outside src/store knows which
 * database is in use. Each write runs in a single transaction.
 */
export interface Store {
  /**
   * Present where reads may go to replicas (PostgreSQL with DATABASE_REPLICA_URL): the HTTP layer
   * runs each request inside `routing.forClient`, and /ready and /metrics report the replicas.
   */
  readonly routing?: ReadRouting
  /**
   * Which database this store serves, where its name alone does not say (SQLite: the file's device
   * and inode, since a file can be replaced under the name): passed as StoreOptions.sameDatabaseAs
   * to the connections opened later on the service's behalf. Undefined for PostgreSQL and memory.
   */
  readonly identity?: string
  /** The change feed: every write's changes, in commit order (change-log.ts). */
  readonly changes: ChangeLog
  /** A window of a list. */
  list(resource: ResourceDescription, query: ListQuery): Promise<StoredRecord[]>
  /** A window of a list and the number of records in the whole list, from one snapshot: they agree. */
  page(resource: ResourceDescription, query: ListQuery): Promise<ListPage>
  /**
   * How many records match `filters`, counted no further than `cap`: whether a list is short,
   * for at most `cap` entries of an index read, where a full count would read them all.
   */
  countUpTo(resource: ResourceDescription, filters: readonly StoreFilter[], cap: number): Promise<number>
  /**
   * The ids of every record of a list in its order. A streamed search reads these once and then
   * its records by id, so that the search is matched and ranked once, not once per window.
   */
  matchingIds(resource: ResourceDescription, query: SearchOrder): Promise<Id[]>
  /**
   * Every record of a list in its order, a batch of at most `size` at a time, each read when the
   * one before has been taken. A backend reads them so that each batch costs about the same however
   * far into the list it is: never a search matched again, or an order sorted again, per batch.
   * Not one snapshot: a record changed while the list streams shows as it was when its batch was read.
   */
  stream(resource: ResourceDescription, query: SearchOrder, size: number): AsyncIterable<readonly StoredRecord[]>
  find(resource: ResourceDescription, id: Id): Promise<StoredRecord | null>
  /** The records with these ids, in the order given; ids no record has are left out. */
  findMany(resource: ResourceDescription, ids: readonly Id[]): Promise<StoredRecord[]>
  /** The linkage of a to-many relationship for many owners at once. */
  members(resource: ResourceDescription, relationship: string, owners: readonly Id[]): Promise<Members>
  /**
   * A record and what the plan reaches from it, in one consistent snapshot; null when no record
   * has the id. For plans whose size does not grow with the data (to-one relationships only): a
   * to-many plan is read in windows by the caller instead.
   */
  findWithRelated(
    resource: ResourceDescription,
    id: Id,
    plan: IncludePlan,
  ): Promise<{ record: StoredRecord; graph: RecordGraph } | null>
  /** Which of these to-one references point at nothing (read-only; used to report all errors at once). */
  missingReferences(resource: ResourceDescription, toOne: RecordInput['toOne']): Promise<string[]>
  create(resource: ResourceDescription, input: RecordInput): Promise<WriteResult>
  /** Null when no record has that id. With `expect`, written only if it accepts the record as it is. */
  update<O extends WriteOptions<StoredRecord> = NoOptions>(
    resource: ResourceDescription,
    id: Id,
    input: RecordInput,
    options?: O & WriteOptions<StoredRecord>,
  ): Promise<WriteResult | null | StaleIf<O>>
  /** With `expect`, deleted only if it accepts the record as it is. */
  delete<O extends WriteOptions<StoredRecord> = NoOptions>(
    resource: ResourceDescription,
    id: Id,
    options?: O & WriteOptions<StoredRecord>,
  ): Promise<DeleteResult | StaleIf<O>>
  /**
   * Runs the operations in order in one transaction: all of them are stored, or none. With
   * `expect`, first reads `targets` in that transaction and runs only if it accepts their states.
   */
  atomic<O extends AtomicOptions = NoOptions>(
    operations: readonly AtomicOperation[],
    options?: O & AtomicOptions,
  ): Promise<AtomicOutcome | StaleIf<O>>
  /**
   * Changes the members of a to-many relationship by writing the inverse to-one of the records
   * named: `add` points them here, `remove` clears those that point here, `replace` does both so
   * that exactly `ids` point here. One transaction; nothing changes unless every record exists.
   * With `expect`, changed only if it accepts the members (in id order) as they are.
   */
  changeToMany<O extends WriteOptions<readonly Id[]> = NoOptions>(
    resource: ResourceDescription,
    id: Id,
    relationship: string,
    ids: readonly Id[],
    change: ToManyChange,
    options?: O & WriteOptions<readonly Id[]>,
  ): Promise<ToManyResult | StaleIf<O>>
  /**
   * A token that changes whenever the stored data may have changed: after every write this store
   * commits, and every commit another connection or process makes to the same database. Read
   * before a read that is not one snapshot (a streamed list), it stands for what that read saw:
   * while it stays the same, nothing has been written since, so the answer would be the same.
   * It is the database's, not the connection's: every process and instance reading the same data
   * gives the same token (so a revalidation may reach any of them), and a start of the service
   * changes it (so a database put back from a backup never repeats a token given before).
   * Null where the store cannot tell.
   */
  version(): Promise<string | null>
  /**
   * Resolves when the store can serve: the database answers a trivial read, is still the one it
   * opened (SQLite: the file was not replaced or removed under it, after which every read and write
   * is refused until a restart; PostgreSQL, which connects by name, serves
   * whichever database holds the name), and its schema is at the last migration this build knows. Rejects with a
   * StoreUnavailableError saying why not. For the readiness probe (GET /ready): a load balancer
   * asks it every few seconds, so it costs one small read and no more.
   */
  ready(): Promise<void>
  /**
   * Starts an import of books named by their author's and collection's names. Each author and
   * collection is found by its exact name (the lowest id when several share it) or created. A book
   * is the same as a stored one when its title, its author's name and its collection's name (or
   * the absence of one) are all equal: such a book is counted as present and not added again, so
   * that importing a file twice adds nothing the second time. A dry run checks the same way and
   * counts what it would add, but stores nothing.
   * On the Store, not built from create(): 100,000 books one write and three look-ups each would
   * take minutes; each backend adds a batch in bulk in its own way.
   */
  openImport(options: { readonly dryRun: boolean }): BookImport
  /**
   * The whole catalogue at one moment, every type's records and id counter, read a batch at a
   * time (catalogue-copy.ts): what `catalogue export` writes. Close it when done.
   */
  openSnapshot(): Promise<CatalogueSnapshot>
  /** Records written back with their ids, and the id counters raised past them: an export restored. */
  openRestore(): CatalogueRestore
  close(): Promise<void>
}
