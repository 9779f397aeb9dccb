import type { ResourceDescription } from './description'
import type { Id, StoredRecord } from './record'

/*
 * What a read asks of the store and what it answers: the domain's terms for lists, searches and
 * included records, which the HTTP layer builds from a query string and every backend reads.
 */

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
  /** Full-text search of the words of `text` (the last a prefix, the others whole), case and accents folded. */
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
  /**
   * The client's, with a search filter: when it aborts, PostgreSQL cancels the search's statement
   * (SQLite's searches are stopped by their read thread, see read-pool.ts).
   */
  readonly signal?: AbortSignal
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
