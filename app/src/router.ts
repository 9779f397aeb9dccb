import { signal } from '@preact/signals'

/**
 * The app's place is its URL: a view, a record, a list's search, sort and position all live in
 * it, so that a link or a reload shows the same page. Paths are under the page's base (/app/).
 */
export interface Place {
  /** The path below /app/, without slashes at either end: '' (home), 'books', 'books/12'. */
  readonly path: string
  readonly query: URLSearchParams
}

export const BASE = new URL(document.baseURI).pathname

function placeOf(location: Location | URL): Place {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : ''
  return { path: path.replace(/^\/+|\/+$/g, ''), query: new URLSearchParams(location.search) }
}

export const place = signal<Place>(placeOf(window.location))

/** The URL of a place under the app: `href('books', { q: 'tolkien' })`. */
export function href(path: string, query: Record<string, string | undefined> = {}): string {
  const params = new URLSearchParams()
  for (const [key, value] of Object.entries(query)) if (value !== undefined && value !== '') params.set(key, value)
  const search = params.toString()
  return `${BASE}${path}${search ? `?${search}` : ''}`
}

/** What a history entry of the app holds: the URL it was opened from, for `leave`. */
interface Entry {
  readonly from: string
}

const here = (location: Location | URL): string => location.pathname + location.search

/** Goes to `url` (a URL under the app) without loading the page again; `replace` keeps the history as it is. */
export function navigate(url: string, { replace = false } = {}): void {
  const target = new URL(url, window.location.href)
  if (replace) window.history.replaceState(window.history.state, '', target)
  else window.history.pushState({ from: here(window.location) } satisfies Entry, '', target)
  place.value = placeOf(target)
}

/**
 * Leaves a view that should not stay behind in the history (a form, once saved or cancelled) for
 * `url`: back, when it was opened from that page (with whatever search that page's URL held), else
 * in its place. Back then never shows the form again (Forward may).
 */
export function leave(url: string): void {
  const target = new URL(url, window.location.href)
  const from = (window.history.state as Entry | null)?.from
  if (from !== undefined && new URL(from, window.location.href).pathname === target.pathname) window.history.back()
  else navigate(url, { replace: true })
}

/** Follows links under the app in the page, and the browser's back and forward. */
export function startRouter(): void {
  window.addEventListener('popstate', () => {
    place.value = placeOf(window.location)
  })
  document.addEventListener('click', (event) => {
    if (
      event.defaultPrevented ||
      event.button !== 0 ||
      event.metaKey ||
      event.ctrlKey ||
      event.shiftKey ||
      event.altKey
    )
      return
    const link = (event.target as Element | null)?.closest?.('a')
    if (!link || link.target || link.hasAttribute('download')) return
    const url = new URL(link.href, window.location.href)
    if (url.origin !== window.location.origin || !url.pathname.startsWith(BASE)) return
    event.preventDefault()
    navigate(url.toString())
  })
}
