/**
 * Where a read runs, for lists and single records alike: one rule, here. A read whose cost is
 * bounded whatever the data runs on the main thread, since a read thread's round trip (about
 * 0.1 ms of CPU) would cost more than the read itself. A read whose cost grows with the data (a
 * search ranks every hit, an offset steps through the rows it skips, a to-many include follows
 * every member, a whole list reads every record) runs on a read thread (read-pool.ts), so that the
 * main thread keeps answering the others; where there is none (PostgreSQL, READ_WORKERS=0, a read
 * thread itself) it runs here, streamed. The one read whose cost is known only by looking is an
 * unpaginated list whose length an index counts: it stays here when it turns out short.
 * docs/performance.md has the measurements behind each bound below.
 */
import type { FetchQuery } from '../../jsonapi/query'
import type { IncludeTree } from '../../jsonapi/query-selection'
import type { ResourceDescription } from '../../model/description'
import type { StoreFilter } from '../../model/query'
import type { StoredRecord } from '../../model/record'
import type { ResourceRegistry } from '../../resources/registry'
import type { Store } from '../../store/store'
import { LIST_BATCH } from '../streaming/list-reader'

/**
 * An unpaginated list of at most this many records is read by one query, without a count first
 * (see shortList); a longer one pays for this many records read again, a tenth of a batch.
 */
export const SHORT_LIST = LIST_BATCH / 10

/**
 * On one core, unpaginated lists up to this long are streamed by the main thread, a batch at a
 * time, taking other requests between batches: a worker cannot run beside the main thread there,
 * and the hop to it cost a third more CPU than the list (10,000 books: 1.4 ms on the main thread
 * and 6.3 in the worker, against 4.9 for the whole list on the main thread). A longer one still
 * goes to a worker, whose small heap is collected sooner: the main thread's collector lets some
 * 30 MB of garbage pile up before it runs, which a list of 100,000 books reaches.
 */
export const ONE_CORE_LIST_MAX = 10 * LIST_BATCH

/** Offset pages no deeper than this are read where they are asked for: the rows skipped cost little. */
const CHEAP_OFFSET = 1000

/**
 * `here`: the main thread. `thread`: a read thread, where there is one. `counted`: an unpaginated
 * list whose length an index counts; here when short (see shortList and runsHere), else a
 * read thread.
 */
export type ReadPlace = 'here' | 'thread' | 'counted'

export interface ListPlace {
  readonly place: ReadPlace
  /**
   * A page of at most one batch of records that includes no to-many relationship: its document is
   * small whatever the data, so it is answered whole and tagged by its bytes (ListRequest.bounded),
   * without a long-answer slot or the store's version read first.
   */
  readonly bounded: boolean
}

/** Whether an include tree follows a to-many relationship anywhere: what it includes grows with the data. */
function followsToMany(registry: ResourceRegistry, from: ResourceDescription, tree: IncludeTree): boolean {
  return [...tree].some(([name, below]) => {
    const relationship = from.relationships[name]
    if (!relationship) return false
    return relationship.kind === 'to-many' || followsToMany(registry, registry.get(relationship.target), below)
  })
}

/**
 * Whether the length of a list can be counted in an index, up to a bound: no filter, or one filter
 * an index serves (one relationship id, or only "none"; an attribute that is a sort key, which has
 * an index of its own). Several filters could make the count step through a long range of the
 * index for few matches; a search ranks every hit.
 */
function countable(resource: ResourceDescription, filters: readonly StoreFilter[]): boolean {
  if (filters.length > 1) return false
  const filter = filters[0]
  if (!filter) return true
  if (filter.kind === 'attribute') return resource.sortable.includes(filter.attribute)
  return filter.kind === 'relationship' && filter.ids.length + (filter.orNone ? 1 : 0) === 1
}

/** Where a list runs (`filters`: the endpoint's scope and the query's together). */
export function listPlace(
  registry: ResourceRegistry,
  resource: ResourceDescription,
  query: FetchQuery,
  filters: readonly StoreFilter[],
): ListPlace {
  const { page } = query
  const growing = followsToMany(registry, resource, query.include ?? new Map())
  if (!page) return { place: !growing && countable(resource, filters) ? 'counted' : 'thread', bounded: false }
  const bounded = !growing && (page.kind === 'offset' ? page.limit : page.size) <= LIST_BATCH
  const skipped = page.kind === 'number' ? (page.number - 1) * page.size : page.kind === 'offset' ? page.offset : 0
  const cheap = !growing && skipped <= CHEAP_OFFSET && !filters.some((f) => f.kind === 'search')
  return { place: cheap ? 'here' : 'thread', bounded }
}

/**
 * Where a single record runs: a read thread when its answer can grow with the data, that is, when
 * it links a to-many relationship (a single record renders the linkage of all of its
 * relationships) or its include tree follows one.
 */
export function recordPlace(
  registry: ResourceRegistry,
  resource: ResourceDescription,
  include: IncludeTree,
): ReadPlace {
  const toMany = Object.values(resource.relationships).some((r) => r.kind === 'to-many')
  return toMany || followsToMany(registry, resource, include) ? 'thread' : 'here'
}

/**
 * The whole of a counted list of at most SHORT_LIST records, read by one query of at most
 * SHORT_LIST + 1 records in an index's order; null for a longer one. The common list (an author's
 * or a collection's books) is then one query, without the count or the version read a longer list
 * needs first; a longer one has read SHORT_LIST records more.
 */
export async function shortList(
  store: Store,
  resource: ResourceDescription,
  query: FetchQuery,
  filters: readonly StoreFilter[],
): Promise<StoredRecord[] | null> {
  const records = await store.list(resource, { filters, sort: query.sort, limit: SHORT_LIST + 1 })
  return records.length <= SHORT_LIST ? records : null
}

/**
 * Whether a read placed so runs on the main thread, where there are read threads. A counted list
 * longer than SHORT_LIST stays when an index counts at most one batch (an author's books, say),
 * whose round trip to a read thread would cost about as much as the list itself; on one core
 * (ReadOffload.oneCore), at most ONE_CORE_LIST_MAX.
 */
export async function runsHere(
  place: ReadPlace,
  store: Store,
  resource: ResourceDescription,
  filters: readonly StoreFilter[],
  oneCore: boolean,
): Promise<boolean> {
  if (place !== 'counted') return place === 'here'
  const most = oneCore ? ONE_CORE_LIST_MAX : LIST_BATCH
  return (await store.countUpTo(resource, filters, most + 1)) <= most
}
