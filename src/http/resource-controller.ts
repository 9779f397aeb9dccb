import type { Server } from 'bun'
import { resourceObject, unlinkedResource } from '../jsonapi/document'
import { httpError, recordNotFound } from '../jsonapi/errors'
import { requireId } from '../jsonapi/ids'
import { type FetchLimits, type FetchQuery, parseFetchQuery, rejectQueryParameters } from '../jsonapi/query'
import type { IncludeTree } from '../jsonapi/query-selection'
import { parseWriteDocument } from '../jsonapi/request-document'
import type { ResourceDescription } from '../model/description'
import type { IncludeNode, IncludePlan, StoreFilter } from '../model/query'
import type { ResourceRegistry } from '../resources/registry'
import { WriteService } from '../service/write-service'
import { SEARCH_WINDOW } from '../store/search-ranking'
import type { Store } from '../store/store'
import type { WritePreconditions } from './conditional'
import { recordState } from './etag'
import { documentOf } from './parsed-body'
import type { OffloadedRead, ReadOffload } from './read-threads/read-calls'
import { listPlace, type ReadPlace, recordPlace, runsHere, shortList } from './read-threads/read-place'
import { type ApiResponse, documentResponse, noContent, stateResponse } from './responses'
import { type SearchLane, type SearchLanes, searchKey } from './search-lanes'
import { DocumentStream } from './streaming/document-stream'
import { ListReader } from './streaming/list-reader'
import type { LongAnswers } from './streaming/long-answers'

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
  /** Where a single GET without `include` runs (see recordPlace). */
  private readonly defaultPlace: ReadPlace
  private readonly writes: WriteService

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
    /** Where searches run by what they cost (see search-lanes.ts); absent in a read worker. */
    private readonly searchLanes?: SearchLanes,
  ) {
    this.defaultInclude = new Map(resource.defaultInclude.map((name) => [name, new Map()]))
    this.defaultPlan = planOf(resource, this.defaultInclude, true)
    this.defaultPlace = recordPlace(registry, resource, this.defaultInclude)
    this.writes = new WriteService(registry, store)
  }

  /**
   * `scope` narrows the list before the client's filters: the books of one author, say. Where it
   * runs is listPlace's to say. A short counted list is answered from one read; any other list but
   * a bounded page may be long enough to stream: it takes a long-answer slot of its client first
   * (503 when none is left), and the store's version is read before the list, to tag it.
   */
  async list(input: HandlerInput, scope: readonly StoreFilter[] = []): Promise<ApiResponse> {
    const { url, acceptEncoding, cursorProfile = null } = input
    const { resource, registry, store } = this
    const query = parseFetchQuery(registry, resource, url, 'list', this.limits, { cursorProfile })
    const filters = scope.length > 0 ? [...scope, ...query.filters] : query.filters
    checkSearchWindow(query, filters)
    const { place, bounded } = listPlace(registry, resource, query, filters)
    if (place === 'counted') {
      const records = await shortList(store, resource, query, filters)
      // Answered whole, so tagged by its bytes: no version is needed.
      if (records) return this.reader(query, false, url, cursorProfile, filters).whole(records)
    }
    const signal = input.request?.signal
    const run = async (lane: SearchLane): Promise<ApiResponse> => {
      const { offload } = this
      if (offload && !(await runsHere(place, store, resource, filters, offload.oneCore))) {
        const offloaded: OffloadedRead = { op: 'list', type: resource.type, url, scope, cursorProfile, acceptEncoding }
        return offload.run(offloaded, { lane, signal })
      }
      const reader = this.reader(query, bounded, url, cursorProfile, filters, signal)
      const { page } = query
      if (page?.kind === 'number' || page?.kind === 'offset') return reader.windowed(page)
      if (page?.kind === 'cursor') return reader.cursor(page)
      return reader.streamed()
    }
    const search = filters.find((filter) => filter.kind === 'search')
    const { searchLanes } = this
    const read = (): Promise<ApiResponse> =>
      search && searchLanes
        ? searchLanes.run(searchKey(resource.type, JSON.stringify(scope), search.text), signal, run)
        : run('ordinary')
    if (bounded) return read()
    const long = async () => {
      const version = await store.version()
      return { ...(await read()), version }
    }
    const { longAnswers } = this
    return longAnswers && input.request ? longAnswers.run(input.request, input.server ?? null, long) : long()
  }

  private reader(
    query: FetchQuery,
    bounded: boolean,
    url: string,
    cursorProfile: string | null,
    filters: readonly StoreFilter[],
    /** The client's: a search stops when it aborts (see SearchOrder.signal). */
    signal?: AbortSignal,
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
      compound: query.include !== null,
      fields: query.fields,
      filters,
      sort: query.sort,
      ranked,
      profile: page ? cursorProfile : null,
      bounded,
      signal,
    })
  }

  /**
   * Checks the query of a single-record GET without reading anything (a related record that is
   * null); whether it names include, which makes its answer a compound document.
   */
  checkRecordQuery(url: string): { readonly compound: boolean } {
    return { compound: parseFetchQuery(this.registry, this.resource, url, 'record', this.limits).include !== null }
  }

  async show({ url, id, acceptEncoding }: HandlerInput): Promise<ApiResponse> {
    const { resource, registry, store } = this
    const recordId = requireId(id)
    const query = parseFetchQuery(registry, resource, url, 'record', this.limits)
    const include = query.include ?? this.defaultInclude
    if ((query.include ? recordPlace(registry, resource, include) : this.defaultPlace) === 'thread') {
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
        compound: query.include !== null,
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
    // A request that names include gets `included` even empty (JSON:API 1.1); a default include only when it found something.
    const compound = included.length > 0 || query.include !== null
    return stateResponse(200, compound ? { data, included } : { data }, recordState(resource, found.record))
  }

  async create({ url, body }: HandlerInput): Promise<ApiResponse> {
    const { resource, registry } = this
    rejectQueryParameters(url)
    const write = parseWriteDocument(registry, resource, documentOf(body), { kind: 'create' })
    const record = await this.writes.create(resource, write)
    const data = unlinkedResource(resource, record)
    const location = `${this.basePath}/${resource.type}/${data.id}`
    return stateResponse(201, { data }, recordState(resource, record), { location })
  }

  async update({ url, id, body, preconditions }: HandlerInput): Promise<ApiResponse> {
    const { resource, registry } = this
    const recordId = requireId(id)
    rejectQueryParameters(url)
    const write = parseWriteDocument(registry, resource, documentOf(body), { kind: 'update', id: recordId })
    const record = await this.writes.update(resource, recordId, write, preconditions?.forRecord(resource))
    return stateResponse(200, { data: unlinkedResource(resource, record) }, recordState(resource, record))
  }

  async remove({ url, id, preconditions }: HandlerInput): Promise<ApiResponse> {
    const { resource } = this
    const recordId = requireId(id)
    rejectQueryParameters(url)
    await this.writes.delete(resource, recordId, preconditions?.forRecord(resource))
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
