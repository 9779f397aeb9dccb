import type { ErrorObject } from '../jsonapi/errors'
import { RESPONSE_CONTENT_TYPE } from '../jsonapi/media-type'
import {
  COMPRESS_MIN_CHARS,
  type Coding,
  codingSuffix,
  encodeStream,
  encodeText,
  negotiateCoding,
  textStream,
} from './compression'
import { bytesTag, parseTags, versionTag, weaklyMatches } from './etag'

const encoder = new TextEncoder()

/**
 * What a handler answers: a status, a body and any headers beyond the content type. The route
 * adapter hands it to Elysia's `set`, so Elysia builds the one Response, request id included;
 * returning a ready Response instead makes Elysia copy headers into it on every request.
 */
export interface ApiResponse {
  readonly status: number
  /** JSON text, a stream of it, or null for no body. */
  readonly body: string | ReadableStream<Uint8Array> | null
  readonly headers?: Readonly<Record<string, string>>
  /**
   * The stored state of the one record (or to-many linkage) the answer shows (see etag.ts): its
   * ETag then carries it, for If-Match.
   */
  readonly state?: string
  /** The store's version read before the answer was read: the weak ETag of a streamed body. */
  readonly version?: string | null
  /** The content coding a read worker already gave a streamed body (null: none). */
  readonly coding?: Coding | null
  /** Gives back the long-answer slot this answer holds until it has been sent (see long-answers.ts). */
  readonly release?: () => void
  /** A read thread's CPU time for the answer, without its wait in the queue (see search-lanes.ts). */
  readonly spentMs?: number
}

/** A JSON:API document that shows one record, or one relationship's linkage, in the state given. */
export function stateResponse(
  status: number,
  document: unknown,
  state: string,
  headers?: Readonly<Record<string, string>>,
): ApiResponse {
  return { status, body: JSON.stringify(document), headers, state }
}

/** A JSON:API document. */
export function jsonApiResponse(
  status: number,
  document: unknown,
  headers?: Readonly<Record<string, string>>,
): ApiResponse {
  return { status, body: JSON.stringify(document), headers }
}

export function errorResponse(
  status: number,
  errors: readonly ErrorObject[],
  headers?: Readonly<Record<string, string>>,
): ApiResponse {
  return jsonApiResponse(status, { errors }, headers)
}

export function noContent(): ApiResponse {
  return { status: 204, body: null }
}

/** Elysia's per-request response settings, as much of them as an ApiResponse fills in. */
export interface ResponseSettings {
  status?: number | string
  headers: Record<string, string | number>
}

/**
 * Applies `response` to Elysia's `set` and returns the body for Elysia to send. With the request,
 * the answer is also tagged, checked against If-None-Match and compressed (see docs/caching.md):
 * done here, where every answer of the API passes, rather than in a hook that every request would
 * run.
 */
export function send(
  set: ResponseSettings,
  response: ApiResponse,
  request?: Request,
): string | ReadableStream<Uint8Array> | Uint8Array | null {
  set.status = response.status
  if (response.body !== null) set.headers['content-type'] = RESPONSE_CONTENT_TYPE
  if (response.headers) {
    // Vary adds to what the hooks put there (CORS's Origin), rather than replacing it.
    const vary = set.headers.vary
    Object.assign(set.headers, response.headers)
    if (vary !== undefined && vary !== '' && response.headers.vary !== undefined) {
      set.headers.vary = `${vary}, ${response.headers.vary}`
    }
  }
  if (!request || response.body === null) return response.body
  return represent(set, response, response.body, request)
}

/** Cache-Control of the answers to GET: stored by any cache, but checked with the ETag before each use. */
export const READ_CACHE_CONTROL = 'no-cache'

/** Adds `field` to Vary, keeping what another part of the app put there (CORS's Origin, say). */
export function addVary(headers: Record<string, string | number>, field: string): void {
  const vary = headers.vary
  headers.vary = vary === undefined || vary === '' ? field : `${vary}, ${field}`
}

/**
 * The answer's ETag, Cache-Control, Vary and content coding, or a 304 in its place. A successful
 * answer to GET or HEAD is tagged, and so is one to another write that shows the record it wrote,
 * except PUT (RFC 9110 §9.3.4: only a PUT that stored its body unchanged may tag its answer).
 */
function represent(
  set: ResponseSettings,
  response: ApiResponse,
  body: string | ReadableStream<Uint8Array>,
  request: Request,
): string | ReadableStream<Uint8Array> | Uint8Array | null {
  const { method } = request
  const read = method === 'GET' || method === 'HEAD'
  const whole = typeof body === 'string'
  const compressible = !whole || body.length >= COMPRESS_MIN_CHARS
  const coding =
    response.coding !== undefined
      ? response.coding
      : compressible
        ? negotiateCoding(request.headers.get('accept-encoding'))
        : null
  if (compressible) addVary(set.headers, 'Accept-Encoding')
  const ok = response.status === 200 || response.status === 201
  if (ok && (read || (response.state !== undefined && method !== 'PUT'))) {
    const suffix = codingSuffix(coding)
    const tag = whole
      ? bytesTag(body, response.state, suffix)
      : response.version
        ? versionTag(response.version, request.url, suffix)
        : undefined
    if (read) set.headers['cache-control'] = READ_CACHE_CONTROL
    if (tag !== undefined) {
      set.headers.etag = tag
      const noneMatch = read ? request.headers.get('if-none-match') : null
      if (noneMatch !== null && weaklyMatches(parseTags(noneMatch), tag)) {
        if (!whole) void body.cancel()
        return notModified(set)
      }
    }
  }
  if (coding === null) return body
  set.headers['content-encoding'] = coding
  if (!whole) return response.coding !== undefined ? body : encodeStream(body, coding)
  // A long text (a relationship of 100,000 members) is compressed a slice at a time.
  return body.length > BUFFERED_BYTES
    ? encodeStream(textStream(body, BUFFERED_BYTES), coding)
    : encodeText(body, coding)
}

/** A 304 in place of the answer: its ETag, Cache-Control and Vary stay (RFC 9110 §15.4.5), its body goes. */
export function notModified(set: ResponseSettings): null {
  set.status = 304
  delete set.headers['content-type']
  return null
}

/** Up to this much of a document is gathered before answering: a small answer goes out as one string. */
export const BUFFERED_BYTES = 64 * 1024

/**
 * A document written in pieces. The pieces are gathered until the document ends or passes
 * BUFFERED_BYTES: a small document is answered whole, and a failure before that point (a database
 * fault, say) still gets its error status. Past it the rest is streamed, each piece asked for when
 * the client has taken the one before, so only one is held in memory; a failure then can only cut
 * the answer short.
 */
export async function documentResponse(
  status: number,
  pieces: AsyncGenerator<string>,
  /** Infinity for a document whose size is bounded whatever the data (a page): it is answered whole. */
  bufferedBytes = BUFFERED_BYTES,
): Promise<ApiResponse> {
  const gathered: string[] = []
  let size = 0
  for (;;) {
    const { value, done } = await pieces.next()
    if (done) return { status, body: gathered.join('') }
    gathered.push(value)
    size += value.length
    if (size > bufferedBytes) break
  }
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(gathered.join('')))
      gathered.length = 0
    },
    async pull(controller) {
      const { value, done } = await pieces.next()
      if (done) controller.close()
      else controller.enqueue(encoder.encode(value))
    },
    async cancel() {
      await pieces.return(undefined)
    },
  })
  return { status, body: stream }
}
