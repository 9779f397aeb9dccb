import type { ErrorObject } from '../jsonapi/errors'
import { RESPONSE_CONTENT_TYPE } from '../jsonapi/media-type'

const encoder = new TextEncoder()

/** A JSON:API response with the service's content type. */
export function jsonApiResponse(status: number, body: unknown, headers?: Readonly<Record<string, string>>): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': RESPONSE_CONTENT_TYPE, ...headers },
  })
}

/** A JSON:API response whose body is already JSON text. */
export function jsonApiTextResponse(status: number, json: string): Response {
  return new Response(json, { status, headers: { 'content-type': RESPONSE_CONTENT_TYPE } })
}

export function errorResponse(
  status: number,
  errors: readonly ErrorObject[],
  headers?: Readonly<Record<string, string>>,
): Response {
  return jsonApiResponse(status, { errors }, headers)
}

export function noContent(): Response {
  return new Response(null, { status: 204 })
}

/**
 * `{"data": [...]}` written a batch at a time from items already in JSON text: `next` is asked
 * for each batch until it returns null, so only one batch is ever held in memory.
 */
export function streamedDataResponse(
  first: readonly string[],
  next: () => Promise<readonly string[] | null>,
): Response {
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
  return new Response(stream, { status: 200, headers: { 'content-type': RESPONSE_CONTENT_TYPE } })
}
