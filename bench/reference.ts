/**
 * The reference server: what the compared routes cost with no framework, so the service's numbers
 * can be read as a ratio. Plain Bun.serve and prepared bun:sqlite statements, the same pragmas and
 * the same SQL as the service, the same JSON bytes out. It has:
 *
 * - GET /api/v1/books/:id (with the author and the collection included) and POST /api/v1/books;
 * - GET /api/v1/books: every book or (`author_id=N`) an author's, unpaginated and written whole
 *   (the service streams them); `page[number]`/`page[size]` (optionally `filter[search]`, ranked
 *   as the service ranks it) and `page[size]`/`page[after]` cursor pages in id order;
 * - GET /api/v1/authors/:id with its books included (the default, or `include=books`).
 *
 * Anything else (sort, other filters, `page[before]`) is a 400 here: the
 * bench sends it only what it compares.
 *
 * The documents and the request handling it shares with the PostgreSQL reference are in
 * bench/reference-documents.ts.
 *
 * Run as its own process:
 *   PORT=<port> REFERENCE_DB=<path> [REFERENCE_WORKERS=n] [REFERENCE_DURABILITY=normal] bun bench/reference.ts
 */
import { Database } from 'bun:sqlite'
import {
  authorDocument,
  authorMissing,
  authorRequestRefused,
  type BookRow,
  bookDocument,
  createdDocument,
  cursorPageDocument,
  type ListRequest,
  listDocument,
  type NamedRow,
  notFound,
  offsetPageDocument,
  parseListRequest,
  parseNewBook,
  pathId,
  searchWords,
} from './reference-documents'
import { reusePort, runWorkers } from './reference-workers'

const port = Number(process.env.PORT)
const path = process.env.REFERENCE_DB
if (!path || !Number.isInteger(port) || port <= 0) {
  console.error('reference: set PORT and REFERENCE_DB')
  process.exit(2)
}

const db = new Database(path, { strict: true })
db.run('PRAGMA journal_mode = WAL')
// The service's DURABILITY, as REFERENCE_DURABILITY: full (synchronous=FULL) or normal (NORMAL).
db.run(`PRAGMA synchronous = ${process.env.REFERENCE_DURABILITY === 'normal' ? 'NORMAL' : 'FULL'}`)
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
const allBooks = db.query<BookRow, []>(`SELECT ${BOOK_COLUMNS} FROM books ORDER BY id`)

function showBook(id: number | null): Response {
  const book = id === null ? null : bookById.get(id)
  if (!book) return notFound()
  const author = authorById.get(book.author_id)
  const collection = book.book_collection_id === null ? null : collectionById.get(book.book_collection_id)
  return bookDocument(book, author, collection)
}

/**
 * The FTS5 query the service makes of a search: each word a quoted prefix of the title, or the id
 * of an author or collection whose name it begins.
 */
function matchExpression(words: readonly string[]): string {
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

function listBooks(request: Request): Response {
  const list = parseListRequest(request)
  if (list instanceof Response) return list
  if (list.kind === 'all')
    return listDocument(list.authorId === null ? allBooks.all() : booksOfAuthor.all(list.authorId))
  return list.kind === 'cursor' ? cursorPage(list) : offsetPage(list)
}

function offsetPage(list: Extract<ListRequest, { kind: 'offset' }>): Response {
  const offset = (list.number - 1) * list.size
  const match = list.search === null ? null : matchExpression(searchWords(list.search))
  const rows = match === null ? booksPage.all(list.size, offset) : searchPage.all(match, list.size, offset)
  const total = (match === null ? countBooks.get() : countSearch.get(match))?.count ?? 0
  return offsetPageDocument(list, rows, total)
}

function cursorPage(list: Extract<ListRequest, { kind: 'cursor' }>): Response {
  const rows = list.after === undefined ? booksPage.all(list.size, 0) : booksAfter.all(list.after, list.size)
  const total = countBooks.get()?.count ?? 0
  const end = rows.at(-1)
  const more = end !== undefined && booksAfter.all(end.id, 1).length > 0
  return cursorPageDocument(list, rows, total, more)
}

function showAuthor(request: Request, id: number | null): Response {
  const refused = authorRequestRefused(request)
  if (refused) return refused
  const author = id === null ? null : authorById.get(id)
  if (!author) return notFound()
  return authorDocument(author, booksOfAuthor.all(author.id))
}

async function postBook(request: Request): Promise<Response> {
  const wanted = await parseNewBook(request)
  if (wanted instanceof Response) return wanted
  const book = wanted.authorId === null ? null : createBook.immediate(wanted.name, wanted.authorId)
  return book ? createdDocument(book) : authorMissing()
}

const server = Bun.serve({
  hostname: '127.0.0.1',
  port,
  reusePort,
  routes: {
    '/api/v1/books/:id': { GET: (request) => showBook(pathId(request.params.id)) },
    '/api/v1/books': { GET: listBooks, POST: postBook },
    '/api/v1/authors/:id': { GET: (request) => showAuthor(request, pathId(request.params.id)) },
  },
  fetch: notFound,
})

runWorkers(server, () => db.close())
