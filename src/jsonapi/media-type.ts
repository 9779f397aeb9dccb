import { httpError, type JsonApiError } from './errors'

export const JSON_API = 'application/vnd.api+json'
/** The Content-Type of every response with a body. */
export const RESPONSE_CONTENT_TYPE = 'application/vnd.api+json; charset=utf-8'

/** The Atomic Operations extension, served at /api/v1/operations. */
export const ATOMIC_EXT = 'https://jsonapi.org/ext/atomic'
/** What /api/v1/operations answers with. */
export const ATOMIC_CONTENT_TYPE = `application/vnd.api+json; ext="${ATOMIC_EXT}"; charset=utf-8`

/**
 * The Cursor Pagination profile, as it names itself; its error types are pages under it. Applied
 * to a paged list when the client's Accept asks for it (see docs/pagination.md).
 */
export const CURSOR_PROFILE = 'http://jsonapi.org/profiles/ethanresnick/cursor-pagination/'
export const CURSOR_PROFILE_ERRORS = 'https://jsonapi.org/profiles/ethanresnick/cursor-pagination/'

/** The profile's URI as clients write it: http or https, with or without the final slash. */
const cursorProfileUri = /^https?:\/\/jsonapi\.org\/profiles\/ethanresnick\/cursor-pagination\/?$/

/** The extensions this server implements; a request naming any other gets 415 or 406. */
const supportedExtensions: ReadonlySet<string> = new Set([ATOMIC_EXT])

interface MediaType {
  readonly essence: string
  readonly params: ReadonlyMap<string, string>
}

/** Splits on `separator` outside double quotes. */
function splitOutsideQuotes(value: string, separator: string): string[] {
  const parts: string[] = []
  let quoted = false
  let start = 0
  for (let i = 0; i < value.length; i++) {
    const char = value[i]
    if (char === '"' && value[i - 1] !== '\\') quoted = !quoted
    else if (char === separator && !quoted) {
      parts.push(value.slice(start, i))
      start = i + 1
    }
  }
  parts.push(value.slice(start))
  return parts
}

function parseMediaType(value: string): MediaType {
  const [essence = '', ...rest] = splitOutsideQuotes(value, ';')
  const params = new Map<string, string>()
  for (const part of rest) {
    const at = part.indexOf('=')
    if (at === -1) continue
    const name = part.slice(0, at).trim().toLowerCase()
    let parameter = part.slice(at + 1).trim()
    if (parameter.startsWith('"') && parameter.endsWith('"')) parameter = parameter.slice(1, -1)
    params.set(name, parameter)
  }
  return { essence: essence.trim().toLowerCase(), params }
}

/** True when every parameter is one JSON:API allows and every named extension is supported. */
function jsonApiParamsSupported(params: ReadonlyMap<string, string>, allowQuality: boolean): boolean {
  for (const [name, value] of params) {
    if (name === 'profile') continue
    if (name === 'charset' && value.toLowerCase() === 'utf-8') continue
    if (name === 'q' && allowQuality) continue
    if (name === 'ext' && extensionsOf(params).every((uri) => supportedExtensions.has(uri))) continue
    return false
  }
  return true
}

/**
 * Checks the Content-Type of a request with a body: JSON:API (with only `ext`, `profile` or
 * `charset=utf-8`) or plain `application/json`; anything else is 415.
 */
export function checkContentType(header: string | null): JsonApiError | null {
  const source = { header: 'Content-Type' }
  if (!header) return httpError(415, `Content-Type must be ${JSON_API}`, source)
  const { essence, params } = parseMediaType(header)
  if (essence === JSON_API) {
    if (jsonApiParamsSupported(params, false)) return null
    return httpError(
      415,
      `${JSON_API} may carry only the ext, profile and charset=utf-8 parameters, and no extension this server lacks (got "${header}")`,
      source,
    )
  }
  if (essence === 'application/json') {
    const charset = params.get('charset')
    if (
      params.size === (charset === undefined ? 0 : 1) &&
      (charset === undefined || charset.toLowerCase() === 'utf-8')
    ) {
      return null
    }
    return httpError(415, `application/json may carry only charset=utf-8 (got "${header}")`, source)
  }
  return httpError(415, `Content-Type must be ${JSON_API} (got "${header}")`, source)
}

/** The ext URIs a media type's parameters name. */
function extensionsOf(params: ReadonlyMap<string, string>): string[] {
  return (params.get('ext') ?? '').split(/\s+/).filter((uri) => uri !== '')
}

/**
 * Scans an Accept header: true when it offers any JSON, or no JSON:API at all, or an instance of
 * JSON:API whose parameters `fit`; false when every JSON:API instance it lists is one that does not.
 */
function acceptable(header: string, fits: (params: ReadonlyMap<string, string>) => boolean): boolean {
  let sawJsonApi = false
  for (const range of splitOutsideQuotes(header, ',')) {
    const { essence, params } = parseMediaType(range)
    if (params.get('q') !== undefined && Number(params.get('q')) === 0) continue
    if (essence === '*/*' || essence === 'application/*' || essence === 'application/json') return true
    if (essence !== JSON_API) continue
    if (fits(params)) return true
    sawJsonApi = true
  }
  return !sawJsonApi
}

/**
 * Checks the Accept header: 406 when it lists the JSON:API media type only with parameters this
 * server cannot honour and offers nothing else JSON can satisfy. Other types alone (a browser's
 * text/html) are answered with JSON:API all the same, as HTTP allows.
 */
export function checkAccept(header: string | null): JsonApiError | null {
  // What nearly every client sends needs no parsing.
  if (!header || header === JSON_API || header === '*/*' || header === 'application/json') return null
  if (acceptable(header, (params) => jsonApiParamsSupported(params, true))) return null
  return httpError(
    406,
    `No acceptable representation: ${JSON_API} is offered without parameters other than ext and profile, and with no extension this server lacks`,
    { header: 'Accept' },
  )
}

export const EVENT_STREAM = 'text/event-stream'

/**
 * Whether an Accept header prefers Server-Sent Events to a JSON:API document: `text/event-stream`
 * acceptable (q above 0) and weighted above every range a JSON:API document fits, or as high and
 * listed first. EventSource sends `text/event-stream` alone; a generic client that lists both
 * (`application/vnd.api+json, text/event-stream`) gets the document.
 */
export function prefersEventStream(header: string | null): boolean {
  if (!header?.includes(EVENT_STREAM)) return false
  let stream = -1
  let document = -1
  let streamFirst = false
  for (const range of splitOutsideQuotes(header, ',')) {
    const { essence, params } = parseMediaType(range)
    const q = params.get('q') === undefined ? 1 : Number(params.get('q'))
    if (!(q > 0)) continue
    if (essence === EVENT_STREAM) {
      if (document < 0) streamFirst = true
      stream = Math.max(stream, q)
    } else if (
      essence === JSON_API ||
      essence === 'application/json' ||
      essence === 'application/*' ||
      essence === '*/*'
    ) {
      document = Math.max(document, q)
    }
  }
  return stream > 0 && (stream > document || (stream === document && streamFirst))
}

/** Whether a Content-Type is JSON:API with `extension` among its ext URIs. */
export function namesExtension(header: string | null, extension: string): boolean {
  if (!header) return false
  const { essence, params } = parseMediaType(header)
  return essence === JSON_API && extensionsOf(params).includes(extension)
}

/**
 * For an endpoint whose answers carry `extension`: 406 when Accept lists JSON:API only without it
 * (a client that takes any JSON, or sends no Accept, is answered all the same).
 */
export function checkAcceptsExtension(header: string | null, extension: string): JsonApiError | null {
  if (!header || acceptable(header, (params) => extensionsOf(params).includes(extension))) return null
  return httpError(406, `This endpoint answers ${JSON_API} with ext="${extension}"; the Accept header must allow it`, {
    header: 'Accept',
  })
}

/**
 * The URI by which an Accept header asks for the cursor pagination profile, as the client wrote it
 * (the answer names it back the same way), or null when it does not ask for it.
 */
export function requestedCursorProfile(header: string | null): string | null {
  // What nearly every client sends needs no parsing.
  if (!header?.includes('cursor-pagination')) return null
  for (const range of splitOutsideQuotes(header, ',')) {
    const { essence, params } = parseMediaType(range)
    if (essence !== JSON_API || (params.get('q') !== undefined && Number(params.get('q')) === 0)) continue
    const uri = (params.get('profile') ?? '').split(/\s+/).find((value) => cursorProfileUri.test(value))
    if (uri !== undefined) return uri
  }
  return null
}

/** The Content-Type of an answer the cursor pagination profile is applied to, naming it as the client did. */
export function profiledContentType(profile: string): string {
  return `${JSON_API}; profile="${profile}"; charset=utf-8`
}
