/**
 * The reference server: what the compared routes cost with no framework, so the service's numbers
 * can be read as a ratio. Plain Bun.serve and prepared bun:sqlite statements, the same pragmas and
 * the same SQL as the service, the same JSON bytes out. It has:
 *
 * - GET /api/v1/books/:id (with the author and the collection included) and POST /api/v1/books;
 * - GET /api/v1/books as pages only: `page[number]`/`page[size]` (optionally `filter[search]`,
 *   ranked as the service ranks it) and `page[size]`/`page[after]` cursor pages in id order;
 * - GET /api/v1/authors/:id with its books included (the default, or `include=books`).
 *
 * Anything else (an unpaginated list, sort, other filters, `page[before]`) is a 400 here: the
 * bench sends it only what it compares.
 *
 * Run as its own process: PORT=<port> REFERENCE_DB=<path> bun bench/reference.ts
 */
import { Database } from 'bun:sqlite'

const CONTENT_TYPE = 'application/vnd.api+json; charset=utf-8'
/** The service's default MAX_PAGE_SIZE. */
const MAX_PAGE_SIZE = 100
const notIncluded = { meta: { included: false } }

interface BookRow {
  id: number
  name: string
  author_id: number
  book_collection_id: number | null
}
interface NamedRow {
  id: number
  name: string
}

const port = Number(process.env.PORT)
const path = process.env.REFERENCE_DB
if (!path || !Number.isInteger(port) || port <= 0) {
  console.error('reference: set PORT and REFERENCE_DB')
  process.exit(2)
}

const db = new Database(path, { strict: true })
db.run('PRAGMA journal_mode = WAL')
db.run('PRAGMA synchronous = FULL')
db.run('PRAGMA foreign_keys = ON')
db.run('PRAGMA busy_timeout = 5000')

const BOOK_COLUMNS = 'id, name, author_id, book_collection_id'
const bookById = db.query<BookRow, [number]>(`SELECT ${BOOK_COLUMNS} FROM books WHERE id = ?`)
const authorById = db.query<NamedRow, [number]>('SELECT id, name FROM authors WHERE id = ?')
const collectionById = db.query<NamedRow, [number]>('SELECT id, name FROM book_collections WHERE id = ?')
const insertBook = db.query<BookRow, [string, number]>(
  'INSERT INTO books (name, author_id) VALUES (?, ?) RETURNING id, name, author_id, book_collection_id',
)
// Checked inside the write transaction, as the service does, so the answer cannot go stale.
const createBook = db.transaction((name: string, authorId: number): BookRow | null =>
  authorById.get(authorId) ? insertBook.get(name, authorId) : null,
)

// Lists, with the service's SQL: offset pages, keyset pages and ranked full-text search.
const SEARCH =
  'SELECT rowid AS hit, bm25(books_search, 10.0, 2.0, 1.0) AS relevance FROM books_search WHERE books_search MATCH ?'
const authorHits = db.query<{ id: number }, [string]>(
  'SELECT rowid AS id FROM authors_search WHERE authors_search MATCH ?',
)
const collectionHits = db.query<{ id: number }, [string]>(
  'SELECT rowid AS id FROM book_collections_search WHERE book_collections_search MATCH ?',
)
const booksPage = db.query<BookRow, [number, number]>(`SELECT ${BOOK_COLUMNS} FROM books ORDER BY id LIMIT ? OFFSET ?`)
const booksAfter = db.query<BookRow, [number, number]>(
  `SELECT ${BOOK_COLUMNS} FROM books WHERE id > ? ORDER BY id LIMIT ?`,
)
const searchPage = db.query<BookRow, [string, number, number]>(
  `SELECT ${BOOK_COLUMNS} FROM books JOIN (${SEARCH}) ON hit = id ORDER BY relevance, id LIMIT ? OFFSET ?`,
)
const countBooks = db.query<{ count: number }, []>('SELECT COUNT(*) AS count FROM books')
const countSearch = db.query<{ count: number }, [string]>(
  'SELECT COUNT(*) AS count FROM books WHERE id IN (SELECT rowid FROM books_search WHERE books_search MATCH ?)',
)
const booksOfAuthor = db.query<BookRow, [number]>(`SELECT ${BOOK_COLUMNS} FROM books WHERE author_id = ? ORDER BY id`)

function json(status: number, body: unknown, headers?: Record<string, string>): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': CONTENT_TYPE, ...headers } })
}

function named(type: string, row: NamedRow) {
  return { id: String(row.id), type, attributes: { name: row.name }, relationships: { books: notIncluded } }
}

function unprocessable(detail: string, field: string): Response {
  const source = { parameter: field, pointer: `data/attributes/${field}` }
  return json(422, { errors: [{ title: 'Unprocessable Entity', detail, source }] })
}

function showBook(id: number): Response {
  const book = Number.isSafeInteger(id) && id > 0 ? bookById.get(id) : null
  if (!book) return json(404, { errors: [] })
  const author = authorById.get(book.author_id)
  const collection = book.book_collection_id === null ? null : collectionById.get(book.book_collection_id)
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
function listed(book: BookRow) {
  return {
    id: String(book.id),
    type: 'books',
    attributes: { name: book.name },
    relationships: { author: notIncluded, book_collection: notIncluded },
  }
}

/** A book in a page in id order: with its item cursor, as the service gives it. */
function paged(book: BookRow) {
  return { ...listed(book), meta: { page: { cursor: cursorOf(book.id) } } }
}

/** A page varies with Accept (the service applies the cursor pagination profile when asked). */
const pageHeaders = { vary: 'Accept' }

function badRequest(parameter: string): Response {
  return json(400, { errors: [{ status: '400', detail: `the reference does not take ${parameter}` }] })
}

/**
 * The FTS5 query the service makes of a search: each word (repeats and prefixes of other words
 * dropped) a quoted prefix of the title, or the id of an author or collection whose name it begins.
 */
function matchExpression(text: string): string {
  const all = [...new Set((text.normalize('NFKC').match(/[\p{L}\p{N}]+/gu) ?? []).map((w) => w.toLowerCase()))]
  const words = all.filter((word) => !all.some((other) => other !== word && other.startsWith(word)))
  return words
    .map((word) => {
      const phrase = `"${word}"*`
      const alternatives = [`{name} : ${phrase}`]
      const ids = (hits: typeof authorHits) => hits.all(phrase).map((row) => `"${row.id}"`)
      const authors = ids(authorHits)
      const collections = ids(collectionHits)
      if (authors.length > 0) alternatives.push(`author_id : (${authors.join(' OR ')})`)
      if (collections.length > 0) alternatives.push(`book_collection_id : (${collections.join(' OR ')})`)
      return `(${alternatives.join(' OR ')})`
    })
    .join(' AND ')
}

/** The request's URL, relative, with some query parameters set (or, for null, removed). */
function linkTo(url: URL, changes: Readonly<Record<string, string | null>>): string {
  const params = new URLSearchParams(url.search)
  for (const [name, value] of Object.entries(changes)) {
    if (value === null) params.delete(name)
    else params.set(name, value)
  }
  return `${url.pathname}?${params}`
}

const cursorOf = (id: number) => Buffer.from(JSON.stringify({ t: 'books', s: 'id', v: [id] })).toString('base64url')

/** The id a cursor of the id-ordered book list holds; null when it is not one. */
function idOfCursor(cursor: string): number | null {
  try {
    const { t, s, v } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
    return t === 'books' && s === 'id' && Array.isArray(v) && v.length === 1 && Number.isSafeInteger(v[0]) ? v[0] : null
  } catch {
    return null
  }
}

const positive = (value: string | null) => (value !== null && /^[1-9][0-9]{0,15}$/.test(value) ? Number(value) : null)

function listBooks(request: Request): Response {
  const url = new URL(request.url)
  const params = url.searchParams
  const known = ['filter[search]', 'page[number]', 'page[size]', 'page[after]']
  for (const name of params.keys()) {
    if (!known.includes(name) || params.getAll(name).length > 1) return badRequest(name)
  }
  const size = params.has('page[size]') ? positive(params.get('page[size]')) : 20
  if (size === null || size > MAX_PAGE_SIZE) return badRequest('page[size]')
  const search = params.get('filter[search]')
  const match = search === null ? null : matchExpression(search)
  if (match === '') return badRequest('filter[search]')
  const cursor = params.get('page[after]')
  if (cursor !== null) {
    if (match !== null || params.has('page[number]')) return badRequest('page[after]')
    return cursorPage(url, size, cursor)
  }
  if (!params.has('page[number]') && !params.has('page[size]')) return badRequest('an unpaginated list')
  const number = params.has('page[number]') ? positive(params.get('page[number]')) : 1
  if (number === null) return badRequest('page[number]')
  const offset = (number - 1) * size
  const rows = match === null ? booksPage.all(size, offset) : searchPage.all(match, size, offset)
  const total = (match === null ? countBooks.get() : countSearch.get(match))?.count ?? 0
  const last = Math.max(1, Math.ceil(total / size))
  const link = (n: number) => linkTo(url, { 'page[number]': String(n), 'page[size]': String(size) })
  const links: Record<string, string> = { self: link(number), first: link(1) }
  if (number > 1) links.prev = link(number - 1)
  if (number < last) links.next = link(number + 1)
  links.last = link(last)
  // A page ranked by relevance has no item cursors.
  return json(200, { data: rows.map(match === null ? paged : listed), meta: { total }, links }, pageHeaders)
}

/** A page after a cursor (an empty one: the start), and whether one more book follows it. */
function cursorPage(url: URL, size: number, cursor: string): Response {
  const position = cursor === '' ? undefined : idOfCursor(cursor)
  if (position === null) return badRequest('page[after]')
  const rows = position === undefined ? booksPage.all(size, 0) : booksAfter.all(position, size)
  const total = countBooks.get()?.count ?? 0
  const end = rows.at(-1)
  const more = end !== undefined && booksAfter.all(end.id, 1).length > 0
  const links: Record<string, string> = {
    self: linkTo(url, {}),
    first: linkTo(url, { 'page[after]': '', 'page[before]': null, 'page[size]': String(size) }),
  }
  const before = rows[0]?.id ?? position
  const after = end?.id ?? position
  if (position !== undefined && before !== undefined) {
    links.prev = linkTo(url, { 'page[after]': null, 'page[before]': cursorOf(before) })
  }
  if (more && after !== undefined) links.next = linkTo(url, { 'page[before]': null, 'page[after]': cursorOf(after) })
  return json(200, { data: rows.map(paged), meta: { total }, links }, pageHeaders)
}

/** An author with the linkage of its books and the books themselves included. */
function showAuthor(request: Request, id: number): Response {
  const { searchParams } = new URL(request.url)
  for (const [name, value] of searchParams) if (name !== 'include' || value !== 'books') return badRequest(name)
  const author = Number.isSafeInteger(id) && id > 0 ? authorById.get(id) : null
  if (!author) return json(404, { errors: [] })
  const books = booksOfAuthor.all(author.id)
  const data = {
    id: String(author.id),
    type: 'authors',
    attributes: { name: author.name },
    relationships: { books: { data: books.map((book) => ({ type: 'books', id: String(book.id) })) } },
  }
  return json(200, books.length > 0 ? { data, included: books.map(listed) } : { data })
}

async function postBook(request: Request): Promise<Response> {
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
  const book = Number.isSafeInteger(authorId) && authorId > 0 ? createBook.immediate(name, authorId) : null
  if (!book) return unprocessable('Author must exist', 'author')
  return json(201, { data: listed(book) }, { location: `/api/v1/books/${book.id}` })
}

const server = Bun.serve({
  hostname: '127.0.0.1',
  port,
  routes: {
    '/api/v1/books/:id': { GET: (request) => showBook(Number(request.params.id)) },
    '/api/v1/books': { GET: listBooks, POST: postBook },
    '/api/v1/authors/:id': { GET: (request) => showAuthor(request, Number(request.params.id)) },
  },
  fetch: () => json(404, { errors: [] }),
})

process.on('SIGTERM', () => {
  server.stop(true)
  db.close()
  process.exit(0)
})
