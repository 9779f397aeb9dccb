import { signal } from '@preact/signals'
import type { operations } from './openapi'

/*
 * The app's one way to the API: JSON:API documents typed from the service's own OpenAPI document
 * (openapi.d.ts, generated), the token of the tab, If-Match where asked, and a refusal as ApiError
 * carrying the API's own errors.
 */

export const API = '/api/v1'
const JSON_API = 'application/vnd.api+json'
const TOKEN_KEY = 'catalogue-token'

export type Doc<O extends keyof operations, S extends number = 200> = operations[O] extends {
  responses: { [K in S]: { content: { 'application/vnd.api+json': infer D } } }
}
  ? D
  : never

export type BookList = Doc<'list_books'>
export type AuthorList = Doc<'list_authors'>
export type CollectionList = Doc<'list_book_collections'>
export type ListDocument = BookList | AuthorList | CollectionList
export type Book = BookList['data'][number]
export type Author = AuthorList['data'][number]
export type Collection = CollectionList['data'][number]
export type AnyRecord = Book | Author | Collection
export type Included = NonNullable<BookList['included']>[number]
export type Matches = NonNullable<NonNullable<Book['meta']>['matches']>
export type ErrorObject = Doc<'get_book', 404>['errors'][number]

/** The API token of this tab: kept for the tab alone (sessionStorage), forgotten on sign-out. */
export const token = signal<string | null>(sessionStorage.getItem(TOKEN_KEY))

/**
 * The last 401 the API answered to the tab's own token (or to its lack of one): the app then asks
 * for a token (access.ts). A new object each time, so that each refusal is heard.
 */
export const unauthorized = signal<{ readonly method: string; readonly detail: string } | null>(null)

export function setToken(value: string | null): void {
  if (value) sessionStorage.setItem(TOKEN_KEY, value)
  else sessionStorage.removeItem(TOKEN_KEY)
  token.value = value
}

/** A refusal of the API: its status and its errors, as the API wrote them. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly errors: readonly ErrorObject[],
  ) {
    super(errors.map((e) => e.detail ?? e.title).join('; ') || `The service answered ${status}`)
  }
}

export interface Answer<T> {
  readonly status: number
  readonly document: T
  readonly etag: string | null
}

export interface RequestOptions {
  readonly body?: unknown
  readonly ifMatch?: string
  readonly signal?: AbortSignal
  /** A token to send instead of the tab's (to try one before keeping it); its 401 is not reported. */
  readonly bearer?: string
  /** A JSON:API extension the request uses and its answer may use (the atomic one), in both media types. */
  readonly ext?: string
}

/** One request to the API (`path` under /api/v1, with its query); throws ApiError on a refusal. */
export async function api<T>(method: string, path: string, options: RequestOptions = {}): Promise<Answer<T>> {
  const mediaType = options.ext ? `${JSON_API}; ext="${options.ext}"` : JSON_API
  const headers: Record<string, string> = { accept: mediaType }
  if (options.body !== undefined) headers['content-type'] = mediaType
  if (options.ifMatch) headers['if-match'] = options.ifMatch
  const bearer = options.bearer ?? token.value
  if (bearer) headers.authorization = `Bearer ${bearer}`
  const response = await fetch(`${API}${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    ...(options.signal ? { signal: options.signal } : {}),
  })
  const text = await response.text()
  const document = text ? JSON.parse(text) : null
  if (!response.ok) {
    const errors = (document as { errors?: ErrorObject[] } | null)?.errors ?? []
    const refusal = new ApiError(response.status, errors)
    if (response.status === 401 && options.bearer === undefined)
      unauthorized.value = { method, detail: refusal.message }
    throw refusal
  }
  return { status: response.status, document: document as T, etag: response.headers.get('etag') }
}

/**
 * Whether a search box's text holds a word the API searches (a letter or a digit): the API refuses
 * a search of none (emoji, punctuation, spaces alone) with a 400, so such text is sent as no search.
 */
export function searchable(text: string): boolean {
  return /[\p{L}\p{N}]/u.test(text)
}

/** A query string from parameters, leaving out the unset ones. */
export function query(params: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams()
  for (const [key, value] of Object.entries(params)) if (value !== undefined) search.set(key, String(value))
  const text = search.toString()
  return text ? `?${text}` : ''
}
