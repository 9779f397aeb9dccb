import { Elysia } from 'elysia'
import { httpError, type JsonApiError } from '../../jsonapi/errors'
import { INDEX_PATH } from '../api-index'
import { SCALAR_PATH } from '../openapi/docs-page'
import { DOCS_PATH, SPEC_PATH } from '../openapi/openapi'
import type { TokenEntry, TokenSet } from './api-tokens'
import { ClientAddresses } from './client-address'
import { isPreflight } from './cors'
import { type RateLimiter, secondsLeft } from './rate-limiter'

/**
 * Paths anyone may fetch without a token, whatever PUBLIC_READ says: the API's description and its
 * index (GET /, links to it), and the probes a load balancer or orchestrator calls. A path not
 * listed here (a /metrics, say) needs a token like the API does.
 */
export const PUBLIC_PATHS: ReadonlySet<string> = new Set([
  INDEX_PATH,
  DOCS_PATH,
  SCALAR_PATH,
  SPEC_PATH,
  '/health',
  '/ready',
])

/** Methods that only read; every other method needs a `write` token. */
const READ_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS'])

/** The scheme is case-insensitive (RFC 9110); the token's own syntax is checked by TokenSet.find. */
const BEARER = /^Bearer +(\S+)$/i

/** The policy's name in the RateLimit fields (draft-ietf-httpapi-ratelimit-headers-10). */
const POLICY = '"default"'

export interface AccessOptions {
  /** The tokens accepted; without them every request is let through (the service is open). */
  readonly tokens?: TokenSet
  /** With tokens: reads need none (a token sent is still checked). */
  readonly publicRead?: boolean
  /** Counts requests per token, or per client address without one. */
  readonly rateLimiter?: RateLimiter
  /** Whose address a request without a token is counted under (TRUSTED_PROXIES); the TCP peer's by default. */
  readonly addresses?: ClientAddresses
  /** With CORS on: preflights need no token and are not counted (a browser sends none with them). */
  readonly corsPreflights?: boolean
}

const authorization = { header: 'Authorization' }
const missingToken = httpError(
  401,
  'This request needs an API token: send Authorization: Bearer <token>',
  authorization,
  { 'www-authenticate': 'Bearer' },
)
const missingWriteToken = httpError(
  401,
  'Writes need an API token with the write scope: send Authorization: Bearer <token>',
  authorization,
  { 'www-authenticate': 'Bearer' },
)
const malformedHeader = httpError(
  401,
  'The Authorization header must be the Bearer scheme followed by a token',
  authorization,
  { 'www-authenticate': 'Bearer error="invalid_request"' },
)
const unknownToken = httpError(401, 'The API token is not valid', authorization, {
  'www-authenticate': 'Bearer error="invalid_token"',
})
const readOnlyToken = httpError(
  403,
  'This API token may only read: writes need a token with the write scope',
  authorization,
  { 'www-authenticate': 'Bearer error="insufficient_scope", scope="write"' },
)

/** The token each authenticated request came with, for the request log. */
const identified = new WeakMap<Request, TokenEntry>()

/** The name of the token `request` was authenticated with, if any. Never the token. */
export function tokenNameOf(request: Request): string | undefined {
  return identified.get(request)?.name
}

/** The path of a URL, without the query or a trailing slash. */
function pathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  const query = url.indexOf('?', start)
  const path = url.slice(start, query === -1 ? undefined : query)
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path
}

/**
 * Tokens, scopes and rate limits, checked as a request arrives: before the Accept and Content-Type
 * checks and before any body is read, so a client without a token costs a header lookup and a hash.
 * A request is counted against its limit even when it is then refused, so guessing tokens is
 * limited too. Use only when there are tokens or a rate limit: without both, nothing is checked.
 */
export function accessControl({
  tokens,
  publicRead = false,
  rateLimiter,
  addresses = new ClientAddresses(null),
  corsPreflights = false,
}: AccessOptions) {
  const policy = rateLimiter ? `${POLICY};q=${rateLimiter.limit};w=60` : ''
  return new Elysia({ name: 'access-control' }).onRequest(({ request, set, server }) => {
    if (corsPreflights && isPreflight(request)) return
    let entry: TokenEntry | undefined
    let refusal: JsonApiError | undefined
    if (tokens) {
      const header = request.headers.get('authorization')
      if (header !== null) {
        const bearer = BEARER.exec(header)
        entry = bearer ? tokens.find(bearer[1] as string) : undefined
        if (entry) identified.set(request, entry)
        else refusal = bearer ? unknownToken : malformedHeader
      }
    }
    if (rateLimiter) {
      const now = rateLimiter.now()
      const window = rateLimiter.hit(entry?.rateKey ?? addresses.key(request, server), now)
      const remaining = rateLimiter.limit - window.count
      const reset = secondsLeft(window, now)
      set.headers['ratelimit-policy'] = policy
      set.headers.ratelimit = `${POLICY};r=${Math.max(0, remaining)};t=${reset}`
      if (remaining < 0) {
        throw httpError(
          429,
          `Too many requests: the limit is ${rateLimiter.limit} a minute; try again in ${reset} seconds`,
          undefined,
          { 'retry-after': String(reset) },
        )
      }
    }
    if (!tokens) return
    if (refusal) throw refusal
    if (entry?.scope === 'write') return
    if (PUBLIC_PATHS.has(pathOf(request.url))) return
    if (READ_METHODS.has(request.method)) {
      if (entry || publicRead) return
      throw missingToken
    }
    throw entry ? readOnlyToken : missingWriteToken
  })
}
