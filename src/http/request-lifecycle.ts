import type { Server } from 'bun'
import { Elysia } from 'elysia'
import type { ClientAddresses } from './access/client-address'
import type { ErrorAnswers, ErrorContext } from './error-handler'
import type { ServiceMetrics } from './observability/metrics'
import { bodyBytes, type RequestLog, requestIdOf } from './observability/request-log'

export interface LifecycleParts {
  readonly log: RequestLog
  /** Null where metrics are off (METRICS=false): nothing is counted. */
  readonly metrics: ServiceMetrics | null
  readonly errors: ErrorAnswers
  /** True once the service is stopping: every answer then carries `Connection: close`. */
  readonly stopping: () => boolean
  /**
   * The template of the route `method` and `path` lead to, for a request refused before routing
   * (a 401, 403, 406 or 429): it is counted under that route, not as unmatched.
   */
  readonly routeOf: (method: string, path: string) => string | undefined
  /**
   * The server, once listening; null where the app answers app.handle() (the tests). Asked of the
   * app, not read from the context: Elysia would define a getter on every request's context for it.
   */
  readonly server: () => Server<unknown> | null
  /** Whose request it is, for its log line: the TCP peer, or the client a trusted proxy names. */
  readonly addresses: ClientAddresses
}

/** What a request is given when it begins: its id, when it began (performance.now()), whence it came (client-address.ts). */
interface Begun {
  readonly id: string
  readonly start: number
  readonly address: string | undefined
}

/** The context of the after-handle hook, as much of it as is read. */
interface HandledContext {
  readonly request: Request
  readonly route: string
  readonly path: string
  readonly set: ErrorContext['set']
  readonly responseValue: unknown
}

/**
 * Passes `stream` through, counting its bytes, and calls `finished` once with their number when it
 * has been read to its end (`cutShort` false), has failed, or was cancelled (the client went away).
 */
function counted(
  stream: ReadableStream<Uint8Array>,
  finished: (bytes: number, cutShort: boolean) => void,
): ReadableStream<Uint8Array> {
  const reader = stream.getReader()
  let bytes = 0
  let open = true
  const finish = (cutShort: boolean) => {
    if (!open) return
    open = false
    finished(bytes, cutShort)
  }
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read()
        if (!done) {
          bytes += value.byteLength
          return controller.enqueue(value)
        }
        finish(false)
        controller.close()
      } catch (error) {
        finish(true)
        controller.error(error)
      }
    },
    cancel(reason) {
      finish(true)
      return reader.cancel(reason)
    },
  })
}

/**
 * What every request gets from its start to its answer: an id (`X-Request-Id`), one log line, its
 * count and time in the metrics, the error document of a failure, a streamed body cut off if it
 * fails, and `Connection: close` once the service is stopping (so that a keep-alive client sends
 * its next request to an instance that is up).
 *
 * All of it in one hook of each kind a request runs anyway: every answer passes through either the
 * after-handle hook or the error hook, so the line is written and the request counted there. An
 * after-response hook is not used: Elysia schedules a setImmediate and an async function for each
 * request that has one. With the hooks this replaced (three request hooks, three after-handle hooks,
 * two after-response hooks), a single GET cost 151.6k instructions in-process, and 132.3k with
 * these (bench/standalone/instructions.ts). A streamed answer is counted and logged when its body ends, with
 * the bytes it sent; every other answer as its status is known.
 *
 * It must be the first plugin: its request hook gives the id that later hooks' failures (a 406, a
 * 401) are answered and logged with, and Elysia applies a hook only to the routes declared after it.
 */
export function requestLifecycle({ log, metrics, errors, stopping, routeOf, server, addresses }: LifecycleParts) {
  const begun = new WeakMap<Request, Begun>()
  /**
   * Logged and counted once, by whichever hook answers first; the hook that answers later finds
   * nothing. A streamed answer (`bytes` null) is logged and counted by the caller, when its body
   * ends. Marked `Connection: close` while stopping, before the answer is built from `set`.
   */
  const finish = (
    request: Request,
    route: string | undefined,
    set: ErrorContext['set'],
    status: number,
    bytes: number | undefined | null,
  ): Begun | undefined => {
    if (stopping()) set.headers.connection = 'close'
    const entry = begun.get(request)
    if (entry === undefined) return undefined
    begun.delete(request)
    errors.settled(request, status)
    if (bytes === null) return entry
    log.write(request, { status, start: entry.start, id: entry.id, address: entry.address, bytes })
    metrics?.answered(request.method, route, status, entry.start)
    return entry
  }

  // Named functions whose parameters are destructured, each with one plain `return`: Elysia reads a
  // hook's source to decide what to prepare for every request (a hook that takes the whole context
  // makes it parse the query, the cookies and every header) and whether to await it (it awaits any
  // hook that returns a call's value).
  function begin({ request, set }: { request: Request; set: ErrorContext['set'] }) {
    const id = requestIdOf(request)
    set.headers['x-request-id'] = id
    // Asked only when a line will say it.
    const address = log.enabled ? addresses.of(request, server()) : undefined
    begun.set(request, { id, start: performance.now(), address })
    log.received(request, id, address)
    metrics?.begun()
  }

  function handled({ request, route, path, set, responseValue }: HandledContext) {
    const status = responseValue instanceof Response ? responseValue.status : Number(set.status ?? 200)
    const whole = !(responseValue instanceof ReadableStream)
    const entry = finish(request, route, set, status, whole ? bodyBytes(request, responseValue) : null)
    // Assigned, not returned as a call: see above.
    let streamed: Response | undefined
    if (!whole) {
      const stream = responseValue as ReadableStream<Uint8Array>
      const body =
        entry && (metrics || log.enabled)
          ? counted(stream, (bytes, cutShort) => {
              const { start, id, address } = entry
              // Bun cancels the body of an answer to HEAD, which it never sends: nothing was cut.
              const head = request.method === 'HEAD'
              log.write(request, { status, start, id, address, bytes: head ? 0 : bytes, cutShort: cutShort && !head })
              metrics?.answered(request.method, route, status, start)
            })
          : stream
      streamed = errors.streamed(body, request, path, set)
    }
    return streamed
  }

  function failed({ code, error, path, set, request, route }: ErrorContext & { readonly route?: string }) {
    const body = errors.answer({ code, error, path, set, request })
    // Refused before routing (a token, a rate limit, Accept): counted under the route it would have
    // reached. NOT_FOUND is Elysia's word for a request no route takes: no need to look (a scanner's 404s).
    const template = route || (code === 'NOT_FOUND' ? undefined : routeOf(request.method, path))
    finish(request, template, set, Number(set.status ?? 500), bodyBytes(request, body))
    return body
  }

  return new Elysia({ name: 'request-lifecycle' })
    .onRequest(begin)
    .onAfterHandle({ as: 'global' }, handled)
    .onError({ as: 'global' }, failed)
}
