/**
 * The Express baseline: the conventional Node stack issue 10 compares with, run as that stack is
 * run: on Node (the machine's Node 20), Express 5 with `express.json` for the JSON:API media type,
 * jsonapi-serializer's Serializer for the documents, and better-sqlite3 (installed in
 * bench/references/node/ and built for Node by bench/references/express-on-node.ts) for SQLite.
 * Express keeps its defaults (ETag, X-Powered-By).
 *
 * Plain JavaScript (ESM) because Node 20 cannot run TypeScript; it imports nothing of the bench's
 * TypeScript, so what it shares with the other baselines is written out here and must be kept in
 * step with bench/references/sqlite-handlers.ts: the environment (PORT, REFERENCE_DB, REFERENCE_DURABILITY,
 * REFERENCE_LISTS, as `referenceEnvironment` reads them), the pragmas (WAL, synchronous FULL or
 * NORMAL, foreign keys on, busy_timeout 5000) and the SQL of the statements it runs, each write its
 * own IMMEDIATE transaction, committed alone. SQLite's compile-time defaults are better-sqlite3's
 * (a 16 MB page cache, for one), as the conventional stack has them.
 *
 * Its documents are jsonapi-serializer's, not the service's: a book's collection is the
 * `book-collection` relationship, a list gives linkage (`data`) where the service gives
 * `meta.included: false`, a page has `meta.total` and links of its own. So the bench checks only
 * what it can: the same status, Location and number of records (`data`, `included`) for each
 * scenario's request (bench/harness/compare.ts, `sameRecords`). Routes: GET, PATCH (a rename) and DELETE
 * /api/v1/books/:id; GET (every book, `author_id=N`, or `page[number]`/`page[size]`) and POST
 * /api/v1/books. It writes lists whole (REFERENCE_LISTS is checked, not used).
 *
 *   PORT=<port> REFERENCE_DB=<path> [REFERENCE_DURABILITY=normal] node bench/references/express.mjs
 */
import { createRequire } from 'node:module'
import express from 'express'
import JSONAPISerializer from 'jsonapi-serializer'

// better-sqlite3 is bench/references/node/'s alone (express-on-node.ts installs it there).
const Database = createRequire(new URL('./node/package.json', import.meta.url))('better-sqlite3')

const { Serializer } = JSONAPISerializer

/** @typedef {{ id: number, name: string, author_id: number, book_collection_id: number | null }} BookRow */

/** PORT, REFERENCE_DB, REFERENCE_DURABILITY and REFERENCE_LISTS, as bench/references/sqlite-handlers.ts reads them. */
function referenceEnvironment(name, env = process.env) {
  const port = Number(env.PORT)
  const path = env.REFERENCE_DB
  const durability = env.REFERENCE_DURABILITY ?? 'full'
  const lists = env.REFERENCE_LISTS ?? 'whole'
  if (!path || !Number.isInteger(port) || port <= 0) return refuse(`${name}: set PORT and REFERENCE_DB`)
  if (durability !== 'full' && durability !== 'normal') {
    return refuse(`${name}: REFERENCE_DURABILITY is full or normal (got "${durability}")`)
  }
  if (lists !== 'whole' && lists !== 'streamed') {
    return refuse(`${name}: REFERENCE_LISTS is whole or streamed (got "${lists}")`)
  }
  return { port, path, durability }
}

function refuse(message) {
  console.error(message)
  process.exit(2)
}

const BOOK_COLUMNS = 'id, name, author_id, book_collection_id'

/** The connection and the statements of bench/references/sqlite-handlers.ts's `openQueries` that Express runs. */
function openQueries(path, durability) {
  const db = new Database(path)
  db.exec('PRAGMA journal_mode = WAL')
  db.exec(`PRAGMA synchronous = ${durability === 'normal' ? 'NORMAL' : 'FULL'}`)
  db.exec('PRAGMA foreign_keys = ON')
  db.exec('PRAGMA busy_timeout = 5000')

  const authorById = db.prepare('SELECT id, name FROM authors WHERE id = ?')
  const insertBook = db.prepare(`INSERT INTO books (name, author_id) VALUES (?, ?) RETURNING ${BOOK_COLUMNS}`)
  const renameBook = db.prepare(`UPDATE books SET name = ? WHERE id = ? RETURNING ${BOOK_COLUMNS}`)
  const deleteBook = db.prepare('DELETE FROM books WHERE id = ?')
  return {
    db,
    bookById: db.prepare(`SELECT ${BOOK_COLUMNS} FROM books WHERE id = ?`),
    authorById,
    collectionById: db.prepare('SELECT id, name FROM book_collections WHERE id = ?'),
    booksPage: db.prepare(`SELECT ${BOOK_COLUMNS} FROM books ORDER BY id LIMIT ? OFFSET ?`),
    countBooks: db.prepare('SELECT COUNT(*) AS count FROM books'),
    booksOfAuthor: db.prepare(`SELECT ${BOOK_COLUMNS} FROM books WHERE author_id = ? ORDER BY id`),
    allBooks: db.prepare(`SELECT ${BOOK_COLUMNS} FROM books ORDER BY id`),
    // Each write is its own IMMEDIATE transaction (`.immediate(...)`), committed alone. The author
    // is checked inside it, as the service does, so the answer cannot go stale.
    createBook: db.transaction((name, authorId) =>
      authorById.get(authorId) ? (insertBook.get(name, authorId) ?? null) : null,
    ),
    renameBook: db.transaction((id, name) => renameBook.get(name, id) ?? null),
    deleteBook: db.transaction((id) => deleteBook.run(id).changes > 0),
  }
}

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
const bookListSerializer = (extra = {}) =>
  new Serializer('books', {
    attributes: ['name', 'author', 'book-collection'],
    author: { ref: 'id', included: false },
    'book-collection': { ref: 'id', included: false },
    ...extra,
  })
/** @param {BookRow} book */
const linked = (book) => ({
  id: book.id,
  name: book.name,
  author: { id: book.author_id },
  'book-collection': book.book_collection_id === null ? null : { id: book.book_collection_id },
})

const send = (res, status, document) => res.status(status).type(MEDIA_TYPE).json(document)
const notFound = (res) => send(res, 404, { errors: [] })
const idOf = (value) => {
  const id = Number(value)
  return Number.isSafeInteger(id) && id > 0 ? id : null
}
const positive = (value, fallback) => {
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
  const query = req.query
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
  const link = (n) => `/api/v1/books?page[number]=${n}&page[size]=${size}`
  const links = { self: link(number), first: link(1), last: link(last) }
  if (number > 1) links.prev = link(number - 1)
  if (number < last) links.next = link(number + 1)
  return send(res, 200, bookListSerializer({ meta: { total }, topLevelLinks: links }).serialize(rows.map(linked)))
})

app.post('/api/v1/books', (req, res) => {
  const data = req.body?.data
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
  const data = req.body?.data
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
