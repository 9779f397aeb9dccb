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

/** A JSON:API document already in JSON text. */
export function jsonApiTextResponse(status: number, json: string): ApiResponse {
  return { status, body: json }
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

/**
 * `{"data": [...]}` written a batch at a time from items already in JSON text: `next` is asked
 * for each batch until it returns null, so only one batch is ever held in memory.
 */
export function streamedDataResponse(
  first: readonly string[],
  next: () => Promise<readonly string[] | null>,
): ApiResponse {
  const render = (batch: readonly string[]) => batch.join(',')
  let started = false
  let written = first.length > 0
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!started) {
        started = true
        controller.enqueue(encoder.encode(`{"data":[${render(first)}`))
        return
      }
      const batch = await next()
      if (batch === null) {
        controller.enqueue(encoder.encode(']}'))
        controller.close()
      } else if (batch.length > 0) {
        controller.enqueue(encoder.encode((written ? ',' : '') + render(batch)))
        written = true
      }
    },
  })
  return { status: 200, body: stream }
}
