/**
 * The SQLite side of the baselines, shared so that they differ only in what serves HTTP:
 *
 * - `openQueries`: the connection (the service's pragmas) and the prepared bun:sqlite statements,
 *   with the service's SQL, each write committed alone (one transaction per write). The raw
 *   reference (bench/reference.ts) and the minimal Elysia app (bench/reference-elysia.ts) run
 *   these statements; the Express app (bench/reference-express.mjs, on Node) the same SQL;
 * - `referenceHandlers`: request in, Response out, byte for byte as the service answers, for the
 *   raw reference and the Elysia app (Express renders its own documents with jsonapi-serializer).
 *
 * The environment all of them read: PORT, REFERENCE_DB (the SQLite file), REFERENCE_DURABILITY
 * (`full`, the default: synchronous=FULL; `normal`: NORMAL, as the service's DURABILITY) and
 * REFERENCE_LISTS (`whole`, the default: an unpaginated list is read and written in one piece;
 * `streamed`: read in keyset batches of 1,000 rows, each written as one chunk, as the service does).
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
  deletedAnswer,
  LIST_BATCH,
  type ListRequest,
  listDocument,
  type NamedRow,
  notFound,
  offsetPageDocument,
  parseListRequest,
  parseNewBook,
  parseRename,
  searchWords,
  streamedListDocument,
  updatedDocument,
} from './reference-documents'

export type ReferenceDurability = 'full' | 'normal'
export type ReferenceLists = 'whole' | 'streamed'

export interface ReferenceEnvironment {
  readonly port: number
  readonly path: string
  readonly durability: ReferenceDurability
  readonly lists: ReferenceLists
}

/** PORT, REFERENCE_DB, REFERENCE_DURABILITY and REFERENCE_LISTS; a bad or missing one stops the process (exit 2). */
export function referenceEnvironment(name: string, env = process.env): ReferenceEnvironment {
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
  return { port, path, durability, lists }
}

function refuse(message: string): never {
  console.error(message)
  process.exit(2)
}

const BOOK_COLUMNS = 'id, name, author_id, book_collection_id'
// Lists, with the service's SQL: offset pages, keyset pages and ranked full-text search.
const SEARCH =
  'SELECT rowid AS hit, bm25(books_search, 10.0, 2.0, 1.0) AS relevance FROM books_search WHERE books_search MATCH ?'

/** The connection and its prepared statements. */
export function openQueries(path: string, durability: ReferenceDurability) {
  const db = new Database(path, { strict: true })
  db.run('PRAGMA journal_mode = WAL')
  db.run(`PRAGMA synchronous = ${durability === 'normal' ? 'NORMAL' : 'FULL'}`)
  db.run('PRAGMA foreign_keys = ON')
  db.run('PRAGMA busy_timeout = 5000')

  const authorById = db.query<NamedRow, [number]>('SELECT id, name FROM authors WHERE id = ?')
  const insertBook = db.query<BookRow, [string, number]>(
    `INSERT INTO books (name, author_id) VALUES (?, ?) RETURNING ${BOOK_COLUMNS}`,
  )
  const renameBook = db.query<BookRow, [string, number]>(
    `UPDATE books SET name = ? WHERE id = ? RETURNING ${BOOK_COLUMNS}`,
  )
  const deleteBook = db.query<never, [number]>('DELETE FROM books WHERE id = ?')
  const booksPage = db.query<BookRow, [number, number]>(
    `SELECT ${BOOK_COLUMNS} FROM books ORDER BY id LIMIT ? OFFSET ?`,
  )
  const booksAfter = db.query<BookRow, [number, number]>(
    `SELECT ${BOOK_COLUMNS} FROM books WHERE id > ? ORDER BY id LIMIT ?`,
  )
  const authorBooksAfter = db.query<BookRow, [number, number, number]>(
    `SELECT ${BOOK_COLUMNS} FROM books WHERE author_id = ? AND id > ? ORDER BY id LIMIT ?`,
  )
  return {
    db,
    bookById: db.query<BookRow, [number]>(`SELECT ${BOOK_COLUMNS} FROM books WHERE id = ?`),
    authorById,
    collectionById: db.query<NamedRow, [number]>('SELECT id, name FROM book_collections WHERE id = ?'),
    authorHits: db.query<{ id: number }, [string]>(
      'SELECT rowid AS id FROM authors_search WHERE authors_search MATCH ?',
    ),
    collectionHits: db.query<{ id: number }, [string]>(
      'SELECT rowid AS id FROM book_collections_search WHERE book_collections_search MATCH ?',
    ),
    booksPage,
    booksAfter,
    searchPage: db.query<BookRow, [string, number, number]>(
      `SELECT ${BOOK_COLUMNS} FROM books JOIN (${SEARCH}) ON hit = id ORDER BY relevance, id LIMIT ? OFFSET ?`,
    ),
    countBooks: db.query<{ count: number }, []>('SELECT COUNT(*) AS count FROM books'),
    countSearch: db.query<{ count: number }, [string]>(
      'SELECT COUNT(*) AS count FROM books WHERE id IN (SELECT rowid FROM books_search WHERE books_search MATCH ?)',
    ),
    booksOfAuthor: db.query<BookRow, [number]>(`SELECT ${BOOK_COLUMNS} FROM books WHERE author_id = ? ORDER BY id`),
    allBooks: db.query<BookRow, []>(`SELECT ${BOOK_COLUMNS} FROM books ORDER BY id`),
    /** The next batch of every book, or of one author's, after an id (keyset, in id order). */
    batchAfter: (authorId: number | null, after: number): BookRow[] =>
      authorId === null ? booksAfter.all(after, LIST_BATCH) : authorBooksAfter.all(authorId, after, LIST_BATCH),
    // Each write is its own IMMEDIATE transaction (`.immediate(...)`), committed alone. The author
    // is checked inside it, as the service does, so the answer cannot go stale.
    createBook: db.transaction((name: string, authorId: number): BookRow | null =>
      authorById.get(authorId) ? insertBook.get(name, authorId) : null,
    ),
    renameBook: db.transaction((id: number, name: string): BookRow | null => renameBook.get(name, id)),
    deleteBook: db.transaction((id: number): boolean => deleteBook.run(id).changes > 0),
  }
}

export type Queries = ReturnType<typeof openQueries>

/**
 * The FTS5 query the service makes of a search: each word a quoted prefix of the title, or the id
 * of an author or collection whose name it begins.
 */
function matchExpression(queries: Queries, words: readonly string[]): string {
  return words
    .map((word) => {
      const phrase = `"${word}"*`
      const alternatives = [`{name} : ${phrase}`]
      const ids = (hits: Queries['authorHits']) => hits.all(phrase).map((row) => `"${row.id}"`)
      const authors = ids(queries.authorHits)
      const collections = ids(queries.collectionHits)
      if (authors.length > 0) alternatives.push(`author_id : (${authors.join(' OR ')})`)
      if (collections.length > 0) alternatives.push(`book_collection_id : (${collections.join(' OR ')})`)
      return `(${alternatives.join(' OR ')})`
    })
    .join(' AND ')
}

/** The routes' work, request in and Response out: the raw reference and the Elysia app call these. */
export function referenceHandlers(queries: Queries, lists: ReferenceLists) {
  const q = queries

  function offsetPage(list: Extract<ListRequest, { kind: 'offset' }>): Response {
    const offset = (list.number - 1) * list.size
    const match = list.search === null ? null : matchExpression(q, searchWords(list.search))
    const rows = match === null ? q.booksPage.all(list.size, offset) : q.searchPage.all(match, list.size, offset)
    const total = (match === null ? q.countBooks.get() : q.countSearch.get(match))?.count ?? 0
    return offsetPageDocument(list, rows, total)
  }

  function cursorPage(list: Extract<ListRequest, { kind: 'cursor' }>): Response {
    const rows = list.after === undefined ? q.booksPage.all(list.size, 0) : q.booksAfter.all(list.after, list.size)
    const total = q.countBooks.get()?.count ?? 0
    const end = rows.at(-1)
    const more = end !== undefined && q.booksAfter.all(end.id, 1).length > 0
    return cursorPageDocument(list, rows, total, more)
  }

  return {
    showBook(id: number | null): Response {
      const book = id === null ? null : q.bookById.get(id)
      if (!book) return notFound()
      const author = q.authorById.get(book.author_id)
      const collection = book.book_collection_id === null ? null : q.collectionById.get(book.book_collection_id)
      return bookDocument(book, author, collection)
    },

    listBooks(request: Request): Response {
      const list = parseListRequest(request)
      if (list instanceof Response) return list
      if (list.kind === 'all') {
        const { authorId } = list
        if (lists === 'streamed') return streamedListDocument((after) => q.batchAfter(authorId, after))
        return listDocument(authorId === null ? q.allBooks.all() : q.booksOfAuthor.all(authorId))
      }
      return list.kind === 'cursor' ? cursorPage(list) : offsetPage(list)
    },

    showAuthor(request: Request, id: number | null): Response {
      const refused = authorRequestRefused(request)
      if (refused) return refused
      const author = id === null ? null : q.authorById.get(id)
      if (!author) return notFound()
      return authorDocument(author, q.booksOfAuthor.all(author.id))
    },

    async postBook(request: Request): Promise<Response> {
      const wanted = await parseNewBook(request)
      if (wanted instanceof Response) return wanted
      const book = wanted.authorId === null ? null : q.createBook.immediate(wanted.name, wanted.authorId)
      return book ? createdDocument(book) : authorMissing()
    },

    async patchBook(request: Request, id: number | null): Promise<Response> {
      if (id === null) return notFound()
      const wanted = await parseRename(request, id)
      if (wanted instanceof Response) return wanted
      const book = q.renameBook.immediate(id, wanted.name)
      return book ? updatedDocument(book) : notFound()
    },

    deleteBook(id: number | null): Response {
      return id !== null && q.deleteBook.immediate(id) ? deletedAnswer() : notFound()
    },
  }
}
