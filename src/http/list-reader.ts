import { type CursorValues, encodeCursor } from '../jsonapi/cursor'
import { resourceObject, unlinkedResourceJson } from '../jsonapi/document'
import type { Page } from '../jsonapi/query'
import type { ResourceDescription } from '../resources/description'
import type { ResourceRegistry } from '../resources/registry'
import type { IncludePlan, RecordGraph, SortKey, Store, StoredRecord, StoreFilter } from '../store/store'
import { type ApiResponse, jsonApiTextResponse, streamedDataResponse } from './responses'

/** How many records a list reads from the store at a time while it streams. */
const LIST_BATCH = 1000
const nothing: IncludePlan = new Map()

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

export interface ListRequest {
  readonly resource: ResourceDescription
  readonly registry: ResourceRegistry
  readonly store: Store
  /** The request's URL: page links are built from it. */
  readonly url: string
  readonly plan: IncludePlan
  readonly fields: ReadonlyMap<string, ReadonlySet<string>>
  readonly filters: readonly StoreFilter[]
  readonly sort: readonly SortKey[]
  /** Most relevant first: a search without a sort, not paged by cursor. */
  readonly ranked: boolean
}

/** Reads one list request from the store and writes its document, in whichever of the four ways it asks. */
export class ListReader {
  constructor(private readonly request: ListRequest) {}

  /** page[number] and page[size]: an offset page, with meta.total and numbered links. */
  async numbered(page: Extract<Page, { kind: 'number' }>): Promise<ApiResponse> {
    const { resource, store, filters, sort, ranked, plan, url } = this.request
    const [{ records, graph }, total] = await Promise.all([
      store.list(resource, { filters, sort, ranked, limit: page.size, offset: (page.number - 1) * page.size }, plan),
      store.count(resource, filters),
    ])
    return jsonApiTextResponse(
      200,
      this.document(records, graph, paginated(total, numberLinks(new URL(url), page, total))),
    )
  }

  /** page[after] or page[before]: a keyset page from a cursor, with meta.total and cursor links. */
  async cursor(page: Extract<Page, { kind: 'cursor' }>): Promise<ApiResponse> {
    const { resource, store, filters, sort, plan, url } = this.request
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
      (await store.list(resource, { filters, sort: order, limit: 1, after: this.sortValues(end) }, nothing)).records
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
    const before = first ? this.sortValues(first) : position
    const after = last ? this.sortValues(last) : position
    if (earlier && before) links.prev = linkTo(parsed, { 'page[after]': null, 'page[before]': at(before) })
    if (later && after) links.next = linkTo(parsed, { 'page[before]': null, 'page[after]': at(after) })
    return jsonApiTextResponse(200, this.document(records, graph, paginated(total, links)))
  }

  /** Every record at once, for a list whose `included` must follow its data. */
  async whole(): Promise<ApiResponse> {
    const { resource, store, filters, sort, ranked, plan } = this.request
    const { records, graph } = await store.list(resource, { filters, sort, ranked, limit: -1 }, plan)
    return jsonApiTextResponse(200, this.document(records, graph))
  }

  /**
   * Every record, streamed a batch at a time: by keyset in sort order, or by offset when ranked
   * by relevance, which has no keyset.
   */
  async streamed(): Promise<ApiResponse> {
    const { resource, store, filters, sort, ranked, plan } = this.request
    const first = await store.list(resource, { filters, sort, ranked, limit: LIST_BATCH }, plan)
    if (first.records.length < LIST_BATCH) return jsonApiTextResponse(200, this.document(first.records, first.graph))
    let read = first.records.length
    let after: CursorValues | null = this.sortValues(first.records.at(-1) as StoredRecord)
    return streamedDataResponse(this.render(first.records, first.graph), async () => {
      if (after === null) return null
      const position = ranked ? { offset: read } : { after }
      const batch = await store.list(resource, { filters, sort, ranked, limit: LIST_BATCH, ...position }, plan)
      const last = batch.records.at(-1)
      read += batch.records.length
      after = batch.records.length < LIST_BATCH || !last ? null : this.sortValues(last)
      return batch.records.length === 0 ? null : this.render(batch.records, batch.graph)
    })
  }

  /** The values of a record's sort keys: where a keyset continues after it. */
  private sortValues(record: StoredRecord): CursorValues {
    return this.request.sort.map((key) => (key.field === 'id' ? record.id : (record.attributes[key.field] as string)))
  }

  /** Each record's JSON; the prepared fast path when nothing is included and no fieldset applies. */
  private render(records: readonly StoredRecord[], graph: RecordGraph): string[] {
    const { resource, registry, fields, plan } = this.request
    if (plan.size === 0 && fields.size === 0) return records.map((record) => unlinkedResourceJson(resource, record))
    return records.map((record) => JSON.stringify(resourceObject({ registry, graph, fields }, resource, record)))
  }

  private document(records: readonly StoredRecord[], graph: RecordGraph, extra = ''): string {
    const { registry, fields } = this.request
    const included = graph.included.map((r) =>
      JSON.stringify(resourceObject({ registry, graph, fields }, r.resource, r.record)),
    )
    const member = included.length > 0 ? `,"included":[${included.join(',')}]` : ''
    return `{"data":[${this.render(records, graph).join(',')}]${member}${extra}}`
  }
}

/** The `meta` and `links` members of a paginated list document, as JSON text to append. */
function paginated(total: number, links: Record<string, string>): string {
  return `,"meta":${JSON.stringify({ total })},"links":${JSON.stringify(links)}`
}
