/**
 * The reference server: what GET /api/v1/books/:id and POST /api/v1/books cost with no framework,
 * so the service's numbers can be read as a ratio. Plain Bun.serve and prepared bun:sqlite
 * statements, the same pragmas as the service, the same JSON bytes out.
 *
 * Run as its own process: PORT=<port> REFERENCE_DB=<path> bun bench/reference.ts
 */
import { Database } from 'bun:sqlite'

const CONTENT_TYPE = 'application/vnd.api+json; charset=utf-8'
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

const bookById = db.query<BookRow, [number]>('SELECT id, name, author_id, book_collection_id FROM books WHERE id = ?')
const authorById = db.query<NamedRow, [number]>('SELECT id, name FROM authors WHERE id = ?')
const collectionById = db.query<NamedRow, [number]>('SELECT id, name FROM book_collections WHERE id = ?')
const insertBook = db.query<BookRow, [string, number]>(
  'INSERT INTO books (name, author_id) VALUES (?, ?) RETURNING id, name, author_id, book_collection_id',
)
// Checked inside the write transaction, as the service does, so the answer cannot go stale.
const createBook = db.transaction((name: string, authorId: number): BookRow | null =>
  authorById.get(authorId) ? insertBook.get(name, authorId) : null,
)

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
  const record = {
    id: String(book.id),
    type: 'books',
    attributes: { name: book.name },
    relationships: { author: notIncluded, book_collection: notIncluded },
  }
  return json(201, { data: record }, { location: `/api/v1/books/${book.id}` })
}

const server = Bun.serve({
  hostname: '127.0.0.1',
  port,
  routes: {
    '/api/v1/books/:id': { GET: (request) => showBook(Number(request.params.id)) },
    '/api/v1/books': { POST: postBook },
  },
  fetch: () => json(404, { errors: [] }),
})

process.on('SIGTERM', () => {
  server.stop(true)
  db.close()
  process.exit(0)
})
