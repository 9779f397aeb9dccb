import { Elysia } from 'elysia'
import type { Logger } from '../logger'
import { tokenNameOf } from './access-control'

const started = new WeakMap<Request, number>()
/** An incoming id is kept only if it is short and plain, so it cannot forge log lines or headers. */
const acceptableId = /^[A-Za-z0-9._:@/+=-]{1,128}$/

/**
 * Gives every request an id (the client's `X-Request-Id` if it sent a usable one), returns it in
 * the `X-Request-Id` header, and logs one JSON line per request at `info`: with the query string
 * when there is one, and the name of the API token when one was accepted (never the token).
 */
export function requestLog(logger: Logger) {
  return new Elysia({ name: 'request-log' })
    .onRequest(({ request, set }) => {
      const incoming = request.headers.get('x-request-id')
      set.headers['x-request-id'] = incoming && acceptableId.test(incoming) ? incoming : Bun.randomUUIDv7()
      if (logger.enabled('info')) started.set(request, performance.now())
    })
    .onAfterResponse({ as: 'global' }, ({ request, set, responseValue }) => {
      const start = started.get(request)
      if (start === undefined) return
      const url = request.url
      const pathStart = url.indexOf('/', url.indexOf('//') + 2)
      const queryStart = url.indexOf('?', pathStart)
      logger.log('info', 'request', {
        method: request.method,
        path: url.slice(pathStart, queryStart === -1 ? undefined : queryStart),
        query: queryStart === -1 ? undefined : url.slice(queryStart + 1),
        status: responseValue instanceof Response ? responseValue.status : Number(set.status ?? 200),
        duration_ms: Math.round((performance.now() - start) * 1000) / 1000,
        request_id: String(set.headers['x-request-id']),
        token: tokenNameOf(request),
      })
    })
}
