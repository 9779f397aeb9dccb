/**
 * The JSON:API documents the reference servers (bench/references/raw.ts and bench/references/elysia.ts
 * over SQLite, bench/references/raw-postgres.ts over PostgreSQL) answer with, byte for byte as the service does,
 * and their handling of what a request asks for. Only the database calls differ between the two.
 */

const CONTENT_TYPE = 'application/vnd.api+json; charset=utf-8'

/** How far the service counts a search (src/store/search-ranking.ts). */
export const SEARCH_WINDOW = 10_000

/** The service's default MAX_PAGE_SIZE. */
const MAX_PAGE_SIZE = 100
const notIncluded = { meta: { included: false } }

export interface BookRow {
  id: number
  name: string
  author_id: number
  book_collection_id: number | null
}
export interface NamedRow {
  id: number
  name: string
}

export function json(status: number, body: unknown, headers?: Record<string, string>): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': CONTENT_TYPE, ...headers } })
}

export const notFound = () => json(404, { errors: [] })

function named(type: string, row: NamedRow) {
  return { id: String(row.id), type, attributes: { name: row.name }, relationships: { books: notIncluded } }
}

export function unprocessable(detail: string, field: string): Response {
  const source = { parameter: field, pointer: `data/attributes/${field}` }
  return json(422, { errors: [{ title: 'Unprocessable Entity', detail, source }] })
}

export function badRequest(parameter: string): Response {
  return json(400, { errors: [{ status: '400', detail: `the reference does not take ${parameter}` }] })
}

/** GET /api/v1/books/:id: the book, its author and its collection included. */
export function bookDocument(book: BookRow, author: NamedRow | null, collection: NamedRow | null): Response {
  const included = []
  if (author) included.push(named('authors', author))
  if (collection) included.push(named('book_collections', collection))
  const data = {
    id: String(book.id),
    type: 'books',
    attributes: { name: book.name },
    relationships: {
      author: { data: { type: 'authors', id: String(book.author_id) } },
      book_collection: {
        data:
          book.book_collection_id === null ? null : { type: 'book_collections', id: String(book.book_collection_id) },
      },
    },
  }
  return json(200, { data, included })
}

/** A book in a list or in `included`: no linkage. */
export function listed(book: BookRow) {
  return {
    id: String(book.id),
    type: 'books',
    attributes: { name: book.name },
    relationships: { author: notIncluded, book_collection: notIncluded },
  }
}

/** A book in a page in id order: with its item cursor, as the service gives it. */
export function paged(book: BookRow) {
  return { ...listed(book), meta: { page: { cursor: cursorOf(book.id) } } }
}

/** A page varies with Accept (the service applies the cursor pagination profile when asked). */
export const pageHeaders = { vary: 'Accept' }

/** The request's URL, relative, with some query parameters set (or, for null, removed). */
export function linkTo(url: URL, changes: Readonly<Record<string, string | null>>): string {
  const params = new URLSearchParams(url.search)
  for (const [name, value] of Object.entries(changes)) {
    if (value === null) params.delete(name)
    else params.set(name, value)
  }
  return `${url.pathname}?${params}`
}

export const cursorOf = (id: number) =>
  Buffer.from(JSON.stringify({ t: 'books', s: 'id', v: [id] })).toString('base64url')

/** The id a cursor of the id-ordered book list holds; null when it is not one. */
export function idOfCursor(cursor: string): number | null {
  try {
    const { t, s, v } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
    return t === 'books' && s === 'id' && Array.isArray(v) && v.length === 1 && Number.isSafeInteger(v[0]) ? v[0] : null
  } catch {
    return null
  }
}

const positive = (value: string | null) => (value !== null && /^[1-9][0-9]{0,15}$/.test(value) ? Number(value) : null)

/**
 * The words of a search as the service takes them: runs of letters and digits after NFKC,
 * lower-cased, repeats and prefixes of other words dropped (they narrow nothing).
 */
export function searchWords(text: string): string[] {
  const all = [...new Set((text.normalize('NFKC').match(/[\p{L}\p{N}]+/gu) ?? []).map((w) => w.toLowerCase()))]
  return all.filter((word) => !all.some((other) => other !== word && other.startsWith(word)))
}

/** What a GET /api/v1/books asks for, or the 400 the reference answers it with. */
export type ListRequest =
  | {
      readonly kind: 'offset'
      readonly url: URL
      readonly size: number
      readonly number: number
      readonly search: string | null
    }
  | { readonly kind: 'cursor'; readonly url: URL; readonly size: number; readonly after: number | undefined }
  /** Unpaginated: every book, or (`author_id`) every book of one author, in id order. */
  | { readonly kind: 'all'; readonly authorId: number | null }

export function parseListRequest(request: Request): ListRequest | Response {
  const url = new URL(request.url)
  const params = url.searchParams
  const known = ['filter[search]', 'page[number]', 'page[size]', 'page[after]', 'author_id']
  for (const name of params.keys()) {
    if (!known.includes(name) || params.getAll(name).length > 1) return badRequest(name)
  }
  const names = [...params.keys()]
  if (names.length === 0) return { kind: 'all', authorId: null }
  if (params.has('author_id')) {
    const authorId = positive(params.get('author_id'))
    if (names.length > 1 || authorId === null) return badRequest('author_id')
    return { kind: 'all', authorId }
  }
  const size = params.has('page[size]') ? positive(params.get('page[size]')) : 20
  if (size === null || size > MAX_PAGE_SIZE) return badRequest('page[size]')
  const search = params.get('filter[search]')
  if (search !== null && searchWords(search).length === 0) return badRequest('filter[search]')
  const cursor = params.get('page[after]')
  if (cursor !== null) {
    if (search !== null || params.has('page[number]')) return badRequest('page[after]')
    const after = cursor === '' ? undefined : idOfCursor(cursor)
    if (after === null) return badRequest('page[after]')
    return { kind: 'cursor', url, size, after }
  }
  if (!params.has('page[number]') && !params.has('page[size]')) return badRequest('filter[search] without a page')
  const number = params.has('page[number]') ? positive(params.get('page[number]')) : 1
  if (number === null) return badRequest('page[number]')
  return { kind: 'offset', url, size, number, search }
}

/** An unpaginated list of books, written whole. */
export function listDocument(rows: readonly BookRow[]): Response {
  return json(200, { data: rows.map(listed) })
}

/** The rows a streamed list reads at a time, as the service does. */
export const LIST_BATCH = 1000

/**
 * An unpaginated list of books, streamed: `batch(after)` reads the next LIST_BATCH rows in id order
 * after the id `after` (keyset, 0 to start), and each batch goes out as one chunk of JSON text. The
 * bytes are those of listDocument: `{"data":[`, the records joined by commas, `]}`.
 */
export function streamedListDocument(batch: (after: number) => readonly BookRow[]): Response {
  const encoder = new TextEncoder()
  let after = 0
  let first = true
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const rows = batch(after)
      let text = first ? '{"data":[' : ''
      const last = rows.at(-1)
      if (last !== undefined) {
        // The batch's records without the array's brackets, a comma before all but the first batch.
        text += `${first ? '' : ','}${JSON.stringify(rows.map(listed)).slice(1, -1)}`
        after = last.id
      }
      first = false
      if (rows.length < LIST_BATCH) {
        controller.enqueue(encoder.encode(`${text}]}`))
        controller.close()
      } else controller.enqueue(encoder.encode(text))
    },
  })
  return new Response(body, { status: 200, headers: { 'content-type': CONTENT_TYPE } })
}

/** An offset page: its books, the total and the links; a page ranked by relevance has no item cursors. */
export function offsetPageDocument(
  list: Extract<ListRequest, { kind: 'offset' }>,
  rows: readonly BookRow[],
  counted: number,
): Response {
  const { url, size, number } = list
  // A search is counted no further than its first 10,000 matches, as the service counts it.
  const capped = list.search !== null && counted > SEARCH_WINDOW
  const total = capped ? SEARCH_WINDOW : counted
  const last = Math.max(1, Math.ceil(total / size))
  const link = (n: number) => linkTo(url, { 'page[number]': String(n), 'page[size]': String(size) })
  const links: Record<string, string> = { self: link(number), first: link(1) }
  if (number > 1) links.prev = link(number - 1)
  if (number < last) links.next = link(number + 1)
  links.last = link(last)
  const meta = capped ? { total, totalIsLowerBound: true } : { total }
  return json(200, { data: rows.map(list.search === null ? paged : listed), meta, links }, pageHeaders)
}

/** A page after a cursor (none: the start), given whether one more book follows it. */
export function cursorPageDocument(
  list: Extract<ListRequest, { kind: 'cursor' }>,
  rows: readonly BookRow[],
  total: number,
  more: boolean,
): Response {
  const { url, size, after: position } = list
  const links: Record<string, string> = {
    self: linkTo(url, {}),
    first: linkTo(url, { 'page[after]': '', 'page[before]': null, 'page[size]': String(size) }),
  }
  const end = rows.at(-1)
  const before = rows[0]?.id ?? position
  const after = end?.id ?? position
  if (position !== undefined && before !== undefined) {
    links.prev = linkTo(url, { 'page[after]': null, 'page[before]': cursorOf(before) })
  }
  if (more && after !== undefined) links.next = linkTo(url, { 'page[before]': null, 'page[after]': cursorOf(after) })
  return json(200, { data: rows.map(paged), meta: { total }, links }, pageHeaders)
}

/** An author with the linkage of its books and the books themselves included. */
export function authorDocument(author: NamedRow, books: readonly BookRow[]): Response {
  const data = {
    id: String(author.id),
    type: 'authors',
    attributes: { name: author.name },
    relationships: { books: { data: books.map((book) => ({ type: 'books', id: String(book.id) })) } },
  }
  return json(200, books.length > 0 ? { data, included: books.map(listed) } : { data })
}

/** Only `include=books` is taken on an author. */
export function authorRequestRefused(request: Request): Response | null {
  const { searchParams } = new URL(request.url)
  for (const [name, value] of searchParams) if (name !== 'include' || value !== 'books') return badRequest(name)
  return null
}

/** The book a POST asks for, or the answer to a body that asks for none. */
export async function parseNewBook(request: Request): Promise<{ name: string; authorId: number | null } | Response> {
  let document: unknown
  try {
    document = await request.json()
  } catch {
    return json(400, { errors: [{ status: '400', detail: 'The request body is not valid JSON' }] })
  }
  const data = (document as { data?: { type?: unknown; attributes?: Record<string, unknown> } } | null)?.data
  if (data?.type !== 'book' && data?.type !== 'books') {
    return json(400, { errors: [{ status: '400', detail: 'data must be a book resource object' }] })
  }
  const name = data.attributes?.name
  if (typeof name !== 'string' || name.trim() === '') return unprocessable("Name can't be blank", 'name')
  const authorId = Number(data.attributes?.author_id)
  return { name, authorId: Number.isSafeInteger(authorId) && authorId > 0 ? authorId : null }
}

export const authorMissing = () => unprocessable('Author must exist', 'author')

export function createdDocument(book: BookRow): Response {
  return json(201, { data: listed(book) }, { location: `/api/v1/books/${book.id}` })
}

/** The new name a PATCH of a book asks for, or the answer to a body that asks for none. */
export async function parseRename(request: Request, id: number): Promise<{ name: string } | Response> {
  let document: unknown
  try {
    document = await request.json()
  } catch {
    return json(400, { errors: [{ status: '400', detail: 'The request body is not valid JSON' }] })
  }
  const data = (document as { data?: { type?: unknown; id?: unknown; attributes?: Record<string, unknown> } } | null)
    ?.data
  if (data?.type !== 'book' && data?.type !== 'books') {
    return json(400, { errors: [{ status: '400', detail: 'data must be a book resource object' }] })
  }
  if (data.id !== undefined && String(data.id) !== String(id)) {
    const detail = `data.id ${JSON.stringify(String(data.id))} does not match the id in the URL (${JSON.stringify(String(id))})`
    return json(409, { errors: [{ status: '409', title: 'Conflict', detail, source: { pointer: '/data/id' } }] })
  }
  const name = data.attributes?.name
  if (typeof name !== 'string' || name.trim() === '') return unprocessable("Name can't be blank", 'name')
  return { name }
}

/** A book as a PATCH answers it: as in a list, no linkage. */
export function updatedDocument(book: BookRow): Response {
  return json(200, { data: listed(book) })
}

/** A DELETE done: no body, no content type. */
export const deletedAnswer = () => new Response(null, { status: 204 })

/** A positive id from the path, or null. */
export const pathId = (value: string) => {
  const id = Number(value)
  return Number.isSafeInteger(id) && id > 0 ? id : null
}
