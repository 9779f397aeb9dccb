/**
 * The SQLite side of the baselines, shared so that they differ only in what serves HTTP:
 *
 * - `openQueries`: the connection (the service's pragmas) and the prepared bun:sqlite statements,
 *   with the service's SQL, each write committed alone (one transaction per write) or, asked for,
 *   in group commits as the service makes them. The raw
 *   reference (bench/references/raw.ts) and the minimal Elysia app (bench/references/elysia.ts) run
 *   these statements; the Express app (bench/references/express.mjs, on Node) the same SQL;
 * - `referenceHandlers`: request in, Response out, byte for byte as the service answers, for the
 *   raw reference and the Elysia app (Express renders its own documents with jsonapi-serializer).
 *
 * The environment all of them read: PORT, REFERENCE_DB (the SQLite file), REFERENCE_DURABILITY
 * (`full`, the default: synchronous=FULL; `normal`: NORMAL, as the service's DURABILITY) and
 * REFERENCE_LISTS (`whole`, the default: an unpaginated list is read and written in one piece;
 * `streamed`: read in keyset batches of 1,000 rows, each written as one chunk, as the service does)
 * and REFERENCE_COMMITS (`alone`, the default: each write its own transaction; `grouped`: the writes
 * that arrive in one turn of the event loop share one, each in a savepoint, as the service's writes
 * do, and are answered after its COMMIT).
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
} from './documents'

export type ReferenceDurability = 'full' | 'normal'
export type ReferenceLists = 'whole' | 'streamed'
export type ReferenceCommits = 'alone' | 'grouped'

export interface ReferenceEnvironment {
  readonly port: number
  readonly path: string
  readonly durability: ReferenceDurability
  readonly lists: ReferenceLists
  readonly commits: ReferenceCommits
}

/** PORT, REFERENCE_DB, REFERENCE_DURABILITY, REFERENCE_LISTS and REFERENCE_COMMITS; a bad or missing one stops the process (exit 2). */
export function referenceEnvironment(name: string, env = process.env): ReferenceEnvironment {
  const port = Number(env.PORT)
  const path = env.REFERENCE_DB
  const durability = env.REFERENCE_DURABILITY ?? 'full'
  const lists = env.REFERENCE_LISTS ?? 'whole'
  const commits = env.REFERENCE_COMMITS ?? 'alone'
  if (!path || !Number.isInteger(port) || port <= 0) return refuse(`${name}: set PORT and REFERENCE_DB`)
  if (durability !== 'full' && durability !== 'normal') {
    return refuse(`${name}: REFERENCE_DURABILITY is full or normal (got "${durability}")`)
  }
  if (lists !== 'whole' && lists !== 'streamed') {
    return refuse(`${name}: REFERENCE_LISTS is whole or streamed (got "${lists}")`)
  }
  if (commits !== 'alone' && commits !== 'grouped') {
    return refuse(`${name}: REFERENCE_COMMITS is alone or grouped (got "${commits}")`)
  }
  return { port, path, durability, lists, commits }
}

function refuse(message: string): never {
  console.error(message)
  process.exit(2)
}

const BOOK_COLUMNS = 'id, name, author_id, book_collection_id'
// Lists, with the service's SQL: offset pages, keyset pages and ranked full-text search.
const MATCHES = 'SELECT rowid FROM books_search WHERE books_search MATCH ?'

/**
 * Group commit, as the service's SQLite store makes it and no more: the writes asked for in one turn
 * of the event loop run in one IMMEDIATE transaction, each in a savepoint (a write that throws is
 * undone alone and fails alone), and are answered once it has committed.
 */
function groupCommitter(db: Database): <T>(work: () => T) => Promise<T> {
  const begin = db.prepare('BEGIN IMMEDIATE')
  const commit = db.prepare('COMMIT')
  const open = db.prepare('SAVEPOINT one_write')
  const release = db.prepare('RELEASE one_write')
  const undo = db.prepare('ROLLBACK TO one_write')
  type Pending = { work: () => unknown; resolve: (value: unknown) => void; reject: (error: unknown) => void }
  let pending: Pending[] = []
  const flush = () => {
    const batch = pending
    pending = []
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = []
    try {
      begin.run()
      for (const { work } of batch) {
        open.run()
        try {
          outcomes.push({ ok: true, value: work() })
        } catch (error) {
          undo.run()
          outcomes.push({ ok: false, error })
        }
        release.run()
      }
      commit.run()
    } catch (error) {
      if (db.inTransaction) db.run('ROLLBACK')
      for (const { reject } of batch) reject(error)
      return
    }
    batch.forEach(({ resolve, reject }, i) => {
      const outcome = outcomes[i]
      if (outcome?.ok) resolve(outcome.value)
      else reject(outcome?.error)
    })
  }
  return <T>(work: () => T) =>
    new Promise<T>((resolve, reject) => {
      if (pending.length === 0) setImmediate(flush)
      pending.push({ work, resolve: resolve as (value: unknown) => void, reject })
    })
}

/** The connection and its prepared statements. */
export function openQueries(path: string, durability: ReferenceDurability, commits: ReferenceCommits = 'alone') {
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
  const grouped = commits === 'grouped' ? groupCommitter(db) : undefined
  const alone = db.transaction((work: () => unknown) => work())
  const write = <T>(work: () => T): T | Promise<T> => (grouped ? grouped(work) : (alone.immediate(work) as T))
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
    /**
     * A page of a search in the service's order: per word, the weight of the heaviest field it
     * matches (title 10, author 2, collection 1), summed, then id; every match scored, plainly.
     */
    searchPage: (search: SearchSql, limit: number, offset: number): BookRow[] =>
      db
        .query<BookRow, (string | number)[]>(
          `SELECT ${BOOK_COLUMNS} FROM books WHERE id IN (${MATCHES}) ORDER BY ${search.score} DESC, id LIMIT ? OFFSET ?`,
        )
        .all(search.match, ...search.titles, limit, offset),
    countBooks: db.query<{ count: number }, []>('SELECT COUNT(*) AS count FROM books'),
    countSearch: db.query<{ count: number }, [string]>(
      `SELECT COUNT(*) AS count FROM (SELECT 1 FROM books WHERE id IN (${MATCHES}) LIMIT 10001)`,
    ),
    booksOfAuthor: db.query<BookRow, [number]>(`SELECT ${BOOK_COLUMNS} FROM books WHERE author_id = ? ORDER BY id`),
    allBooks: db.query<BookRow, []>(`SELECT ${BOOK_COLUMNS} FROM books ORDER BY id`),
    /** The next batch of every book, or of one author's, after an id (keyset, in id order). */
    batchAfter: (authorId: number | null, after: number): BookRow[] =>
      authorId === null ? booksAfter.all(after, LIST_BATCH) : authorBooksAfter.all(authorId, after, LIST_BATCH),
    // Each write is its own IMMEDIATE transaction, committed alone, or a savepoint in a group
    // commit. The author is checked inside it, as the service does, so the answer cannot go stale.
    createBook: (name: string, authorId: number) =>
      write(() => (authorById.get(authorId) ? insertBook.get(name, authorId) : null)),
    renameBook: (id: number, name: string) => write(() => renameBook.get(name, id)),
    deleteBook: (id: number) => write(() => deleteBook.run(id).changes > 0),
  }
}

export type Queries = ReturnType<typeof openQueries>

/** A search as SQL: the FTS5 query of its matches, and its score with the title queries it takes. */
interface SearchSql {
  readonly match: string
  readonly score: string
  readonly titles: readonly string[]
}

/**
 * The FTS5 query the service makes of a search (each word a quoted prefix of the title, or the id
 * of an author or collection whose name it begins), and the score it orders a ranked search by.
 */
function searchSql(queries: Queries, words: readonly string[]): SearchSql {
  const terms = words.map((word) => {
    const phrase = `"${word}"*`
    const ids = (hits: Queries['authorHits']) => hits.all(phrase).map((row) => row.id)
    return { title: `{name} : ${phrase}`, authors: ids(queries.authorHits), collections: ids(queries.collectionHits) }
  })
  const quoted = (ids: readonly number[]) => ids.map((id) => `"${id}"`).join(' OR ')
  const match = terms
    .map(({ title, authors, collections }) => {
      const alternatives = [title]
      if (authors.length > 0) alternatives.push(`author_id : (${quoted(authors)})`)
      if (collections.length > 0) alternatives.push(`book_collection_id : (${quoted(collections)})`)
      return `(${alternatives.join(' OR ')})`
    })
    .join(' AND ')
  const score = terms
    .map(
      ({ authors, collections }) =>
        `CASE WHEN id IN (${MATCHES}) THEN 10 WHEN author_id IN (${authors.join(', ')}) THEN 2 WHEN book_collection_id IN (${collections.join(', ')}) THEN 1 ELSE 0 END`,
    )
    .join(' + ')
  return { match, score: `(${score})`, titles: terms.map((t) => t.title) }
}

/** The routes' work, request in and Response out: the raw reference and the Elysia app call these. */
export function referenceHandlers(queries: Queries, lists: ReferenceLists) {
  const q = queries

  function offsetPage(list: Extract<ListRequest, { kind: 'offset' }>): Response {
    const offset = (list.number - 1) * list.size
    const search = list.search === null ? null : searchSql(q, searchWords(list.search))
    const rows = search === null ? q.booksPage.all(list.size, offset) : q.searchPage(search, list.size, offset)
    const total = (search === null ? q.countBooks.get() : q.countSearch.get(search.match))?.count ?? 0
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
      const book = wanted.authorId === null ? null : await q.createBook(wanted.name, wanted.authorId)
      return book ? createdDocument(book) : authorMissing()
    },

    async patchBook(request: Request, id: number | null): Promise<Response> {
      if (id === null) return notFound()
      const wanted = await parseRename(request, id)
      if (wanted instanceof Response) return wanted
      const book = await q.renameBook(id, wanted.name)
      return book ? updatedDocument(book) : notFound()
    },

    async deleteBook(id: number | null): Promise<Response> {
      return id !== null && (await q.deleteBook(id)) ? deletedAnswer() : notFound()
    },
  }
}
