import type { Server } from 'bun'
import { Elysia } from 'elysia'
import { httpError, JsonApiError } from '../../jsonapi/errors'
import { INDEX_PATH } from '../api-index'
import { APP_PATH } from '../app-page'
import { FAVICON_PATH, SCALAR_PATH } from '../openapi/docs-page'
import { DOCS_PATH, SPEC_PATH } from '../openapi/openapi'
import type { TokenEntry, TokenSet } from './api-tokens'
import { ClientAddresses } from './client-address'
import { isPreflight } from './cors'
import { type RateLimiter, secondsLeft } from './rate-limiter'
import { SharedRateLimit } from './shared-rate-limit'

/**
 * Paths anyone may fetch without a token, whatever PUBLIC_READ says: the API's description (the
 * document, the page, its viewer and icon) and its index (GET /, links to it), and the probes a
 * load balancer or orchestrator calls. A path not listed here (a /metrics, say) needs a token like
 * the API does. The browser app (/app/ and its files) is public too: it asks its user for a token.
 */
export const PUBLIC_PATHS: ReadonlySet<string> = new Set([
  INDEX_PATH,
  DOCS_PATH,
  SCALAR_PATH,
  FAVICON_PATH,
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
  /** Counts requests per token, or per client address without one: in this process, or by the supervisor of its workers. */
  readonly rateLimiter?: RateLimiter | SharedRateLimit
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
 * With a SharedRateLimit (workers) the count is asked of the supervisor, and the hook waits for it;
 * with a RateLimiter (one process) it is counted here, and the hook never waits.
 */
export function accessControl({
  tokens,
  publicRead = false,
  rateLimiter,
  addresses = new ClientAddresses(null),
  corsPreflights = false,
}: AccessOptions) {
  const limit = rateLimiter?.limit ?? 0
  const policy = `${POLICY};q=${limit};w=60`

  /** The token the request sent (remembered for the log), or the 401 it earns; undefined for none. */
  function identify(request: Request): TokenEntry | JsonApiError | undefined {
    const header = tokens ? request.headers.get('authorization') : null
    if (header === null || !tokens) return undefined
    const bearer = BEARER.exec(header)
    const entry = bearer ? tokens.find(bearer[1] as string) : undefined
    if (!entry) return bearer ? unknownToken : malformedHeader
    identified.set(request, entry)
    return entry
  }

  /** The rate key of a request: its token's, else its client's address. */
  function keyOf(request: Request, server: Server<unknown> | null, identity: TokenEntry | JsonApiError | undefined) {
    return identity !== undefined && !(identity instanceof JsonApiError)
      ? identity.rateKey
      : addresses.key(request, server)
  }

  /** The RateLimit fields of a request that is its window's `count`th, `reset` seconds before the window ends; 429 past the limit. */
  function counted(count: number, reset: number, set: { headers: Record<string, unknown> }): void {
    const remaining = limit - count
    set.headers['ratelimit-policy'] = policy
    set.headers.ratelimit = `${POLICY};r=${Math.max(0, remaining)};t=${reset}`
    if (remaining < 0) {
      throw httpError(
        429,
        `Too many requests: the limit is ${limit} a minute; try again in ${reset} seconds`,
        undefined,
        { 'retry-after': String(reset) },
      )
    }
  }

  /** Throws the 401 or 403 a request earns with the token it sent (or without one). */
  function authorize(request: Request, identity: TokenEntry | JsonApiError | undefined): void {
    if (!tokens) return
    if (identity instanceof JsonApiError) throw identity
    if (identity?.scope === 'write') return
    const path = pathOf(request.url)
    if (PUBLIC_PATHS.has(path) || path === APP_PATH || path.startsWith(`${APP_PATH}/`)) return
    if (READ_METHODS.has(request.method)) {
      if (identity || publicRead) return
      throw missingToken
    }
    throw identity ? readOnlyToken : missingWriteToken
  }

  const plugin = new Elysia({ name: 'access-control' })
  if (rateLimiter instanceof SharedRateLimit) {
    return plugin.onRequest(async function accessShared({ request, set, server }) {
      if (corsPreflights && isPreflight(request)) return
      const identity = identify(request)
      const answer = await rateLimiter.count(keyOf(request, server, identity))
      counted(answer.count, answer.reset, set)
      authorize(request, identity)
    })
  }
  return plugin.onRequest(function access({ request, set, server }) {
    if (corsPreflights && isPreflight(request)) return
    const identity = identify(request)
    if (rateLimiter) {
      const now = rateLimiter.now()
      const window = rateLimiter.hit(keyOf(request, server, identity), now)
      counted(window.count, secondsLeft(window, now), set)
    }
    authorize(request, identity)
  })
}
