import { Elysia, NotFoundError } from 'elysia'

/**
 * Cross-origin requests from browsers (CORS_ORIGINS). Written here rather than taken from
 * @elysiajs/cors 1.4.2, which adds its allow/expose headers to every answer whatever the origin,
 * replaces an existing Vary header, and matches origins with an `in` lookup on a plain object
 * (so `Origin: toString` passes).
 */

/** Every origin (`*`), or these exact origins (`https://app.example`, `http://localhost:5173`). */
export type CorsOrigins = '*' | readonly string[]

const ALLOWED_METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS'
const ALLOWED_HEADERS = 'Accept, Content-Type, Authorization, If-Match, If-None-Match, X-Request-Id'
const EXPOSED_HEADERS = 'Location, ETag, X-Request-Id, RateLimit, RateLimit-Policy, Retry-After'
/** How long a browser may reuse a preflight's answer, in seconds. */
export const PREFLIGHT_MAX_AGE = 600

/** Parses CORS_ORIGINS (null: none); `{ error }` for a value that is not `*` or a list of origins. */
export function parseCorsOrigins(value: string): CorsOrigins | null | { readonly error: string } {
  const items = value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '')
  if (items.length === 0) return null
  if (items.includes('*')) {
    return items.length === 1 ? '*' : { error: 'CORS_ORIGINS is either * or a list of origins, not both' }
  }
  for (const item of items) {
    // `null` is what sandboxed frames, data: URLs and local files send: any page can claim it.
    const origin = URL.canParse(item) ? new URL(item).origin : 'null'
    if (origin !== item || origin === 'null') {
      return {
        error: `CORS_ORIGINS takes origins such as https://app.example or http://localhost:5173, without a path or a trailing slash, in lower case (got "${item}")`,
      }
    }
  }
  return items
}

/** Adds `value` to the Vary header, keeping what another part of the service put there. */
function appendVary(headers: Record<string, string | number>, value: string): void {
  const existing = headers.vary
  headers.vary = existing === undefined || existing === '' ? value : `${existing}, ${value}`
}

/** A CORS preflight: OPTIONS with Origin and Access-Control-Request-Method. */
export function isPreflight(request: Request): boolean {
  return (
    request.method === 'OPTIONS' &&
    request.headers.has('origin') &&
    request.headers.has('access-control-request-method')
  )
}

/**
 * An allowed origin gets `Access-Control-Allow-Origin` and the exposed headers on every answer; a
 * preflight (OPTIONS with Origin and Access-Control-Request-Method) is answered 204, with no token
 * needed and no rate counted (see access-control.ts), and with the CORS headers only for an
 * allowed origin. Any other origin gets no CORS headers. With a list of origins every answer
 * carries `Vary: Origin`, since each depends on the Origin sent. Preflights are answered by a
 * route, not by returning from the request hook: Elysia skips the after-handle hooks of an
 * answer given there, so the request lifecycle would neither log nor count it.
 */
export function cors(origins: CorsOrigins) {
  const anyOrigin = origins === '*'
  const allowed: ReadonlySet<string> = new Set(anyOrigin ? [] : origins)
  const preflight = ({ request, set }: { request: Request; set: { status?: number | string } }) => {
    // Any other OPTIONS is answered as without CORS: 405 with Allow, or 404.
    if (!isPreflight(request)) throw new NotFoundError()
    set.status = 204
    return ''
  }
  return new Elysia({ name: 'cors', seed: origins })
    .onRequest(({ request, set }) => {
      if (!anyOrigin) appendVary(set.headers, 'Origin')
      const origin = request.headers.get('origin')
      if (origin === null || !(anyOrigin || allowed.has(origin))) return
      set.headers['access-control-allow-origin'] = anyOrigin ? '*' : origin
      if (isPreflight(request)) {
        set.headers['access-control-allow-methods'] = ALLOWED_METHODS
        set.headers['access-control-allow-headers'] = ALLOWED_HEADERS
        set.headers['access-control-max-age'] = String(PREFLIGHT_MAX_AGE)
      } else {
        set.headers['access-control-expose-headers'] = EXPOSED_HEADERS
      }
    })
    .options('/', preflight, { detail: { hide: true } })
    .options('/*', preflight, { detail: { hide: true } })
}
