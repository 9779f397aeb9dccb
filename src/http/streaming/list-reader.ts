import { type CursorValues, cursorEncoder } from '../../jsonapi/cursor'
import { cursorMembers } from '../../jsonapi/document'
import { profiledContentType } from '../../jsonapi/media-type'
import type { Page } from '../../jsonapi/query-paging'
import type { IncludeTree } from '../../jsonapi/query-selection'
import type { ResourceDescription } from '../../model/description'
import { type SortKey, type StoreFilter, sortValuesOf } from '../../model/query'
import type { Id, StoredRecord } from '../../model/record'
import type { ResourceRegistry } from '../../resources/registry'
import { pageMatches, type RecordMatches } from '../../service/search-matches'
import type { Store } from '../../store/store'
import { type ApiResponse, documentResponse } from '../responses'
import { DocumentStream } from './document-stream'

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

/**
 * Links that differ only in two numeric page parameters (`page[number]` and `page[size]`, say):
 * the query is serialized once, as URLSearchParams would with those two set, and each link fills
 * in the two numbers, which need no encoding. It gives linkTo's text for a fraction of its cost.
 */
function pageLinker(url: URL, names: readonly [string, string]): (first: number, second: number) => string {
  const params = new URLSearchParams(url.search)
  for (const name of names) params.set(name, '')
  // Serialized once: each pair is encoded alone and joined by "&", which no encoded pair holds.
  // The two set above are left as "<name>=", for each link to fill in.
  const pairs: string[] = params.toString().split('&')
  const keys = [...params.keys()]
  const firstAt = keys.indexOf(names[0])
  const secondAt = keys.indexOf(names[1])
  const firstHead = pairs[firstAt] as string
  const secondHead = pairs[secondAt] as string
  return (first, second) => {
    pairs[firstAt] = `${firstHead}${first}`
    pairs[secondAt] = `${secondHead}${second}`
    return `${url.pathname}?${pairs.join('&')}`
  }
}

/** A page link: a relative URL, or null where the cursor pagination profile wants one that is not there. */
type PageLinks = Record<string, string | null | undefined>

/**
 * Links of a numbered page: self, first, prev and next where they exist, last. `none` stands for
 * prev or next where there is none: left out, or null under the cursor pagination profile.
 */
function numberLinks(
  url: URL,
  page: { number: number; size: number },
  total: number,
  none: null | undefined,
): PageLinks {
  const last = Math.max(1, Math.ceil(total / page.size))
  const linked = pageLinker(url, ['page[number]', 'page[size]'])
  const link = (number: number) => linked(number, page.size)
  return {
    self: link(page.number),
    first: link(1),
    prev: page.number > 1 ? link(page.number - 1) : none,
    next: page.number < last ? link(page.number + 1) : none,
    last: link(last),
  }
}

/**
 * The same links for a page asked for as `page[offset]`/`page[limit]`, in that spelling: prev is
 * the `limit` records before (from 0 at least), next the ones after, last the final `limit` records.
 */
function offsetLinks(
  url: URL,
  page: { offset: number; limit: number },
  total: number,
  none: null | undefined,
): PageLinks {
  const linked = pageLinker(url, ['page[offset]', 'page[limit]'])
  const link = (offset: number) => linked(offset, page.limit)
  return {
    self: link(page.offset),
    first: link(0),
    prev: page.offset > 0 ? link(Math.max(0, page.offset - page.limit)) : none,
    next: page.offset + page.limit < total ? link(page.offset + page.limit) : none,
    last: link(Math.max(0, total - page.limit)),
  }
}

/** A record's matches as meta members, or empty. */
function matchesMembers(matches: ReadonlyMap<Id, RecordMatches> | undefined, record: StoredRecord): string {
  const found = matches?.get(record.id)
  return found ? `"matches":${JSON.stringify(found)}` : ''
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
  /** The request named `include`: `included` is written even when empty (DocumentRequest.compound). */
  readonly compound: boolean
  readonly fields: ReadonlyMap<string, ReadonlySet<string>>
  readonly filters: readonly StoreFilter[]
  readonly sort: readonly SortKey[]
  /** Most relevant first: a search without a sort, not paged by cursor. */
  readonly ranked: boolean
  /**
   * The cursor pagination profile's URI as the client asked for it, or null: pages then carry
   * prev and next always (null where there is none) and say so in their Content-Type.
   */
  readonly profile: string | null
  /**
   * A page of at most LIST_BATCH records that includes no to-many relationship: its size is bounded
   * whatever the data, so it is answered whole and tagged by its bytes, with no store version read
   * before it.
   */
  readonly bounded: boolean
  /** The client's: a search stops when it aborts (SearchOrder.signal). */
  readonly signal?: AbortSignal
}

/** A page varies with the profile the client's Accept asks for. */
const varyByAccept = Object.freeze({ vary: 'Accept' })

/** Reads one list request from the store and writes its document, in whichever of the three ways it asks. */
export class ListReader {
  private readonly document: DocumentStream
  /** A page's link where there is none: left out, or null under the profile. */
  private readonly none: null | undefined
  private encoder?: (values: CursorValues) => string

  constructor(private readonly request: ListRequest) {
    this.none = request.profile ? null : undefined
    const { registry, store, resource, fields, include, compound } = request
    this.document = new DocumentStream({
      registry,
      store,
      resource,
      fields,
      include,
      primaryLinks: [...include.keys()],
      compound,
    })
  }

  /**
   * page[number] and page[size], or page[offset] and page[limit]: a window at an offset, with
   * meta.total and links in the spelling the request used.
   */
  async windowed(page: Extract<Page, { kind: 'number' | 'offset' }>): Promise<ApiResponse> {
    const { resource, store, filters, sort, ranked, url, signal } = this.request
    const limit = page.kind === 'number' ? page.size : page.limit
    const { records, total, capped } = await store.page(resource, {
      filters,
      sort,
      ranked,
      signal,
      limit,
      offset: page.kind === 'number' ? (page.number - 1) * page.size : page.offset,
    })
    const parsed = new URL(url)
    const links =
      page.kind === 'number' ? numberLinks(parsed, page, total, this.none) : offsetLinks(parsed, page, total, this.none)
    return this.page(records, total, links, capped)
  }

  /** page[after] or page[before]: a keyset page from a cursor, with meta.total and cursor links. */
  async cursor(page: Extract<Page, { kind: 'cursor' }>): Promise<ApiResponse> {
    const { resource, store, filters, sort, url, signal } = this.request
    const backwards = page.before !== undefined
    const order = backwards ? reversed(sort) : sort
    // An empty position is the start (after) or the end (before) of the list.
    const from = page.before ?? page.after
    const position = from && from.length > 0 ? from : undefined
    // One record more than the page: whether the list goes on past it, in reading order.
    const { records, total, capped } = await store.page(resource, {
      filters,
      sort: order,
      signal,
      limit: page.size + 1,
      after: position,
    })
    const more = records.length > page.size
    if (more) records.pop()
    if (backwards) records.reverse()
    const parsed = new URL(url)
    const first = records[0]
    const last = records.at(-1)
    const at = this.cursors()
    const earlier = backwards ? more : position !== undefined
    const later = backwards ? position !== undefined : more
    const before = first ? this.sortValues(first) : position
    const after = last ? this.sortValues(last) : position
    const links: PageLinks = {
      self: linkTo(parsed, {}),
      first: linkTo(parsed, { 'page[after]': '', 'page[before]': null, 'page[size]': String(page.size) }),
      prev: earlier && before ? linkTo(parsed, { 'page[after]': null, 'page[before]': at(before) }) : this.none,
      next: later && after ? linkTo(parsed, { 'page[before]': null, 'page[after]': at(after) }) : this.none,
    }
    return this.page(records, total, links, capped)
  }

  /** Every record, a batch at a time, as the store streams them. */
  async streamed(): Promise<ApiResponse> {
    const { resource, store, filters, sort, ranked } = this.request
    const batches = store.stream(resource, { filters, sort, ranked }, LIST_BATCH)
    if (!this.searchText()) return this.respond(batches)
    // Each batch's matches are read as it comes, and written with it: the stream writes a batch
    // whole before it asks for the next.
    let current: Map<Id, RecordMatches> | undefined
    const reader = this
    async function* matched() {
      for await (const batch of batches) {
        current = await reader.matches(batch)
        yield batch
      }
    }
    return documentResponse(
      200,
      this.document.chunks(matched(), 'many', '', (record) => matchesMembers(current, record)),
    )
  }

  /**
   * A whole list read already (see ResourceController.shortList): bounded, so answered whole and
   * tagged by its bytes, however long its text.
   */
  async whole(records: readonly StoredRecord[]): Promise<ApiResponse> {
    const matches = await this.matches(records)
    const itemMeta = matches ? (record: StoredRecord) => matchesMembers(matches, record) : undefined
    const text = this.document.plainText(records, '', itemMeta)
    if (text !== null) return { status: 200, body: text }
    return documentResponse(200, this.document.chunks([records], 'many', '', itemMeta), Infinity)
  }

  /** The values of a record's sort keys: where a keyset continues after it. */
  private sortValues(record: StoredRecord): CursorValues {
    return sortValuesOf(this.request.sort, record)
  }

  private respond(primary: AsyncIterable<readonly StoredRecord[]> | Iterable<readonly StoredRecord[]>) {
    return documentResponse(200, this.document.chunks(primary, 'many'))
  }

  /** Where a search's words matched in each record of a page (meta.matches); undefined with no search. */
  private async matches(records: readonly StoredRecord[]): Promise<Map<Id, RecordMatches> | undefined> {
    const { registry, resource, store } = this.request
    const text = this.searchText()
    if (text === undefined || records.length === 0) return undefined
    return pageMatches(registry, resource, records, text, (type, ids) => store.findMany(type, ids))
  }

  private searchText(): string | undefined {
    const search = this.request.filters.find((filter) => filter.kind === 'search')
    return search?.kind === 'search' ? search.text : undefined
  }

  /** The cursors of this list's positions, made once per list. */
  private cursors(): (values: CursorValues) => string {
    this.encoder ??= cursorEncoder(this.request.resource.type, this.request.sort)
    return this.encoder
  }

  /**
   * A page: its records, each with its item cursor (`meta.page.cursor`), then meta.total and links.
   * It varies with Accept, and says when the profile is applied. A ranked page has no item
   * cursors: cursors follow the sort keys, and relevance is none of them. A search that matched
   * more than SEARCH_WINDOW records says so: its total is that many, and `totalIsLowerBound`.
   */
  private async page(
    records: readonly StoredRecord[],
    total: number,
    links: PageLinks,
    capped: true | undefined,
  ): Promise<ApiResponse> {
    const { sort, ranked, profile } = this.request
    const encode = this.cursors()
    const matches = await this.matches(records)
    const itemMeta = (record: StoredRecord) => {
      const members = ranked ? [] : [cursorMembers(encode(sortValuesOf(sort, record)))]
      const found = matchesMembers(matches, record)
      if (found) members.push(found)
      return members.join(',')
    }
    const meta = capped ? { total, totalIsLowerBound: true } : { total }
    const tail = `,"meta":${JSON.stringify(meta)},"links":${JSON.stringify(links)}`
    const headers = profile ? { 'content-type': profiledContentType(profile), vary: 'Accept' } : varyByAccept
    // A bounded page of plain records is written at once, without the stream's machinery.
    const text = this.request.bounded ? this.document.plainText(records, tail, itemMeta) : null
    if (text !== null) return { status: 200, body: text, headers }
    const pieces = this.document.chunks([records], 'many', tail, itemMeta)
    const answer = await documentResponse(200, pieces, this.request.bounded ? Infinity : undefined)
    return { ...answer, headers }
  }
}
