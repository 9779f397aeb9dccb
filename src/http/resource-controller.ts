import type { Server } from 'bun'
import { resourceObject, unlinkedResource } from '../jsonapi/document'
import { httpError, recordNotFound } from '../jsonapi/errors'
import { requireId } from '../jsonapi/ids'
import {
  type FetchLimits,
  type FetchQuery,
  type IncludeTree,
  parseFetchQuery,
  rejectQueryParameters,
} from '../jsonapi/query'
import { parseWriteDocument } from '../jsonapi/request-document'
import type { ResourceDescription } from '../model/description'
import type { IncludeNode, IncludePlan, StoreFilter } from '../model/query'
import type { StoredRecord } from '../model/record'
import type { ResourceRegistry } from '../resources/registry'
import { checkReferencesExist, failsAsParsed, referencesMissing, stillReferenced } from '../service/write-rules'
import { SEARCH_WINDOW } from '../store/search-ranking'
import type { Store } from '../store/store'
import { documentOf } from './body-parser'
import { preconditionFailed, recordName, type WritePreconditions } from './conditional'
import { DocumentStream } from './document-stream'
import { recordState } from './etag'
import { LIST_BATCH, ListReader } from './list-reader'
import type { LongAnswers } from './long-answers'
import type { OffloadedRead, ReadOffload } from './read-threads/read-calls'
import { type ApiResponse, documentResponse, noContent, stateResponse } from './responses'

/** What a handler gets from the request: the raw URL, the path id and the parsed body. */
export interface HandlerInput {
  readonly url: string
  readonly id?: string
  readonly body?: unknown
  /** Lists: the cursor pagination profile's URI when the client's Accept asks for it. */
  readonly cursorProfile?: string | null
  /** A read's Accept-Encoding: a read worker compresses what it streams (see compression.ts). */
  readonly acceptEncoding?: string | null
  /** A write's If-Match and If-None-Match, checked inside the write (see conditional.ts). */
  readonly preconditions?: WritePreconditions
  /** A read's request and server: whose long answers it counts among (see long-answers.ts). */
  readonly request?: Request
  readonly server?: Server<unknown> | null
}

const nothing: IncludePlan = new Map()
const noInclude: IncludeTree = new Map()

/**
 * On one core, unpaginated lists up to this long are streamed by the main thread, a batch at a
 * time, taking other requests between batches: a worker cannot run beside the main thread there,
 * and the hop to it cost a third more CPU than the list (10,000 books: 1.4 ms on the main thread
 * and 6.3 in the worker, against 4.9 for the whole list on the main thread). A longer one still
 * goes to a worker, whose small heap is collected sooner: the main thread's collector lets some
 * 30 MB of garbage pile up before it runs, which a list of 100,000 books reaches.
 */
export const ONE_CORE_LIST_MAX = 10 * LIST_BATCH

/**
 * An unpaginated list of at most this many records is read by one query, without a count first
 * (see shortList); a longer one pays for this many records read again, a tenth of a batch.
 */
export const SHORT_LIST = LIST_BATCH / 10

/** Offset pages no deeper than this are read where they are asked for: the rows skipped cost little. */
const CHEAP_OFFSET = 1000

/**
 * Whether a list costs little whatever the data: a page (at most MAX_PAGE_SIZE records) of no
 * search (ranking reads every hit), not deep (an offset steps through the rows it skips), that
 * includes no to-many relationship. Such a list is answered on the main thread: a read worker's
 * round trip (about 0.1 ms of CPU) would cost more than the list itself.
 */
function cheap(
  registry: ResourceRegistry,
  resource: ResourceDescription,
  query: FetchQuery,
  filters: readonly StoreFilter[],
): boolean {
  const { page } = query
  if (!page || filters.some((f) => f.kind === 'search')) return false
  if (page.kind === 'number' && (page.number - 1) * page.size > CHEAP_OFFSET) return false
  if (page.kind === 'offset' && page.offset > CHEAP_OFFSET) return false
  return !followsToMany(registry, resource, query.include ?? noInclude)
}

/**
 * Whether the length of an unpaginated list can be counted in an index, up to a bound: no filter,
 * or one filter an index serves (one relationship id, or only "none"; an attribute that is a sort
 * key, which has an index of its own). Several filters could make the count step through a long
 * range of the index for few matches.
 */
function countable(resource: ResourceDescription, filters: readonly StoreFilter[]): boolean {
  if (filters.length > 1) return false
  const filter = filters[0]
  if (!filter) return true
  if (filter.kind === 'attribute') return resource.sortable.includes(filter.attribute)
  return filter.kind === 'relationship' && filter.ids.length + (filter.orNone ? 1 : 0) === 1
}

/**
 * Whether a list is a page whose document is small whatever the data: at most one batch of records
 * (MAX_PAGE_SIZE may allow more) and no to-many relationship included. It is answered whole and
 * tagged by its bytes (see ListRequest.bounded).
 */
function isBoundedPage(registry: ResourceRegistry, resource: ResourceDescription, query: FetchQuery): boolean {
  const { page } = query
  if (!page || (page.kind === 'offset' ? page.limit : page.size) > LIST_BATCH) return false
  return !followsToMany(registry, resource, query.include ?? noInclude)
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
 * Whether a record's answer can grow with the data: it links a to-many relationship (a single
 * record renders the linkage of all of its relationships) or its include tree follows one.
 */
function reachesMany(registry: ResourceRegistry, resource: ResourceDescription, tree: IncludeTree): boolean {
  return (
    Object.values(resource.relationships).some((r) => r.kind === 'to-many') || followsToMany(registry, resource, tree)
  )
}

/**
 * The store's plan for an include tree. `linkAll` adds every relationship of the top level for
 * its linkage alone: a single-record GET renders linkage for all of them (interface.md rule 2).
 */
function planOf(resource: ResourceDescription, tree: IncludeTree, linkAll: boolean): IncludePlan {
  const plan = new Map<string, IncludeNode>()
  const nested = (subtree: IncludeTree): IncludePlan =>
    new Map([...subtree].map(([name, children]) => [name, { include: true, children: nested(children) }]))
  for (const name of Object.keys(resource.relationships)) {
    const subtree = tree.get(name)
    if (subtree) plan.set(name, { include: true, children: nested(subtree) })
    else if (linkAll) plan.set(name, { include: false, children: nothing })
  }
  return plan
}

/**
 * The five operations for any resource type, driven by its description: one controller,
 * instantiated once per type.
 */
export class ResourceController {
  /** What a single GET includes without `include`, and its plan, made once. */
  private readonly defaultInclude: IncludeTree
  private readonly defaultPlan: IncludePlan
  /** Whether a single GET without `include` can grow with the data (see reachesMany). */
  private readonly defaultReachesMany: boolean

  constructor(
    private readonly resource: ResourceDescription,
    private readonly registry: ResourceRegistry,
    private readonly store: Store,
    private readonly basePath: string,
    private readonly limits: FetchLimits,
    /**
     * Where the reads whose cost grows with the data are answered: a read worker (see read-pool.ts).
     * Absent in the worker itself, and where there are no workers.
     */
    private readonly offload?: ReadOffload,
    /** The caps on long answers in flight (see long-answers.ts); absent in a read worker. */
    private readonly longAnswers?: LongAnswers,
  ) {
    this.defaultInclude = new Map(resource.defaultInclude.map((name) => [name, new Map()]))
    this.defaultPlan = planOf(resource, this.defaultInclude, true)
    this.defaultReachesMany = reachesMany(registry, resource, this.defaultInclude)
  }

  /**
   * `scope` narrows the list before the client's filters: the books of one author, say. A short
   * unpaginated list (see shortList) is answered from one read; any other list but a bounded page
   * (see ListRequest.bounded) may be long enough to stream: it takes a long-answer slot of its
   * client first (503 when none is left), and the store's version is read before the list, to tag it.
   */
  async list(input: HandlerInput, scope: readonly StoreFilter[] = []): Promise<ApiResponse> {
    const { url, acceptEncoding, cursorProfile = null } = input
    const { resource, registry } = this
    const query = parseFetchQuery(registry, resource, url, 'list', this.limits, { cursorProfile })
    const filters = scope.length > 0 ? [...scope, ...query.filters] : query.filters
    checkSearchWindow(query, filters)
    const bounded = isBoundedPage(registry, resource, query)
    if (!query.page) {
      const records = await this.shortList(query, filters)
      // Answered whole, so tagged by its bytes: no version is needed.
      if (records) return this.reader(query, false, url, cursorProfile, filters).whole(records)
    }
    if (bounded) return this.readList(query, bounded, url, acceptEncoding, cursorProfile, scope, filters)
    const long = async () => {
      const version = await this.store.version()
      const answer = await this.readList(query, bounded, url, acceptEncoding, cursorProfile, scope, filters)
      return { ...answer, version }
    }
    const { longAnswers } = this
    return longAnswers && input.request ? longAnswers.run(input.request, input.server ?? null, long) : long()
  }

  /**
   * The whole of an unpaginated list of at most SHORT_LIST records, read by one query of at most
   * SHORT_LIST + 1 records in an index's order; null for a longer list, or one that one query could
   * not read at a cost bounded by the records it returns (a search, two filters, a to-many include).
   * The common list (an author's or a collection's books) is then one query, without the count or
   * the version read a longer list needs first; a longer one has read SHORT_LIST records more.
   */
  private async shortList(query: FetchQuery, filters: readonly StoreFilter[]): Promise<StoredRecord[] | null> {
    const { registry, resource, store } = this
    if (!countable(resource, filters) || followsToMany(registry, resource, query.include ?? noInclude)) return null
    const records = await store.list(resource, { filters, sort: query.sort, limit: SHORT_LIST + 1 })
    return records.length <= SHORT_LIST ? records : null
  }

  private reader(
    query: FetchQuery,
    bounded: boolean,
    url: string,
    cursorProfile: string | null,
    filters: readonly StoreFilter[],
  ): ListReader {
    const { resource, registry, store } = this
    const { page } = query
    // A search without a sort comes most relevant first; cursors keep to the id order, since
    // relevance shifts as the catalogue changes.
    const ranked = !query.sorted && page?.kind !== 'cursor' && filters.some((f) => f.kind === 'search')
    return new ListReader({
      resource,
      registry,
      store,
      url,
      include: query.include ?? noInclude,
      fields: query.fields,
      filters,
      sort: query.sort,
      ranked,
      profile: page ? cursorProfile : null,
      bounded,
    })
  }

  private async readList(
    query: FetchQuery,
    bounded: boolean,
    url: string,
    acceptEncoding: string | null | undefined,
    cursorProfile: string | null,
    scope: readonly StoreFilter[],
    filters: readonly StoreFilter[],
  ): Promise<ApiResponse> {
    const { resource, registry } = this
    const { page } = query
    if (this.offload && !cheap(registry, resource, query, filters) && !(await this.short(query, filters))) {
      return this.offload.run({ op: 'list', type: resource.type, url, scope, cursorProfile, acceptEncoding })
    }
    const reader = this.reader(query, bounded, url, cursorProfile, filters)
    if (page?.kind === 'number' || page?.kind === 'offset') return reader.windowed(page)
    if (page?.kind === 'cursor') return reader.cursor(page)
    return reader.streamed()
  }

  /**
   * Whether an unpaginated list is short enough to be answered here, counted in an index: at most
   * one batch (an author's books, say), whose worker round trip would cost about as much as the list
   * itself; on one core (see ReadOffload.oneCore), at most ONE_CORE_LIST_MAX.
   */
  private async short(query: FetchQuery, filters: readonly StoreFilter[]): Promise<boolean> {
    const { registry, resource, store } = this
    if (query.page || !countable(resource, filters) || followsToMany(registry, resource, query.include ?? noInclude)) {
      return false
    }
    const most = this.offload?.oneCore ? ONE_CORE_LIST_MAX : LIST_BATCH
    return (await store.countUpTo(resource, filters, most + 1)) <= most
  }

  /** Checks the query of a single-record GET without reading anything (a related record that is null). */
  checkRecordQuery(url: string): void {
    parseFetchQuery(this.registry, this.resource, url, 'record', this.limits)
  }

  async show({ url, id, acceptEncoding }: HandlerInput): Promise<ApiResponse> {
    const { resource, registry, store } = this
    const recordId = requireId(id)
    const query = parseFetchQuery(registry, resource, url, 'record', this.limits)
    const include = query.include ?? this.defaultInclude
    if (query.include ? reachesMany(registry, resource, include) : this.defaultReachesMany) {
      // Long enough to stream, perhaps: the store's version is read first, to tag it.
      const version = await store.version()
      if (this.offload) {
        const read: OffloadedRead = { op: 'show', type: resource.type, url, id: String(recordId), acceptEncoding }
        return { ...(await this.offload.run(read)), version }
      }
      // What it includes grows with the data (an author's books): written a batch at a time.
      const record = await store.find(resource, recordId)
      if (!record) throw recordNotFound()
      const document = new DocumentStream({
        registry,
        store,
        resource,
        fields: query.fields,
        include,
        primaryLinks: Object.keys(resource.relationships),
      })
      const answer = await documentResponse(200, document.chunks([[record]], 'one'))
      return { ...answer, state: recordState(resource, record), version }
    }
    const plan = query.include ? planOf(resource, query.include, true) : this.defaultPlan
    const found = await store.findWithRelated(resource, recordId, plan)
    if (!found) throw recordNotFound()
    const context = { registry, graph: found.graph, fields: query.fields }
    const data = resourceObject(context, resource, found.record)
    const included = found.graph.included.map((r) => resourceObject(context, r.resource, r.record))
    return stateResponse(200, included.length > 0 ? { data, included } : { data }, recordState(resource, found.record))
  }

  async create({ url, body }: HandlerInput): Promise<ApiResponse> {
    const { resource, registry, store } = this
    rejectQueryParameters(url)
    const write = parseWriteDocument(registry, resource, documentOf(body), { kind: 'create' })
    const invalid = await checkReferencesExist(store, resource, write)
    if (invalid) throw invalid
    const result = await store.create(resource, write.input)
    if (!result.ok) throw referencesMissing(resource, result.missing)
    const data = unlinkedResource(resource, result.record)
    const location = `${this.basePath}/${resource.type}/${data.id}`
    return stateResponse(201, { data }, recordState(resource, result.record), { location })
  }

  async update({ url, id, body, preconditions }: HandlerInput): Promise<ApiResponse> {
    const { resource, registry, store } = this
    const recordId = requireId(id)
    rejectQueryParameters(url)
    const write = parseWriteDocument(registry, resource, documentOf(body), { kind: 'update', id: recordId })
    // A record that does not exist answers 404 before its write's faults are looked at further.
    if (failsAsParsed(write) && !(await store.find(resource, recordId))) throw recordNotFound()
    const invalid = await checkReferencesExist(store, resource, write)
    if (invalid) throw invalid
    const result = await store.update(resource, recordId, write.input, {
      expect: preconditions?.forRecord(resource),
    })
    if (!result) throw recordNotFound()
    if (result === 'stale') throw preconditionFailed(preconditions?.refusedBy, recordName(resource, recordId), 'it')
    if (!result.ok) throw referencesMissing(resource, result.missing)
    const data = unlinkedResource(resource, result.record)
    return stateResponse(200, { data }, recordState(resource, result.record))
  }

  async remove({ url, id, preconditions }: HandlerInput): Promise<ApiResponse> {
    const { resource, store } = this
    const recordId = requireId(id)
    rejectQueryParameters(url)
    const result = await store.delete(resource, recordId, { expect: preconditions?.forRecord(resource) })
    if (result === 'stale') throw preconditionFailed(preconditions?.refusedBy, recordName(resource, recordId), 'it')
    if (result.status === 'not-found') throw recordNotFound()
    if (result.status === 'restricted') throw stillReferenced(resource, recordId, result)
    return noContent()
  }
}

/**
 * Numbered and offset pages of a search reach its first SEARCH_WINDOW matches (search-ranking.ts):
 * a page that starts past them is a 400 naming the parameter, which says how to go further.
 */
function checkSearchWindow(query: FetchQuery, filters: readonly StoreFilter[]): void {
  const { page } = query
  if (!page || page.kind === 'cursor' || !filters.some((f) => f.kind === 'search')) return
  const offset = page.kind === 'number' ? (page.number - 1) * page.size : page.offset
  if (offset < SEARCH_WINDOW) return
  const parameter = page.kind === 'number' ? 'page[number]' : 'page[offset]'
  throw httpError(
    400,
    `Pages of a search reach its first ${SEARCH_WINDOW.toLocaleString('en-US')} matches; ${parameter} starts past them (at match ${(offset + 1).toLocaleString('en-US')}): narrow the search, or walk it with page[after]`,
    { parameter },
  )
}
