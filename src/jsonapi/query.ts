import type { ResourceDescription } from '../model/description'
import type { SortKey, StoreFilter } from '../model/query'
import type { ResourceRegistry } from '../resources/registry'
import { type CursorValues, decodeCursor } from './cursor'
import { type ErrorObject, httpError, JsonApiError } from './errors'
import { parseId } from './ids'
import type { RequestLimits } from './limits'
import { CURSOR_PROFILE_ERRORS, profiledContentType } from './media-type'
import { humanize, withArticle, words } from './messages'
import { storedText } from './visible-text'

/** Relationship paths to include, as a tree: `books.book_collection` is books -> book_collection. */
export type IncludeTree = ReadonlyMap<string, IncludeTree>

/**
 * Page-number pagination, the same window as an offset and a limit (`page[offset]`/`page[limit]`,
 * as Orbit and others send it), or cursor pagination after or before a record's position.
 */
export type Page =
  | { readonly kind: 'number'; readonly number: number; readonly size: number }
  | { readonly kind: 'offset'; readonly offset: number; readonly limit: number }
  | { readonly kind: 'cursor'; readonly size: number; readonly after?: CursorValues; readonly before?: CursorValues }

/** The JSON:API query parameters of a fetch, checked against the resource descriptions. */
export interface FetchQuery {
  /** Null when `include` was not given: the endpoint's default applies. */
  readonly include: IncludeTree | null
  /** Sparse fieldsets: plural type -> the attributes and relationships to render. */
  readonly fields: ReadonlyMap<string, ReadonlySet<string>>
  /** Always ends with `id`, so the order is total. */
  readonly sort: readonly SortKey[]
  /** Whether the client gave `sort`; a search without one is ranked by relevance. */
  readonly sorted: boolean
  readonly filters: readonly StoreFilter[]
  readonly page: Page | null
}

export interface PageLimits {
  readonly defaultSize: number
  readonly maxSize: number
}

/** Everything that bounds what one fetch may ask for. */
export interface FetchLimits
  extends PageLimits,
    Pick<RequestLimits, 'maxSearchWords' | 'maxIncludeDepth' | 'maxIncludePaths' | 'maxFilterIds'> {}

const byId: SortKey = { field: 'id', descending: false }
const bracketed = /^(fields|filter|page)\[([^\]]*)\]$/

function invalid(parameter: string, detail: string): JsonApiError {
  return httpError(400, detail, { parameter })
}

/** How many relationships `path` names, counted from its dots without splitting it. */
function pathDepth(path: string): number {
  let depth = 1
  for (let at = path.indexOf('.'); at !== -1; at = path.indexOf('.', at + 1)) depth++
  return depth
}

function parseInclude(
  registry: ResourceRegistry,
  resource: ResourceDescription,
  value: string,
  limits: FetchLimits,
): IncludeTree {
  const tree = new Map<string, Map<string, unknown>>()
  if (value === '') return tree as IncludeTree
  const paths = value.split(',')
  if (paths.length > limits.maxIncludePaths) {
    throw invalid('include', `include takes at most ${limits.maxIncludePaths} paths (got ${paths.length})`)
  }
  // Every path's depth before any path's names: a path a thousand levels deep costs a scan, no more.
  for (const path of paths) {
    const depth = pathDepth(path)
    if (depth > limits.maxIncludeDepth) {
      throw invalid(
        'include',
        `include paths go at most ${limits.maxIncludeDepth} relationships deep ("${path}" goes ${depth})`,
      )
    }
  }
  for (const path of paths) {
    let type = resource
    let level = tree
    for (const name of path.split('.')) {
      const relationship = Object.hasOwn(type.relationships, name) ? type.relationships[name] : undefined
      if (!relationship) {
        throw invalid(
          'include',
          `${humanize(withArticle(words(type.singular)))} has no relationship "${name}" (in include path "${path}")`,
        )
      }
      let next = level.get(name) as Map<string, Map<string, unknown>> | undefined
      if (!next) {
        next = new Map()
        level.set(name, next)
      }
      level = next
      type = registry.get(relationship.target)
    }
  }
  return tree as IncludeTree
}

function parseFields(registry: ResourceRegistry, parameter: string, type: string, value: string): ReadonlySet<string> {
  const resource = registry.all.find((r) => r.type === type)
  if (!resource) throw invalid(parameter, `There is no resource type "${type}"`)
  const names = value === '' ? [] : value.split(',')
  for (const name of names) {
    if (!Object.hasOwn(resource.attributes, name) && !Object.hasOwn(resource.relationships, name)) {
      throw invalid(
        parameter,
        `${humanize(withArticle(words(resource.singular)))} has no attribute or relationship "${name}"`,
      )
    }
  }
  return new Set(names)
}

function parseSort(resource: ResourceDescription, value: string): SortKey[] {
  const keys: SortKey[] = []
  for (const part of value.split(',')) {
    const descending = part.startsWith('-')
    const field = descending ? part.slice(1) : part
    if (field !== 'id' && !resource.sortable.includes(field)) {
      throw invalid(
        'sort',
        `${humanize(resource.type)} cannot be sorted by "${part}"; sort keys: id, ${resource.sortable.join(', ')}`,
      )
    }
    if (keys.some((k) => k.field === field)) throw invalid('sort', `sort names "${field}" twice`)
    keys.push({ field, descending })
  }
  if (keys.some((k) => k.field === 'id')) return keys
  // Ties go in the direction of the last key: `-name` is name then id, both descending, which an
  // index on (name, id) read backwards gives whole; a mixed order would be sorted on every read.
  return [...keys, { field: 'id', descending: keys.at(-1)?.descending ?? false }]
}

/**
 * The words of a search, as the stores read them: runs of letters and digits after NFKC
 * (src/store/*-search.ts take the same runs).
 */
function searchWordCount(text: string): number {
  return text.normalize('NFKC').match(/[\p{L}\p{N}]+/gu)?.length ?? 0
}

function parseFilter(
  resource: ResourceDescription,
  parameter: string,
  name: string,
  value: string,
  limits: FetchLimits,
): StoreFilter {
  const filter = Object.hasOwn(resource.filters, name) ? resource.filters[name] : undefined
  if (!filter) throw invalid(parameter, `${humanize(resource.type)} have no filter "${name}"`)
  if (filter.kind === 'attribute') {
    const attribute = resource.attributes[filter.attribute]
    return { kind: 'attribute', attribute: filter.attribute, value: attribute ? storedText(attribute, value) : value }
  }
  if (filter.kind === 'search') {
    const words = searchWordCount(value)
    if (words === 0) throw invalid(parameter, `${parameter} needs at least one word to search for`)
    if (words > limits.maxSearchWords) {
      throw invalid(parameter, `${parameter} takes at most ${limits.maxSearchWords} words (got ${words})`)
    }
    return { kind: 'search', text: value }
  }
  const relationship = resource.relationships[filter.relationship]
  const nullable = relationship?.kind === 'to-one' && !relationship.required
  const ids: number[] = []
  let orNone = false
  for (const part of value.split(',')) {
    const id = parseId(part)
    if (id !== null) ids.push(id)
    else if (part === 'null' && nullable) orNone = true
    else {
      throw invalid(
        parameter,
        `${parameter} takes record ids separated by commas${nullable ? ', or null' : ''} (got "${value}")`,
      )
    }
  }
  if (ids.length > limits.maxFilterIds) {
    throw invalid(parameter, `${parameter} takes at most ${limits.maxFilterIds} ids (got ${ids.length})`)
  }
  return { kind: 'relationship', relationship: filter.relationship, ids, orNone }
}

function parsePositive(parameter: string, value: string): number {
  const number = parseId(value)
  if (number === null) throw invalid(parameter, `${parameter} must be a positive integer (got "${value}")`)
  return number
}

const wholeNumber = /^(0|[1-9][0-9]{0,15})$/

/** `page[offset]`: how many records to skip, 0 or more. */
function parseOffset(parameter: string, value: string): number {
  const number = wholeNumber.test(value) ? Number(value) : Number.NaN
  if (!Number.isSafeInteger(number)) {
    throw invalid(parameter, `${parameter} must be a whole number, 0 or more (got "${value}")`)
  }
  return number
}

/**
 * `page[size]` or `page[limit]`: a positive integer up to the maximum. Past it, a client that asked
 * for the cursor pagination profile gets the profile's max-size-exceeded error for `page[size]`.
 */
function parseSize(parameter: string, value: string, limits: PageLimits, profile: string | null): number {
  const size = parsePositive(parameter, value)
  if (size <= limits.maxSize) return size
  const detail = `${parameter} is at most ${limits.maxSize} (got ${size})`
  if (!profile || parameter !== 'page[size]') throw invalid(parameter, detail)
  throw profileError(profile, 'max-size-exceeded', {
    detail,
    source: { parameter },
    meta: { page: { maxSize: limits.maxSize } },
  })
}

/** A 400 the cursor pagination profile defines, with its `type` link, answered as the profile applied. */
function profileError(
  profile: string,
  type: string,
  error: Pick<ErrorObject, 'detail' | 'source' | 'meta'>,
): JsonApiError {
  const object: ErrorObject = {
    status: '400',
    title: 'Bad Request',
    ...error,
    links: { type: `${CURSOR_PROFILE_ERRORS}${type}` },
  }
  return new JsonApiError(400, [object], { 'content-type': profiledContentType(profile) })
}

/** The `page[...]` parameters of a request, numbers checked as they were read; cursors as given. */
interface PageParameters {
  number?: number
  size?: number
  offset?: number
  limit?: number
  after?: string
  before?: string
}

/**
 * Which page the parameters ask for. `page[number]`/`page[size]` and `page[offset]`/`page[limit]`
 * are two spellings of one window (mixing them is a 400); `page[after]`/`page[before]` are cursor
 * pages, sized by `page[size]`. With the cursor pagination profile, `page[size]` alone starts a
 * cursor walk at the start of the list, as the profile has it.
 */
function parsePage(
  resource: ResourceDescription,
  sort: readonly SortKey[],
  given: PageParameters,
  limits: PageLimits,
  profile: string | null,
): Page | null {
  const { number, size, offset, limit, after, before } = given
  const offsetSpelling = offset !== undefined ? 'page[offset]' : limit !== undefined ? 'page[limit]' : null
  const cursored = after !== undefined || before !== undefined
  if (offsetSpelling && (number !== undefined || size !== undefined)) {
    const other = number !== undefined ? 'page[number]' : 'page[size]'
    throw invalid(
      offsetSpelling,
      `page[offset] and page[limit] spell page[number] and page[size] another way: use one spelling, not both (got ${offsetSpelling} and ${other})`,
    )
  }
  if (offsetSpelling && cursored) {
    throw invalid(
      offsetSpelling,
      `${offsetSpelling} cannot be combined with page[after] or page[before]; cursor pages take page[size]`,
    )
  }
  if (offsetSpelling) return { kind: 'offset', offset: offset ?? 0, limit: limit ?? limits.defaultSize }
  if (!cursored) {
    if (number === undefined && size !== undefined && profile) return { kind: 'cursor', size, after: [] }
    if (number === undefined && size === undefined) return null
    return { kind: 'number', number: number ?? 1, size: size ?? limits.defaultSize }
  }
  if (number !== undefined) {
    throw invalid('page[number]', 'page[number] cannot be combined with page[after] or page[before]')
  }
  if (after !== undefined && before !== undefined) {
    const detail = 'Give page[after] or page[before], not both'
    if (profile)
      throw profileError(profile, 'range-pagination-not-supported', { detail, source: { parameter: 'page[before]' } })
    throw invalid('page[before]', detail)
  }
  const position = (key: 'after' | 'before', cursor: string | undefined): CursorValues | undefined => {
    // An empty cursor starts cursor paging at the start (after) or at the end (before) of the list.
    if (cursor === undefined) return undefined
    if (cursor === '') return []
    const values = decodeCursor(resource.type, sort, cursor)
    if (!values) {
      throw invalid(
        `page[${key}]`,
        `page[${key}] is not a cursor of this list (with this sort); take cursors from its links or from meta.page.cursor of its records`,
      )
    }
    return values
  }
  return {
    kind: 'cursor',
    size: size ?? limits.defaultSize,
    after: position('after', after),
    before: position('before', before),
  }
}

/** What a fetch asks of its answer beyond the URL. */
export interface FetchOptions {
  /** The cursor pagination profile's URI, as the client's Accept named it: the profile applies to a page. */
  readonly cursorProfile?: string | null
}

/**
 * Reads the query string of a GET. `list` takes include, fields, sort, filters and pages; a
 * single record takes include and fields. Anything else, or anything malformed, is a 400 naming
 * the parameter.
 */
export function parseFetchQuery(
  registry: ResourceRegistry,
  resource: ResourceDescription,
  url: string,
  target: 'list' | 'record',
  limits: FetchLimits,
  options: FetchOptions = {},
): FetchQuery {
  const at = url.indexOf('?')
  const query: {
    include: IncludeTree | null
    fields: Map<string, ReadonlySet<string>>
    sort: SortKey[]
    sorted: boolean
  } = { include: null, fields: new Map(), sort: [byId], sorted: false }
  const filters: StoreFilter[] = []
  const profile = options.cursorProfile ?? null
  const pages: PageParameters = {}
  if (at === -1 || at === url.length - 1) return { ...query, filters, page: null }

  const seen = new Set<string>()
  for (const [name, value] of new URLSearchParams(url.slice(at + 1))) {
    if (seen.has(name)) throw invalid(name, `Query parameter "${name}" is given more than once`)
    seen.add(name)
    const [, family, key = ''] = bracketed.exec(name) ?? []
    const listOnly =
      family === 'filter' || family === 'page' || name === 'sort' || Object.hasOwn(resource.plainFilters, name)
    if (listOnly && target === 'record') throw invalid(name, `"${name}" applies to lists only`)

    if (name === 'include') query.include = parseInclude(registry, resource, value, limits)
    else if (name === 'sort') {
      query.sort = parseSort(resource, value)
      query.sorted = true
    } else if (family === 'fields') query.fields.set(key, parseFields(registry, name, key, value))
    else if (family === 'filter') filters.push(parseFilter(resource, name, key, value, limits))
    else if (Object.hasOwn(resource.plainFilters, name)) {
      filters.push(parseFilter(resource, name, resource.plainFilters[name] as string, value, limits))
    } else if (family === 'page' && key === 'number') pages.number = parsePositive(name, value)
    else if (family === 'page' && key === 'size') pages.size = parseSize(name, value, limits, profile)
    else if (family === 'page' && key === 'offset') pages.offset = parseOffset(name, value)
    else if (family === 'page' && key === 'limit') pages.limit = parseSize(name, value, limits, profile)
    else if (family === 'page' && (key === 'after' || key === 'before')) pages[key] = value
    else throw invalid(name, `Unknown query parameter "${name}"`)
  }
  return { ...query, filters, page: parsePage(resource, query.sort, pages, limits, profile) }
}

/** For requests that take no query parameters (writes, relationship linkage): any one is a 400. */
export function rejectQueryParameters(url: string): void {
  const at = url.indexOf('?')
  if (at === -1 || at === url.length - 1) return
  const [name] = new URLSearchParams(url.slice(at + 1)).keys()
  if (name !== undefined) throw invalid(name, `Unknown query parameter "${name}"`)
}
