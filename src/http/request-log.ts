import type { Logger } from '../logger'
import { tokenNameOf } from './access-control'

/** An incoming id is kept only if it is short and plain, so it cannot forge log lines or headers. */
const acceptableId = /^[A-Za-z0-9._:@/+=-]{1,128}$/

/** The request's id: the client's `X-Request-Id` if it sent a usable one, else a new one. */
export function requestIdOf(request: Request): string {
  const incoming = request.headers.get('x-request-id')
  return incoming !== null && acceptableId.test(incoming) ? incoming : Bun.randomUUIDv7()
}

/**
 * One JSON line per request at `info`: with the query string when there is one, and the name of
 * the API token when one was accepted (never the token).
 */
export class RequestLog {
  /** Read once: the level is set for the life of the process. */
  readonly enabled: boolean

  constructor(private readonly logger: Logger) {
    this.enabled = logger.enabled('info')
  }

  /** A request answered with `status`, begun at `start` (its performance.now()). */
  write(request: Request, status: number, start: number, id: string): void {
    if (!this.enabled) return
    const url = request.url
    const pathStart = url.indexOf('/', url.indexOf('//') + 2)
    const queryStart = url.indexOf('?', pathStart)
    this.logger.log('info', 'request', {
      method: request.method,
      path: url.slice(pathStart, queryStart === -1 ? undefined : queryStart),
      query: queryStart === -1 ? undefined : url.slice(queryStart + 1),
      status,
      duration_ms: Math.round((performance.now() - start) * 1000) / 1000,
      request_id: id,
      token: tokenNameOf(request),
    })
  }
}
