import type { ResourceDescription } from '../model/description'
import type { Id, StoredRecord } from '../model/record'
import type { CatalogueRestore, CatalogueSnapshot } from './catalogue-copy'
import type { ReadRouting } from './read-routing'

export type { Id, StoredRecord } from '../model/record'

/** The fields a write sets; absent keys are left as they are (update) or take defaults (create). */
export interface RecordInput {
  readonly attributes: Readonly<Record<string, string>>
  /** A relationship name mapped to the target id, or null to clear it. */
  readonly toOne: Readonly<Record<string, Id | null>>
}

/** One condition on a list; a list matches all of its filters. */
export type StoreFilter =
  /** The attribute equals the value exactly. */
  | { readonly kind: 'attribute'; readonly attribute: string; readonly value: string }
  /** The to-one relationship points at one of `ids`, or at nothing when `orNone`. */
  | {
      readonly kind: 'relationship'
      readonly relationship: string
      readonly ids: readonly Id[]
      readonly orNone: boolean
    }
  /** Full-text search of the words of `text`, each as a prefix, case and accents folded. */
  | { readonly kind: 'search'; readonly text: string }

/** `id` or an attribute name. */
export interface SortKey {
  readonly field: string
  readonly descending: boolean
}

/** The values of a record's sort keys: where a keyset continues after it. */
export function sortValuesOf(sort: readonly SortKey[], record: StoredRecord): (string | number)[] {
  return sort.map((key) => (key.field === 'id' ? record.id : (record.attributes[key.field] as string)))
}

/** Which records a list holds and in what order. */
export interface SearchOrder {
  readonly filters: readonly StoreFilter[]
  /** Ends with `id` so that the order is total. */
  readonly sort: readonly SortKey[]
  /** With a search filter: most relevant first, then `sort`. Not with `after`: relevance moves as data changes. */
  readonly ranked?: boolean
}

/** A window of a list. */
export interface ListQuery extends SearchOrder {
  /**
   * An integer, at least 1. There is no "no limit": a whole list is read in windows (stream), never
   * at once, so every backend can pass it to its LIMIT as it is.
   */
  readonly limit: number
  readonly offset?: number
  /** Keyset: only the records after the one whose sort values these are, in `sort` order. */
  readonly after?: readonly (string | number)[]
}

/** A window of a list and how many records the whole list has. */
export interface ListPage {
  readonly records: StoredRecord[]
  /** Exact, but for a search that matched more than SEARCH_WINDOW records (search-ranking.ts): then that number. */
  readonly total: number
  /** Set when `total` stands for "at least": a search matched more than SEARCH_WINDOW records. */
  readonly capped?: true
}

/** Owner id -> the ids of its records in a to-many relationship, in id order; owners with none are absent. */
export type Members = Map<Id, Id[]>

/**
 * Which relationships to follow from a set of records. `include` puts the related records in the
 * graph's `included`; without it only the linkage (the related ids) is read.
 */
export interface IncludeNode {
  readonly include: boolean
  readonly children: IncludePlan
}
export type IncludePlan = ReadonlyMap<string, IncludeNode>

/** The ids on the other side of a relationship: one (or null) for to-one, a list for to-many. */
export type Linkage = Id | null | readonly Id[]

/** Records reached from others along an include plan, read in the same snapshot as they. */
export interface RecordGraph {
  /** Linkage of a relationship the plan followed from this record, else undefined. */
  linkage(type: string, id: Id, relationship: string): Linkage | undefined
  /** Each included record once, in first-seen order. */
  readonly included: readonly { readonly resource: ResourceDescription; readonly record: StoredRecord }[]
}

export type WriteResult =
  | { readonly ok: true; readonly record: StoredRecord }
  /** Names of the to-one relationships whose target does not exist (required ones given as null too). */
  | { readonly ok: false; readonly missing: readonly string[] }

export type DeleteResult =
  | { readonly status: 'deleted' }
  | { readonly status: 'not-found' }
  /** Other records still point at this one through a relationship that forbids deleting it. */
  | { readonly status: 'restricted'; readonly by: ResourceDescription; readonly count: number }

export type ToManyChange = 'add' | 'remove' | 'replace'

/**
 * What a conditional write (HTTP If-Match) expects of the current state of what it changes: the
 * write goes ahead only if this returns true. The store calls it inside the write's own
 * transaction, after reading the state there, so that of two writers expecting the same state
 * only the first succeeds; a check made before the write could pass for both.
 */
export type Expectation<T> = (current: T) => boolean

/** A conditional write found a state its Expectation refused: nothing was written. */
export type Stale = 'stale'

export type ToManyResult =
  | { readonly status: 'changed'; readonly members: readonly Id[] }
  /** No record has the owner's id. */
  | { readonly status: 'not-found' }
  /** These related records do not exist. */
  | { readonly status: 'missing'; readonly ids: readonly Id[] }

/** A record named by its id, or by the `lid` an earlier operation of the same atomic batch gave it. */
export type RecordRef = { readonly id: Id } | { readonly lid: string }

/** What an atomic operation writes: RecordInput whose references may be lids. */
export interface AtomicInput {
  readonly attributes: Readonly<Record<string, string>>
  readonly toOne: Readonly<Record<string, RecordRef | null>>
}

export type AtomicOperation =
  | {
      readonly kind: 'create'
      readonly resource: ResourceDescription
      readonly lid?: string
      readonly input: AtomicInput
    }
  | {
      readonly kind: 'update'
      readonly resource: ResourceDescription
      readonly target: RecordRef
      readonly input: AtomicInput
      /** Set for a relationship operation: its result is `{}`, not the record. */
      readonly relationship?: string
    }
  | { readonly kind: 'delete'; readonly resource: ResourceDescription; readonly target: RecordRef }
  | {
      readonly kind: 'to-many'
      readonly resource: ResourceDescription
      readonly target: RecordRef
      readonly relationship: string
      readonly members: readonly RecordRef[]
      readonly change: ToManyChange
    }

export type AtomicResult =
  | { readonly kind: 'record'; readonly record: StoredRecord }
  | { readonly kind: 'members'; readonly members: readonly Id[] }
  | { readonly kind: 'none' }

/** Why an atomic batch stopped: the first operation that could not be done. */
export type AtomicFailure =
  | { readonly kind: 'not-found' }
  | { readonly kind: 'unknown-lid'; readonly lid: string }
  | { readonly kind: 'missing'; readonly relationships: readonly string[] }
  | { readonly kind: 'missing-members'; readonly ids: readonly Id[] }
  | { readonly kind: 'restricted'; readonly id: Id; readonly by: ResourceDescription; readonly count: number }

export type AtomicOutcome =
  | { readonly ok: true; readonly results: readonly AtomicResult[] }
  | { readonly ok: false; readonly index: number; readonly failure: AtomicFailure }

/** A book as an import file gives it: its author and collection by name, not by id. */
export interface NamedBook {
  readonly title: string
  readonly author: string
  /** Null: in no collection. */
  readonly collection: string | null
}

/** What an import added (or, in a dry run, would add). */
export interface ImportCounts {
  readonly books: number
  /** Books left out because the catalogue (or an earlier line) already holds the same one. */
  readonly present: number
  readonly authors: number
  readonly collections: number
}

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
  /** Null when no record has that id. */
  update(resource: ResourceDescription, id: Id, input: RecordInput): Promise<WriteResult | null>
  /** The same, if `expect` accepts the record as it is before the change (a conditional write). */
  update(
    resource: ResourceDescription,
    id: Id,
    input: RecordInput,
    expect: Expectation<StoredRecord> | undefined,
  ): Promise<WriteResult | null | Stale>
  delete(resource: ResourceDescription, id: Id): Promise<DeleteResult>
  /** The same, if `expect` accepts the record as it is (a conditional write). */
  delete(
    resource: ResourceDescription,
    id: Id,
    expect: Expectation<StoredRecord> | undefined,
  ): Promise<DeleteResult | Stale>
  /** Runs the operations in order in one transaction: all of them are stored, or none. */
  atomic(operations: readonly AtomicOperation[]): Promise<AtomicOutcome>
  /**
   * Changes the members of a to-many relationship by writing the inverse to-one of the records
   * named: `add` points them here, `remove` clears those that point here, `replace` does both so
   * that exactly `ids` point here. One transaction; nothing changes unless every record exists.
   */
  changeToMany(
    resource: ResourceDescription,
    id: Id,
    relationship: string,
    ids: readonly Id[],
    change: ToManyChange,
  ): Promise<ToManyResult>
  /** The same, if `expect` accepts the members (in id order) as they are before the change. */
  changeToMany(
    resource: ResourceDescription,
    id: Id,
    relationship: string,
    ids: readonly Id[],
    change: ToManyChange,
    expect: Expectation<readonly Id[]> | undefined,
  ): Promise<ToManyResult | Stale>
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
   * opened (SQLite: the file was not replaced under it; PostgreSQL, which connects by name, serves
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
