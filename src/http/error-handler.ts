import { cappedErrors, httpError, JsonApiError, recordNotFound } from '../jsonapi/errors'
import type { Logger } from '../logger'
import { StoreUnavailableError } from '../store/faults'
import { FaultLog } from './observability/fault-log'
import { errorResponse, type ResponseSettings, send } from './responses'

/** The methods served at a path, for 405 answers; empty when no route has that path. */
export type AllowedMethods = (path: string) => readonly string[]

function toJsonApiError(
  code: string | number,
  error: unknown,
  path: string,
  allowed: AllowedMethods,
): JsonApiError | null {
  if (error instanceof JsonApiError) return error
  // Elysia wraps what a parse hook throws; the cause is the body parser's own answer.
  if (code === 'PARSE' && (error as Error).cause instanceof JsonApiError) return (error as Error).cause as JsonApiError
  if (error instanceof StoreUnavailableError) {
    // Not a passing fault: nothing this process does brings it back, a restart does.
    const detail =
      error.reason === 'replaced'
        ? 'The database file was replaced or removed while the service runs: the service must be restarted before it answers again; try again shortly'
        : `The database is unavailable (${error.description}); try again shortly`
    return httpError(503, detail, undefined, { 'retry-after': String(error.retryAfterSeconds) })
  }
  switch (code) {
    case 'NOT_FOUND': {
      const methods = allowed(path)
      if (methods.length > 0) {
        return httpError(405, `This path answers only ${methods.join(', ')}`, undefined, { allow: methods.join(', ') })
      }
      return httpError(404, `No route matches ${path}`)
    }
    case 'VALIDATION': {
      // Path parameters are plain strings; one Elysia cannot decode names no record.
      const type = (error as { type?: string }).type
      if (type === 'params') return recordNotFound()
      return httpError(400, `The request's ${type ?? 'input'} is malformed`)
    }
    case 'PARSE':
      return httpError(400, 'The request body could not be parsed')
    case 'INVALID_COOKIE_SIGNATURE':
      return httpError(400, 'A cookie signature is invalid')
    default:
      return null
  }
}

const writes = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/**
 * `stream` as it is, except that a failure while it is read is reported first. The failure still
 * errors the response, so the connection is reset: a client never takes a cut list for a whole one.
 */
function reportingFailure(
  stream: ReadableStream<Uint8Array>,
  report: (error: unknown) => void,
): ReadableStream<Uint8Array> {
  const reader = stream.getReader()
  // Set when the consumer goes away (a HEAD, whose body Bun never sends; a client that hung up):
  // a read still under way then has nowhere to go, and that is no failure of the list.
  let cancelled = false
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: Awaited<ReturnType<typeof reader.read>>
      try {
        chunk = await reader.read()
      } catch (error) {
        if (cancelled) return
        report(error)
        // Without a reason: Bun would print any reason on stderr, and the failure is logged already.
        controller.error()
        return
      }
      if (cancelled) return
      try {
        if (chunk.done) controller.close()
        else controller.enqueue(chunk.value)
      } catch {
        // Closed by the consumer without a cancel: stop reading the list all the same.
        cancelled = true
        await reader.cancel().catch(() => {})
      }
    },
    cancel: (reason) => {
      cancelled = true
      return reader.cancel(reason)
    },
  })
}

/** What the error hook is given: Elysia's error context, as much of it as is read. */
export interface ErrorContext {
  readonly code: string | number
  readonly error: unknown
  readonly path: string
  readonly set: ResponseSettings
  readonly request: Request
}

/** The three parts of the service's error handling that the request lifecycle calls (see request-lifecycle.ts). */
export interface ErrorAnswers {
  /** The error document that answers a failure, its status set in `set`. */
  answer(context: ErrorContext): ReturnType<typeof send>
  /**
   * A streamed body as a Response of our own: Elysia would end a stream that fails as if it were
   * complete, and a Response is cut off instead. The failure is logged.
   */
  streamed(stream: ReadableStream<Uint8Array>, request: Request, path: string, set: ResponseSettings): Response
  /** A request answered without failing: a write that succeeds ends a database fault's episode. */
  settled(request: Request, status: number): void
}

/**
 * Every failure leaves as a JSON:API error document; nothing a client sends produces a 5xx. A fault
 * of the database is a 503 with Retry-After, logged once per episode (see FaultLog); a 500 is left
 * for a bug in the service.
 */
export function errorAnswers(logger: Logger, allowed: AllowedMethods, maxErrors: number): ErrorAnswers {
  const faults = new FaultLog(logger)
  const unexpected = (message: string, request: Request, path: string, requestId: unknown, error: unknown) =>
    logger.log('error', message, {
      method: request.method,
      path,
      error: error instanceof Error ? (error.stack ?? error.message) : String(error),
      request_id: String(requestId ?? ''),
    })
  return {
    answer({ code, error, path, set, request }) {
      const known = toJsonApiError(code, error, path, allowed)
      if (error instanceof StoreUnavailableError) faults.failed(error)
      // A document lists at most `maxErrors` errors in full, wherever the errors came from.
      if (known) {
        const errors = cappedErrors(known.errors, maxErrors)
        return send(set, errorResponse(known.status, errors, known.headers), request)
      }
      unexpected('unhandled error', request, path, set.headers['x-request-id'], error)
      const failure = httpError(500, 'The server failed to complete the request; it has been logged')
      return send(set, errorResponse(500, failure.errors), request)
    },
    streamed(stream, request, path, set) {
      const requestId = set.headers['x-request-id']
      const body = reportingFailure(stream, (error) => {
        if (!(error instanceof StoreUnavailableError))
          return unexpected('response cut off', request, path, requestId, error)
        faults.failed(error)
        logger.log('warn', 'response cut off', {
          method: request.method,
          path,
          reason: error.reason,
          code: error.code,
          request_id: String(requestId ?? ''),
        })
      })
      return new Response(body, { status: Number(set.status ?? 200), headers: set.headers as Record<string, string> })
    },
    // After the handler, not after the response: a write answered just before a fault began must not end it.
    settled(request, status) {
      if (faults.active && writes.has(request.method) && status >= 200 && status < 300) faults.recovered()
    },
  }
}
