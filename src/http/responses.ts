import type { ErrorObject } from '../jsonapi/errors'
import { RESPONSE_CONTENT_TYPE } from '../jsonapi/media-type'

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

/** Applies `response` to Elysia's `set` and returns the body for Elysia to send. */
export function send(set: ResponseSettings, response: ApiResponse): string | ReadableStream<Uint8Array> | null {
  set.status = response.status
  if (response.body !== null) set.headers['content-type'] = RESPONSE_CONTENT_TYPE
  if (response.headers) Object.assign(set.headers, response.headers)
  return response.body
}

/** Up to this much of a document is gathered before answering: a small answer goes out as one string. */
const BUFFERED_BYTES = 64 * 1024

/**
 * A document written in pieces. The pieces are gathered until the document ends or passes
 * BUFFERED_BYTES: a small document is answered whole, and a failure before that point (a database
 * fault, say) still gets its error status. Past it the rest is streamed, each piece asked for when
 * the client has taken the one before, so only one is held in memory; a failure then can only cut
 * the answer short.
 */
export async function documentResponse(status: number, pieces: AsyncGenerator<string>): Promise<ApiResponse> {
  const gathered: string[] = []
  let size = 0
  for (;;) {
    const { value, done } = await pieces.next()
    if (done) return { status, body: gathered.join('') }
    gathered.push(value)
    size += value.length
    if (size > BUFFERED_BYTES) break
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
