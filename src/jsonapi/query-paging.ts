import type { ResourceDescription } from '../model/description'
import type { SortKey } from '../model/query'
import { type CursorValues, decodeCursor } from './cursor'
import { type ErrorObject, invalidParameter, JsonApiError } from './errors'
import { parseId } from './ids'
import { CURSOR_PROFILE_ERRORS, profiledContentType } from './media-type'

/**
 * The `page[...]` query parameters of a list: each number checked as it is read, then the page they
 * ask for together (query.ts reads the query string).
 */

/**
 * Page-number pagination, the same window as an offset and a limit (`page[offset]`/`page[limit]`,
 * as Orbit and others send it), or cursor pagination after or before a record's position.
 */
export type Page =
  | { readonly kind: 'number'; readonly number: number; readonly size: number }
  | { readonly kind: 'offset'; readonly offset: number; readonly limit: number }
  | { readonly kind: 'cursor'; readonly size: number; readonly after?: CursorValues; readonly before?: CursorValues }

export interface PageLimits {
  readonly defaultSize: number
  readonly maxSize: number
}

export function parsePositive(parameter: string, value: string): number {
  const number = parseId(value)
  if (number === null) throw invalidParameter(parameter, `${parameter} must be a positive integer (got "${value}")`)
  return number
}

const wholeNumber = /^(0|[1-9][0-9]{0,15})$/

/** `page[offset]`: how many records to skip, 0 or more. */
export function parseOffset(parameter: string, value: string): number {
  const number = wholeNumber.test(value) ? Number(value) : Number.NaN
  if (!Number.isSafeInteger(number)) {
    throw invalidParameter(parameter, `${parameter} must be a whole number, 0 or more (got "${value}")`)
  }
  return number
}

/**
 * `page[size]` or `page[limit]`: a positive integer up to the maximum. Past it, a client that asked
 * for the cursor pagination profile gets the profile's max-size-exceeded error for `page[size]`.
 */
export function parseSize(parameter: string, value: string, limits: PageLimits, profile: string | null): number {
  const size = parsePositive(parameter, value)
  if (size <= limits.maxSize) return size
  const detail = `${parameter} is at most ${limits.maxSize} (got ${size})`
  if (!profile || parameter !== 'page[size]') throw invalidParameter(parameter, detail)
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
export interface PageParameters {
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
export function parsePage(
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
    throw invalidParameter(
      offsetSpelling,
      `page[offset] and page[limit] spell page[number] and page[size] another way: use one spelling, not both (got ${offsetSpelling} and ${other})`,
    )
  }
  if (offsetSpelling && cursored) {
    throw invalidParameter(
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
    throw invalidParameter('page[number]', 'page[number] cannot be combined with page[after] or page[before]')
  }
  if (after !== undefined && before !== undefined) {
    const detail = 'Give page[after] or page[before], not both'
    if (profile)
      throw profileError(profile, 'range-pagination-not-supported', { detail, source: { parameter: 'page[before]' } })
    throw invalidParameter('page[before]', detail)
  }
  const position = (key: 'after' | 'before', cursor: string | undefined): CursorValues | undefined => {
    // An empty cursor starts cursor paging at the start (after) or at the end (before) of the list.
    if (cursor === undefined) return undefined
    if (cursor === '') return []
    const values = decodeCursor(resource.type, sort, cursor)
    if (!values) {
      throw invalidParameter(
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
