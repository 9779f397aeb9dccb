import { Elysia } from 'elysia'
import { cappedErrors, httpError, JsonApiError, recordNotFound } from '../jsonapi/errors'
import type { Logger } from '../logger'
import { errorResponse, send } from './responses'

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

/**
 * Every failure leaves as a JSON:API error document; nothing a client sends produces a 5xx. A
 * document lists at most `maxErrors` errors in full, wherever the errors came from.
 */
export function jsonApiErrors(logger: Logger, allowed: AllowedMethods, maxErrors: number) {
  return new Elysia({ name: 'jsonapi-errors' }).onError({ as: 'global' }, ({ code, error, path, set, request }) => {
    const known = toJsonApiError(code, error, path, allowed)
    if (known) return send(set, errorResponse(known.status, cappedErrors(known.errors, maxErrors), known.headers))
    logger.log('error', 'unhandled error', {
      method: request.method,
      path,
      error: error instanceof Error ? (error.stack ?? error.message) : String(error),
      request_id: String(set.headers['x-request-id'] ?? ''),
    })
    const failure = httpError(500, 'The server failed to complete the request; it has been logged')
    return send(set, errorResponse(500, failure.errors))
  })
}
