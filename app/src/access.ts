import { computed, effect, signal } from '@preact/signals'
import { API, ApiError, api, setToken, token, unauthorized } from './api/client'

/*
 * What the tab may do with the service: nothing to ask where the service has no API tokens; where
 * it has them (a request answered 401), the token the user gave, kept for the tab alone, and
 * whether it may write. Views show write controls (New, Edit, Delete, the bulk actions) only while
 * `canWrite` is true:
 *
 *   if (canWrite.value) ... <button>Edit</button>
 *
 * Reading `canWrite.value` in a component's render is enough: it renders again when it changes.
 */

/** What a token may do; `unknown` while the service is asked, or when it could not say. */
export type Scope = 'unknown' | 'read' | 'write'

/** The service has API tokens: a request answered 401, or the tab holds a token. */
export const tokensInUse = signal(token.value !== null)
/** A read answered 401 without a token: nothing can be shown, the sign-in form takes the page. */
export const readBlocked = signal(false)
/** The sign-in form asked for from the header (reads need no token here, writes do). */
export const signInShown = signal(false)
/** Why the tab's last token was refused (the API's own detail), for the sign-in form. */
export const signInError = signal<string | null>(null)
/** What the tab's token may do. */
export const scope = signal<Scope>('unknown')
/** Counts sign-outs: the app shows its views afresh after one, nothing read with the token left on the page. */
export const signOuts = signal(0)

/** Whether the service has tokens, as its own description says; asked once by a tab without a token. */
const service = signal<'unknown' | 'open' | 'tokens'>('unknown')

/**
 * Whether to show write controls: with a token, once the token is known to have the write scope;
 * without one, once the service is known to have no tokens (writes would need one).
 */
export const canWrite = computed(() =>
  token.value !== null ? scope.value === 'write' : !tokensInUse.value && service.value === 'open',
)

/** Whether `canWrite` is settled: a view may keep the place of its write controls until it is. */
export const accessKnown = computed(() =>
  token.value !== null ? scope.value !== 'unknown' : tokensInUse.value || service.value !== 'unknown',
)

/**
 * Whether the service has API tokens at all, for a tab that has none: its OpenAPI document,
 * public, says so (the token scheme in `components.securitySchemes`, only where tokens are set).
 * Without it the app would learn it only from a refused write, having shown its write controls to
 * anyone where reads are public (PUBLIC_READ). A failure to read it leaves that to the first 401.
 */
async function learnService(): Promise<void> {
  try {
    const response = await fetch(`${API}/openapi.json`, { headers: { accept: 'application/json' } })
    const document = (await response.json()) as { components?: { securitySchemes?: Record<string, unknown> } }
    const tokens = Object.keys(document.components?.securitySchemes ?? {}).length > 0
    if (tokens) tokensInUse.value = true
    service.value = tokens ? 'tokens' : 'open'
  } catch {
    service.value = 'open'
  }
}

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * What `bearer` may do, asked without writing anything: POST /api/v1/operations with no body and
 * no Content-Type. The access control (src/http/access/access-control.ts) runs as a request
 * arrives, before the Content-Type check (415) and before any body is read: a token it does not
 * know is 401, a read-only token 403 (`source.header` Authorization), and a write token passes on
 * to the 415, which stores nothing. No write can succeed without writing, so the answer is always
 * a refusal; a 2xx would mean a service that wrote nothing, and may write too. Only asked with a
 * token: without one, the service's description says whether writes need one (learnService).
 */
export async function probeScope(bearer: string): Promise<Scope | ApiError> {
  try {
    await api('POST', '/operations', { bearer })
    return 'write'
  } catch (error) {
    if (!(error instanceof ApiError)) return 'unknown'
    if (error.status === 401) return error
    if (error.status === 403 && error.errors.some((e) => e.source?.header?.toLowerCase() === 'authorization')) {
      return 'read'
    }
    // 429 (a rate limit), 503: the service could not say.
    return error.status === 429 || error.status >= 500 ? 'unknown' : 'write'
  }
}

/** The token whose scope is known or being asked: a token is asked about once. */
let checked: string | null = null

async function check(value: string): Promise<void> {
  checked = value
  scope.value = 'unknown'
  const result = await probeScope(value)
  if (token.peek() !== value) return
  if (result instanceof ApiError) forget(result.message)
  else scope.value = result
}

/** The tab's token is no longer taken (revoked, or never right): the user is asked for another. */
function forget(reason: string): void {
  signInError.value = reason
  checked = null
  scope.value = 'unknown'
  setToken(null)
}

if (token.value === null) void learnService()

// A token kept from before a reload is asked about once, as the tab opens.
effect(() => {
  const value = token.value
  if (value !== null && value !== checked) void check(value)
})

// A request refused with 401: the service has tokens, and the tab's is not taken, or it has none.
effect(() => {
  const refusal = unauthorized.value
  if (!refusal) return
  tokensInUse.value = true
  if (token.peek() !== null) forget(refusal.detail)
  else if (READ_METHODS.has(refusal.method)) readBlocked.value = true
  else signInShown.value = true
})

/** Tries `value` and keeps it for the tab when the service takes it; otherwise the API's reason. */
export async function signIn(value: string): Promise<string | null> {
  const result = await probeScope(value)
  if (result instanceof ApiError) return result.message
  checked = value
  scope.value = result
  tokensInUse.value = true
  readBlocked.value = false
  signInShown.value = false
  signInError.value = null
  setToken(value)
  return null
}

/** Forgets the tab's token; the views read again without it (and may ask for another). */
export function signOut(): void {
  checked = null
  scope.value = 'unknown'
  signInError.value = null
  readBlocked.value = false
  signInShown.value = false
  setToken(null)
  signOuts.value++
}
