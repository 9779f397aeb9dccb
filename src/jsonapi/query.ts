import type { ResourceDescription } from '../model/description'
import type { SortKey, StoreFilter } from '../model/query'
import type { ResourceRegistry } from '../resources/registry'
import { invalidParameter } from './errors'
import type { RequestLimits } from './limits'
import {
  type Page,
  type PageLimits,
  type PageParameters,
  parseOffset,
  parsePage,
  parsePositive,
  parseSize,
} from './query-paging'
import { type IncludeTree, parseFields, parseFilter, parseInclude, parseSort } from './query-selection'

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

/** Everything that bounds what one fetch may ask for. */
export interface FetchLimits
  extends PageLimits,
    Pick<RequestLimits, 'maxSearchWords' | 'maxIncludeDepth' | 'maxIncludePaths' | 'maxFilterIds'> {}

const byId: SortKey = { field: 'id', descending: false }
const bracketed = /^(fields|filter|page)\[([^\]]*)\]$/

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
    if (seen.has(name)) throw invalidParameter(name, `Query parameter "${name}" is given more than once`)
    seen.add(name)
    const [, family, key = ''] = bracketed.exec(name) ?? []
    const listOnly =
      family === 'filter' || family === 'page' || name === 'sort' || Object.hasOwn(resource.plainFilters, name)
    if (listOnly && target === 'record') throw invalidParameter(name, `"${name}" applies to lists only`)

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
    else throw invalidParameter(name, `Unknown query parameter "${name}"`)
  }
  return { ...query, filters, page: parsePage(resource, query.sort, pages, limits, profile) }
}

/** For requests that take no query parameters (writes, relationship linkage): any one is a 400. */
export function rejectQueryParameters(url: string): void {
  const at = url.indexOf('?')
  if (at === -1 || at === url.length - 1) return
  const [name] = new URLSearchParams(url.slice(at + 1)).keys()
  if (name !== undefined) throw invalidParameter(name, `Unknown query parameter "${name}"`)
}
