import { type CursorValues, encodeCursor } from '../jsonapi/cursor'
import type { IncludeTree, Page } from '../jsonapi/query'
import type { ResourceDescription } from '../resources/description'
import type { ResourceRegistry } from '../resources/registry'
import { type SortKey, type Store, type StoredRecord, type StoreFilter, sortValuesOf } from '../store/store'
import { DocumentStream } from './document-stream'
import { type ApiResponse, documentResponse } from './responses'

/** How many records a list reads from the store at a time while it streams. */
export const LIST_BATCH = 1000

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
  readonly include: IncludeTree
  readonly fields: ReadonlyMap<string, ReadonlySet<string>>
  readonly filters: readonly StoreFilter[]
  readonly sort: readonly SortKey[]
  /** Most relevant first: a search without a sort, not paged by cursor. */
  readonly ranked: boolean
}

/** Reads one list request from the store and writes its document, in whichever of the three ways it asks. */
export class ListReader {
  private readonly document: DocumentStream

  constructor(private readonly request: ListRequest) {
    const { registry, store, resource, fields, include } = request
    this.document = new DocumentStream({
      registry,
      store,
      resource,
      fields,
      include,
      primaryLinks: [...include.keys()],
    })
  }

  /** page[number] and page[size]: an offset page, with meta.total and numbered links. */
  async numbered(page: Extract<Page, { kind: 'number' }>): Promise<ApiResponse> {
    const { resource, store, filters, sort, ranked, url } = this.request
    const { records, total } = await store.page(resource, {
      filters,
      sort,
      ranked,
      limit: page.size,
      offset: (page.number - 1) * page.size,
    })
    return this.respond([records], paginated(total, numberLinks(new URL(url), page, total)))
  }

  /** page[after] or page[before]: a keyset page from a cursor, with meta.total and cursor links. */
  async cursor(page: Extract<Page, { kind: 'cursor' }>): Promise<ApiResponse> {
    const { resource, store, filters, sort, url } = this.request
    const backwards = page.before !== undefined
    const order = backwards ? reversed(sort) : sort
    // An empty position is the start (after) or the end (before) of the list.
    const from = page.before ?? page.after
    const position = from && from.length > 0 ? from : undefined
    // One record more than the page: whether the list goes on past it, in reading order.
    const { records, total } = await store.page(resource, {
      filters,
      sort: order,
      limit: page.size + 1,
      after: position,
    })
    const more = records.length > page.size
    if (more) records.pop()
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
    return this.respond([records], paginated(total, links))
  }

  /** Every record, a batch at a time, as the store streams them. */
  async streamed(): Promise<ApiResponse> {
    const { resource, store, filters, sort, ranked } = this.request
    return this.respond(store.stream(resource, { filters, sort, ranked }, LIST_BATCH))
  }

  /** The values of a record's sort keys: where a keyset continues after it. */
  private sortValues(record: StoredRecord): CursorValues {
    return sortValuesOf(this.request.sort, record)
  }

  private respond(primary: AsyncIterable<readonly StoredRecord[]> | Iterable<readonly StoredRecord[]>, tail = '') {
    return documentResponse(200, this.document.chunks(primary, 'many', tail))
  }
}

/** The `meta` and `links` members of a paginated list document, as JSON text to append. */
function paginated(total: number, links: Record<string, string>): string {
  return `,"meta":${JSON.stringify({ total })},"links":${JSON.stringify(links)}`
}
