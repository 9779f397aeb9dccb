import { type CursorValues, encodeCursor } from '../jsonapi/cursor'
import { resourceObject, unlinkedResource, unlinkedResourceJson } from '../jsonapi/document'
import { type FieldError, httpError, recordNotFound, unprocessable } from '../jsonapi/errors'
import { requireId } from '../jsonapi/ids'
import { messages } from '../jsonapi/messages'
import { type IncludeTree, type PageLimits, parseFetchQuery, rejectQueryParameters } from '../jsonapi/query'
import { parseWriteDocument, type WriteRequest } from '../jsonapi/request-document'
import type { ResourceDescription } from '../resources/description'
import type { ResourceRegistry } from '../resources/registry'
import type { IncludeNode, IncludePlan, RecordGraph, SortKey, Store, StoredRecord, StoreFilter } from '../store/store'
import { documentOf } from './body-parser'
import { type ApiResponse, jsonApiResponse, jsonApiTextResponse, noContent, streamedDataResponse } from './responses'

/** How many records a list reads from the store at a time while it streams. */
const LIST_BATCH = 1000

/** What a handler gets from the request: the raw URL, the path id and the parsed body. */
export interface HandlerInput {
  readonly url: string
  readonly id?: string
  readonly body?: unknown
}

const nothing: IncludePlan = new Map()

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

/** The request's own URL, relative, with some query parameters set (or, for null, removed). */
function linkTo(url: URL, changes: Readonly<Record<string, string | null>>): string {
  const params = new URLSearchParams(url.search)
  for (const [name, value] of Object.entries(changes)) {
    if (value === null) params.delete(name)
    else params.set(name, value)
  }
  return `${url.pathname}?${params}`
}

/** Links of a numbered page: self, first, prev and next where they exist, last. */
function numberLinks(url: URL, page: { number: number; size: number }, total: number): Record<string, string> {
  const last = Math.max(1, Math.ceil(total / page.size))
  const link = (number: number) => linkTo(url, { 'page[number]': String(number), 'page[size]': String(page.size) })
  const links: Record<string, string> = { self: link(page.number), first: link(1) }
  if (page.number > 1) links.prev = link(page.number - 1)
  if (page.number < last) links.next = link(page.number + 1)
  links.last = link(last)
  return links
}

/** Sort keys turned around: a page before a cursor is read backwards from it. */
function reversed(sort: readonly SortKey[]): SortKey[] {
  return sort.map((key) => ({ field: key.field, descending: !key.descending }))
}

/**
 * The five operations for any resource type, driven by its description: one controller,
 * instantiated once per type.
 */
export class ResourceController {
  /** The plans of a single GET and of a list without `include`, made once. */
  private readonly defaultPlans: { readonly record: IncludePlan; readonly list: IncludePlan }

  constructor(
    private readonly resource: ResourceDescription,
    private readonly registry: ResourceRegistry,
    private readonly store: Store,
    private readonly basePath: string,
    private readonly pageLimits: PageLimits,
  ) {
    const defaultInclude: IncludeTree = new Map(resource.defaultInclude.map((name) => [name, new Map()]))
    this.defaultPlans = { record: planOf(resource, defaultInclude, true), list: nothing }
  }

  /** `scope` narrows the list before the client's filters: the books of one author, say. */
  async list({ url }: HandlerInput, scope: readonly StoreFilter[] = []): Promise<ApiResponse> {
    const { resource, registry, store } = this
    const query = parseFetchQuery(registry, resource, url, 'list', this.pageLimits)
    const plan = query.include ? planOf(resource, query.include, false) : this.defaultPlans.list
    const { sort, page } = query
    const filters = scope.length > 0 ? [...scope, ...query.filters] : query.filters
    // A search without a sort comes most relevant first; cursors keep to the id order, since
    // relevance shifts as the catalogue changes.
    const ranked = !query.sorted && page?.kind !== 'cursor' && filters.some((f) => f.kind === 'search')
    const plain = plan.size === 0 && query.fields.size === 0
    const render = (records: StoredRecord[], graph: RecordGraph) =>
      plain
        ? records.map((record) => unlinkedResourceJson(resource, record))
        : records.map((record) =>
            JSON.stringify(resourceObject({ registry, graph, fields: query.fields }, resource, record)),
          )
    const included = (graph: RecordGraph) =>
      graph.included.map((r) =>
        JSON.stringify(resourceObject({ registry, graph, fields: query.fields }, r.resource, r.record)),
      )
    const document = (data: string[], graph: RecordGraph, extra = '') => {
      const include = graph.included.length > 0 ? `,"included":[${included(graph).join(',')}]` : ''
      return `{"data":[${data.join(',')}]${include}${extra}}`
    }

    const sortValues = (record: StoredRecord): CursorValues =>
      sort.map((key) => (key.field === 'id' ? record.id : (record.attributes[key.field] as string)))
    const paginated = (total: number, links: Record<string, string>) =>
      `,"meta":${JSON.stringify({ total })},"links":${JSON.stringify(links)}`

    if (page?.kind === 'number') {
      const [{ records, graph }, total] = await Promise.all([
        store.list(resource, { filters, sort, ranked, limit: page.size, offset: (page.number - 1) * page.size }, plan),
        store.count(resource, filters),
      ])
      const links = numberLinks(new URL(url), page, total)
      return jsonApiTextResponse(200, document(render(records, graph), graph, paginated(total, links)))
    }
    if (page?.kind === 'cursor') {
      const backwards = page.before !== undefined
      const order = backwards ? reversed(sort) : sort
      // An empty position is the start (after) or the end (before) of the list.
      const from = page.before ?? page.after
      const position = from && from.length > 0 ? from : undefined
      const [{ records, graph }, total] = await Promise.all([
        store.list(resource, { filters, sort: order, limit: page.size, after: position }, plan),
        store.count(resource, filters),
      ])
      // Whether the list goes on past this page, in reading order: one more record is enough to know.
      const end = records.at(-1)
      const more =
        end !== undefined &&
        (await store.list(resource, { filters, sort: order, limit: 1, after: sortValues(end) }, nothing)).records
          .length > 0
      if (backwards) records.reverse()
      const parsed = new URL(url)
      const first = records[0]
      const last = records.at(-1)
      const at = (values: CursorValues) => encodeCursor(resource.type, sort, values)
      const links: Record<string, string> = {
        self: linkTo(parsed, {}),
        first: linkTo(parsed, { 'page[after]': '', 'page[before]': null, 'page[size]': String(page.size) }),
      }
      const earlier = backwards ? more : position !== undefined
      const later = backwards ? position !== undefined : more
      const before = first ? sortValues(first) : position
      const after = last ? sortValues(last) : position
      if (earlier && before) links.prev = linkTo(parsed, { 'page[after]': null, 'page[before]': at(before) })
      if (later && after) links.next = linkTo(parsed, { 'page[before]': null, 'page[after]': at(after) })
      return jsonApiTextResponse(200, document(render(records, graph), graph, paginated(total, links)))
    }
    if (plan.size > 0) {
      // `included` follows `data`, so a list with includes is gathered whole rather than streamed.
      const { records, graph } = await store.list(resource, { filters, sort, ranked, limit: -1 }, plan)
      return jsonApiTextResponse(200, document(render(records, graph), graph))
    }
    // Streamed a batch at a time: by keyset in sort order, or by offset when ranked by relevance,
    // which has no keyset.
    const first = await store.list(resource, { filters, sort, ranked, limit: LIST_BATCH }, plan)
    if (first.records.length < LIST_BATCH) {
      return jsonApiTextResponse(200, document(render(first.records, first.graph), first.graph))
    }
    let read = first.records.length
    let after: CursorValues | null = sortValues(first.records.at(-1) as StoredRecord)
    return streamedDataResponse(render(first.records, first.graph), async () => {
      if (after === null) return null
      const position = ranked ? { offset: read } : { after }
      const batch = await store.list(resource, { filters, sort, ranked, limit: LIST_BATCH, ...position }, plan)
      const last = batch.records.at(-1)
      read += batch.records.length
      after = batch.records.length < LIST_BATCH || !last ? null : sortValues(last)
      return batch.records.length === 0 ? null : render(batch.records, batch.graph)
    })
  }

  /** Checks the query of a single-record GET without reading anything (a related record that is null). */
  checkRecordQuery(url: string): void {
    parseFetchQuery(this.registry, this.resource, url, 'record', this.pageLimits)
  }

  async show({ url, id }: HandlerInput): Promise<ApiResponse> {
    const { resource, registry, store } = this
    const recordId = requireId(id)
    const query = parseFetchQuery(registry, resource, url, 'record', this.pageLimits)
    const plan = query.include ? planOf(resource, query.include, true) : this.defaultPlans.record
    const found = await store.findWithRelated(resource, recordId, plan)
    if (!found) throw recordNotFound()
    const context = { registry, graph: found.graph, fields: query.fields }
    const data = resourceObject(context, resource, found.record)
    const included = found.graph.included.map((r) => resourceObject(context, r.resource, r.record))
    return jsonApiResponse(200, included.length > 0 ? { data, included } : { data })
  }

  async create({ url, body }: HandlerInput): Promise<ApiResponse> {
    const { resource, registry, store } = this
    rejectQueryParameters(url)
    const write = parseWriteDocument(registry, resource, documentOf(body), { kind: 'create' })
    await this.rejectInvalid(write)
    const result = await store.create(resource, write.input)
    if (!result.ok) throw unprocessable(this.mustExist(new Set(result.missing)))
    const data = unlinkedResource(resource, result.record)
    return jsonApiResponse(201, { data }, { location: `${this.basePath}/${resource.type}/${data.id}` })
  }

  async update({ url, id, body }: HandlerInput): Promise<ApiResponse> {
    const { resource, registry, store } = this
    const recordId = requireId(id)
    rejectQueryParameters(url)
    const write = parseWriteDocument(registry, resource, documentOf(body), { kind: 'update', id: recordId })
    if (write.errors.length > 0 || write.missing.size > 0) {
      if (!(await store.find(resource, recordId))) throw recordNotFound()
      await this.rejectInvalid(write)
    }
    const result = await store.update(resource, recordId, write.input)
    if (!result) throw recordNotFound()
    if (!result.ok) throw unprocessable(this.mustExist(new Set(result.missing)))
    return jsonApiResponse(200, { data: unlinkedResource(resource, result.record) })
  }

  async remove({ url, id }: HandlerInput): Promise<ApiResponse> {
    const { resource, store } = this
    const recordId = requireId(id)
    rejectQueryParameters(url)
    const result = await store.delete(resource, recordId)
    if (result.status === 'not-found') throw recordNotFound()
    if (result.status === 'restricted') {
      const dependent = { singular: result.by.singular, plural: result.by.type }
      throw httpError(409, messages.stillReferenced(resource.singular, recordId, result.count, dependent))
    }
    return noContent()
  }

  /** Reports every failure of a write at once: missing related records first, then field errors. */
  private async rejectInvalid(write: WriteRequest): Promise<void> {
    if (write.errors.length === 0 && write.missing.size === 0) return
    const missing = new Set([
      ...write.missing,
      ...(await this.store.missingReferences(this.resource, write.input.toOne)),
    ])
    throw unprocessable([...this.mustExist(missing), ...write.errors])
  }

  /** "Author must exist" for each missing relationship, in the description's order. */
  private mustExist(missing: ReadonlySet<string>): FieldError[] {
    return Object.keys(this.resource.relationships)
      .filter((name) => missing.has(name))
      .map((name) => ({ detail: messages.mustExist(name), parameter: name, pointer: `data/attributes/${name}` }))
  }
}
