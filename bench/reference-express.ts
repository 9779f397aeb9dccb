/**
 * The Express baseline: the typical Node stack issue 10 compares with. Express 5 with
 * `express.json` for the JSON:API media type, jsonapi-serializer's Serializer for the documents,
 * over the prepared bun:sqlite statements and transactions the other baselines run
 * (bench/reference-sqlite.ts). Run under Bun, since Node 20 has no SQLite driver; Express keeps its
 * defaults (ETag, X-Powered-By).
 *
 * Its documents are jsonapi-serializer's, not the service's: a book's collection is the
 * `book-collection` relationship, a list gives linkage (`data`) where the service gives
 * `meta.included: false`, a page has `meta.total` and links of its own. So the bench checks only
 * what it can: the same status and the same number of records (`data`, `included`) for each
 * scenario's request (bench/compare.ts, `sameRecords`). Routes: GET, PATCH (a rename) and DELETE
 * /api/v1/books/:id; GET (every book, `author_id=N`, or `page[number]`/`page[size]`) and POST
 * /api/v1/books. Each write is committed alone.
 *
 *   PORT=<port> REFERENCE_DB=<path> [REFERENCE_DURABILITY=normal] bun bench/reference-express.ts
 */
import express, { type Response } from 'express'
import { Serializer } from 'jsonapi-serializer'
import type { BookRow } from './reference-documents'
import { openQueries, referenceEnvironment } from './reference-sqlite'

const { port, path, durability } = referenceEnvironment('reference-express')
const q = openQueries(path, durability)

const MEDIA_TYPE = 'application/vnd.api+json'
const MAX_PAGE_SIZE = 100

/** GET one book: its author and its collection as included records. */
const bookSerializer = new Serializer('books', {
  attributes: ['name', 'author', 'book-collection'],
  author: { ref: 'id', attributes: ['name'] },
  'book-collection': { ref: 'id', attributes: ['name'] },
})
/** Lists and writes: the relationships as linkage only. */
const bookListSerializer = (extra: { meta?: Record<string, unknown>; topLevelLinks?: Record<string, string> } = {}) =>
  new Serializer('books', {
    attributes: ['name', 'author', 'book-collection'],
    author: { ref: 'id', included: false },
    'book-collection': { ref: 'id', included: false },
    ...extra,
  })
const linked = (book: BookRow) => ({
  id: book.id,
  name: book.name,
  author: { id: book.author_id },
  'book-collection': book.book_collection_id === null ? null : { id: book.book_collection_id },
})

const send = (res: Response, status: number, document: unknown) => res.status(status).type(MEDIA_TYPE).json(document)
const notFound = (res: Response) => send(res, 404, { errors: [] })
const idOf = (value: string | undefined) => {
  const id = Number(value)
  return Number.isSafeInteger(id) && id > 0 ? id : null
}
const positive = (value: unknown, fallback: number) => {
  if (value === undefined) return fallback
  const n = Number(value)
  return Number.isSafeInteger(n) && n > 0 ? n : null
}

const app = express()
app.use(express.json({ type: ['application/json', MEDIA_TYPE] }))

app.get('/api/v1/books/:id', (req, res) => {
  const id = idOf(req.params.id)
  const book = id === null ? null : q.bookById.get(id)
  if (!book) return notFound(res)
  const author = q.authorById.get(book.author_id)
  const collection = book.book_collection_id === null ? null : q.collectionById.get(book.book_collection_id)
  return send(
    res,
    200,
    bookSerializer.serialize({ id: book.id, name: book.name, author, 'book-collection': collection }),
  )
})

app.get('/api/v1/books', (req, res) => {
  const query = req.query as Record<string, string | undefined>
  if (query['page[number]'] === undefined && query['page[size]'] === undefined) {
    const authorId = query.author_id === undefined ? null : idOf(query.author_id)
    const rows = authorId === null ? q.allBooks.all() : q.booksOfAuthor.all(authorId)
    return send(res, 200, bookListSerializer().serialize(rows.map(linked)))
  }
  const number = positive(query['page[number]'], 1)
  const size = positive(query['page[size]'], 20)
  if (number === null || size === null || size > MAX_PAGE_SIZE) {
    return send(res, 400, { errors: [{ status: '400', detail: 'bad page' }] })
  }
  const rows = q.booksPage.all(size, (number - 1) * size)
  const total = q.countBooks.get()?.count ?? 0
  const last = Math.max(1, Math.ceil(total / size))
  const link = (n: number) => `/api/v1/books?page[number]=${n}&page[size]=${size}`
  const links: Record<string, string> = { self: link(number), first: link(1), last: link(last) }
  if (number > 1) links.prev = link(number - 1)
  if (number < last) links.next = link(number + 1)
  return send(res, 200, bookListSerializer({ meta: { total }, topLevelLinks: links }).serialize(rows.map(linked)))
})

interface Written {
  data?: { type?: unknown; id?: unknown; attributes?: { name?: unknown; author_id?: unknown } }
}

app.post('/api/v1/books', (req, res) => {
  const data = (req.body as Written | undefined)?.data
  const name = data?.attributes?.name
  if (typeof name !== 'string' || name.trim() === '') {
    return send(res, 422, { errors: [{ status: '422', detail: "Name can't be blank" }] })
  }
  const authorId = idOf(String(data?.attributes?.author_id))
  const book = authorId === null ? null : q.createBook.immediate(name, authorId)
  if (!book) return send(res, 422, { errors: [{ status: '422', detail: 'Author must exist' }] })
  res.location(`/api/v1/books/${book.id}`)
  return send(res, 201, bookListSerializer().serialize(linked(book)))
})

app.patch('/api/v1/books/:id', (req, res) => {
  const id = idOf(req.params.id)
  if (id === null) return notFound(res)
  const data = (req.body as Written | undefined)?.data
  if (data?.id !== undefined && String(data.id) !== String(id)) {
    return send(res, 409, { errors: [{ status: '409', detail: 'data.id does not match the id in the URL' }] })
  }
  const name = data?.attributes?.name
  if (typeof name !== 'string' || name.trim() === '') {
    return send(res, 422, { errors: [{ status: '422', detail: "Name can't be blank" }] })
  }
  const book = q.renameBook.immediate(id, name)
  return book ? send(res, 200, bookListSerializer().serialize(linked(book))) : notFound(res)
})

app.delete('/api/v1/books/:id', (req, res) => {
  const id = idOf(req.params.id)
  if (id === null || !q.deleteBook.immediate(id)) return notFound(res)
  return res.status(204).end()
})

const server = app.listen(port, '127.0.0.1')

process.on('SIGTERM', () => {
  server.close()
  server.closeAllConnections()
  q.db.close()
  process.exit(0)
})
