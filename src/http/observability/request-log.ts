import { AsyncLocalStorage } from 'node:async_hooks'
import type { Logger } from '../../logger'
import { tokenNameOf } from '../access/access-control'
import { HEALTH_PATH, READY_PATH } from './health'

/** An incoming id is kept only if it is short and plain, so it cannot forge log lines or headers. */
const acceptableId = /^[A-Za-z0-9._:@/+=-]{1,128}$/

/** A User-Agent is logged up to this many characters: enough for any browser's, bounded for a forged one. */
const MAX_USER_AGENT = 256

/** Headers whose values are credentials: the debug line names them, without their values. */
const SECRET_HEADERS: ReadonlySet<string> = new Set(['authorization', 'proxy-authorization', 'cookie'])
const REDACTED = '[redacted]'

/** The request's id: the client's `X-Request-Id` if it sent a usable one, else a new one. */
export function requestIdOf(request: Request): string {
  const incoming = request.headers.get('x-request-id')
  return incoming !== null && acceptableId.test(incoming) ? incoming : Bun.randomUUIDv7()
}

/** What the request line says of the answer. */
export interface Answered {
  readonly status: number
  /** performance.now() when the request began. */
  readonly start: number
  readonly id: string
  /** The client's address (the TCP peer, or the client a trusted proxy names); none where the app is called without a server (tests). */
  readonly address: string | undefined
  /** The body's bytes as sent (compressed, if it was), 0 for none; undefined where not known. */
  readonly bytes: number | undefined
  /** A streamed answer that failed or that the client stopped reading. */
  readonly cutShort?: boolean
}

/**
 * One JSON line per request at `info`: the method, path and query, status, duration, id, the
 * client's address and user agent, the body's size, and the name of the API token when one was
 * accepted (never the token). At `debug`, also one line as each request arrives, with its headers
 * (credentials redacted), and one per store call or read-worker round trip, with its duration and
 * the id of the request that made it.
 */
/** The paths probes ask every few seconds. */
const PROBE_PATHS: ReadonlySet<string> = new Set([HEALTH_PATH, READY_PATH])

export class RequestLog {
  /** Read once: the level is set for the life of the process. */
  readonly enabled: boolean
  readonly debug: boolean
  /** At debug: the id of the request whose code runs, for the store calls' lines. */
  private readonly current = new AsyncLocalStorage<string>()

  constructor(private readonly logger: Logger) {
    this.enabled = logger.enabled('info')
    this.debug = logger.enabled('debug')
  }

  /** At debug: the request as it arrived. Called first thing, in the request's own async context. */
  received(request: Request, id: string, address: string | undefined): void {
    if (!this.debug) return
    this.current.enterWith(id)
    const headers: Record<string, string> = {}
    for (const [name, value] of request.headers) headers[name] = SECRET_HEADERS.has(name) ? REDACTED : value
    this.logger.log('debug', 'request received', {
      method: request.method,
      url: request.url,
      address,
      headers,
      request_id: id,
    })
  }

  /** At debug: a store call (or a round trip to a read worker) took `seconds`; a timedStore timer. */
  readonly databaseCall = (operation: string, seconds: number): void => {
    this.logger.log('debug', 'database call', {
      operation,
      duration_ms: Math.round(seconds * 1e6) / 1000,
      request_id: this.current.getStore(),
    })
  }

  /**
   * A request answered: its line, at info; a probe's that succeeded (GET /health or /ready, which a
   * container's health check or a load balancer sends every few seconds) at debug, so that they do
   * not fill the log. A probe that fails is logged at info.
   */
  write(request: Request, answered: Answered): void {
    if (!this.enabled) return
    const url = request.url
    const pathStart = url.indexOf('/', url.indexOf('//') + 2)
    const queryStart = url.indexOf('?', pathStart)
    const path = url.slice(pathStart, queryStart === -1 ? undefined : queryStart)
    const level = answered.status < 400 && PROBE_PATHS.has(path) ? 'debug' : 'info'
    if (level === 'debug' && !this.debug) return
    const agent = request.headers.get('user-agent')
    this.logger.log(level, 'request', {
      method: request.method,
      path,
      query: queryStart === -1 ? undefined : url.slice(queryStart + 1),
      status: answered.status,
      duration_ms: Math.round((performance.now() - answered.start) * 1000) / 1000,
      bytes: answered.bytes,
      cut_short: answered.cutShort || undefined,
      address: answered.address,
      user_agent: agent === null ? undefined : agent.slice(0, MAX_USER_AGENT),
      request_id: answered.id,
      token: tokenNameOf(request),
    })
  }
}

/**
 * The size of a body as a handler or hook gives it to Elysia, in bytes: 0 in answer to HEAD (Bun
 * sends none); undefined for a stream (counted as it is read) and for a Response that does not say
 * (no Content-Length).
 */
export function bodyBytes(request: Request, value: unknown): number | undefined {
  if (value === null || value === undefined || request.method === 'HEAD') return 0
  if (typeof value === 'string') return Buffer.byteLength(value)
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return value.byteLength
  if (value instanceof Response) {
    if (value.body === null) return 0
    const length = value.headers.get('content-length')
    return length === null ? undefined : Number(length)
  }
  return undefined
}
