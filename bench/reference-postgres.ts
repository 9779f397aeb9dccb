/**
 * The reference server over PostgreSQL: what the compared routes cost with no framework, so the
 * service's numbers on PostgreSQL can be read as a ratio. Plain Bun.serve and Bun's `SQL` client
 * (tagged queries, which Bun prepares once per connection), a pool as large as the service's
 * default (10), the service's schema and search functions (the database is seeded through the
 * service's store), the same JSON bytes out (bench/reference-documents.ts). Each request is one
 * statement, so one round trip, where the service may use several (a transaction for a book and
 * its includes):
 *
 * - GET /api/v1/books/:id: the book joined to its author and collection;
 * - GET /api/v1/books as offset pages (optionally `filter[search]` of one word, ranked as the
 *   service ranks it) and cursor pages in id order: the page and the total in one statement;
 * - POST /api/v1/books: the book inserted, its id from the table's identity (migration 7), if its
 *   author exists (the foreign key locks the author against deletion until the commit);
 * - PATCH /api/v1/books/:id (a rename): UPDATE … RETURNING;
 * - DELETE /api/v1/books/:id: DELETE … RETURNING.
 *
 * Anything else is a 400 or 404 here: the bench sends it only what it compares. Names are taken
 * as stored: the bench's never hold U+0000 or U+0001, which the service's store encodes.
 *
 * Run as its own process: PORT=<port> REFERENCE_DATABASE_URL=<postgres://…> [REFERENCE_WORKERS=n]
 * bun bench/reference-postgres.ts
 */
import { SQL } from 'bun'
import {
  authorMissing,
  type BookRow,
  badRequest,
  bookDocument,
  createdDocument,
  cursorPageDocument,
  deletedAnswer,
  type ListRequest,
  notFound,
  offsetPageDocument,
  parseListRequest,
  parseNewBook,
  parseRename,
  pathId,
  searchWords,
  updatedDocument,
} from './reference-documents'
import { reusePort, runWorkers } from './reference-workers'

const port = Number(process.env.PORT)
const url = process.env.REFERENCE_DATABASE_URL
if (!url || !Number.isInteger(port) || port <= 0) {
  console.error('reference-postgres: set PORT and REFERENCE_DATABASE_URL')
  process.exit(2)
}

const sql = new SQL(url, { max: 10 })

/** bigint columns arrive as strings. */
interface PgBook {
  id: string
  name: string
  author_id: string
  book_collection_id: string | null
}
const book = (row: PgBook): BookRow => ({
  id: Number(row.id),
  name: row.name,
  author_id: Number(row.author_id),
  book_collection_id: row.book_collection_id === null ? null : Number(row.book_collection_id),
})

async function showBook(id: number | null): Promise<Response> {
  if (id === null) return notFound()
  const [row] = (await sql`
    SELECT b.id, b.name, b.author_id, b.book_collection_id, a.name AS author_name, c.name AS collection_name
    FROM books b JOIN authors a ON a.id = b.author_id LEFT JOIN book_collections c ON c.id = b.book_collection_id
    WHERE b.id = ${id}`) as (PgBook & { author_name: string; collection_name: string | null })[]
  if (!row) return notFound()
  const found = book(row)
  const collection =
    found.book_collection_id === null || row.collection_name === null
      ? null
      : { id: found.book_collection_id, name: row.collection_name }
  return bookDocument(found, { id: found.author_id, name: row.author_name }, collection)
}

/** A page and the size of the whole list; the count comes as the one row of an empty page. */
interface PageRow extends Omit<PgBook, 'id'> {
  id: string | null
  total: number
}
function pageOf(rows: readonly PageRow[]): { rows: BookRow[]; total: number } {
  const total = Number(rows[0]?.total ?? 0)
  return { rows: rows.filter((row): row is PageRow & PgBook => row.id !== null).map(book), total }
}

async function listBooks(request: Request): Promise<Response> {
  const list = parseListRequest(request)
  if (list instanceof Response) return list
  // The backend × workers part compares pages only: unpaginated lists are SQLite's scenarios.
  if (list.kind === 'all') return badRequest('an unpaginated list')
  return list.kind === 'cursor' ? cursorPage(list) : offsetPage(list)
}

async function offsetPage(list: Extract<ListRequest, { kind: 'offset' }>): Promise<Response> {
  const offset = (list.number - 1) * list.size
  if (list.search === null) {
    const page = pageOf(
      (await sql`
        SELECT counted.total, page.* FROM (SELECT COUNT(*)::int AS total FROM books) AS counted
        LEFT JOIN LATERAL (
          SELECT id, name, author_id, book_collection_id FROM books ORDER BY id LIMIT ${list.size} OFFSET ${offset}
        ) AS page ON TRUE`) as PageRow[],
    )
    return offsetPageDocument(list, page.rows, page.total)
  }
  const words = searchWords(list.search)
  if (words.length !== 1) return badRequest('a search of several words')
  const [word] = words
  // The service's condition and relevance for one word (src/store/postgres-search.ts): the title,
  // or the author's or collection's name, matched as a prefix. Relevance is FTS5's bm25 (weights 10,
  // 2 and 1) computed as the service computes it, with the same SQL functions and statistics table
  // that the service's migration 3 creates (search_totals, search_fold, bm25_idf, bm25_term):
  // N and avgdl and the title phrase's IDF once, the matching authors' and collections' book
  // counts once (GROUP BY), then per book one pass over its title's words.
  const page = pageOf(
    (await sql`
      WITH bm25_search AS MATERIALIZED (
        SELECT totals.rows, totals.words::float8 / totals.rows::float8 AS avgdl,
          bm25_idf(totals.rows, (SELECT COUNT(*) FROM books WHERE search_vector(name) @@ search_prefix(${word}))) AS idf
        FROM (SELECT SUM(records)::bigint AS rows, SUM(words)::bigint AS words FROM search_totals WHERE table_name = 'books') AS totals
      ), by_author AS MATERIALIZED (
        SELECT author_id AS ref, COUNT(*) AS hits FROM books
        WHERE author_id IN (SELECT id FROM authors WHERE search_vector(name) @@ search_prefix(${word})) GROUP BY author_id
      ), by_collection AS MATERIALIZED (
        SELECT book_collection_id AS ref, COUNT(*) AS hits FROM books
        WHERE book_collection_id IN (SELECT id FROM book_collections WHERE search_vector(name) @@ search_prefix(${word}))
        GROUP BY book_collection_id
      )
      SELECT counted.total, page.* FROM (
        SELECT COUNT(*)::int AS total FROM books WHERE search_vector(books.name) @@ search_prefix(${word})
          OR books.author_id IN (SELECT id FROM authors WHERE search_vector(name) @@ search_prefix(${word}))
          OR books.book_collection_id IN (SELECT id FROM book_collections WHERE search_vector(name) @@ search_prefix(${word}))
      ) AS counted
      LEFT JOIN LATERAL (
        SELECT books.id, books.name, books.author_id, books.book_collection_id FROM books
          CROSS JOIN bm25_search
          CROSS JOIN LATERAL (
            SELECT COUNT(token) AS words, 10::float8 * (COUNT(*) FILTER (WHERE starts_with(token, search_fold(${word}))))::float8 AS freq
            FROM unnest(search_words(books.name)) AS token
          ) AS title
          LEFT JOIN by_author ON by_author.ref = books.author_id
          LEFT JOIN by_collection ON by_collection.ref = books.book_collection_id
        WHERE search_vector(books.name) @@ search_prefix(${word})
          OR books.author_id IN (SELECT id FROM authors WHERE search_vector(name) @@ search_prefix(${word}))
          OR books.book_collection_id IN (SELECT id FROM book_collections WHERE search_vector(name) @@ search_prefix(${word}))
        ORDER BY (0::float8
          + bm25_term(bm25_search.idf, title.freq, (title.words + 1 + (books.book_collection_id IS NOT NULL)::int)::float8, bm25_search.avgdl)
          + COALESCE(bm25_term(bm25_idf(bm25_search.rows, by_author.hits), 2::float8,
              (title.words + 1 + (books.book_collection_id IS NOT NULL)::int)::float8, bm25_search.avgdl), 0::float8)
          + COALESCE(bm25_term(bm25_idf(bm25_search.rows, by_collection.hits), 1::float8,
              (title.words + 1 + (books.book_collection_id IS NOT NULL)::int)::float8, bm25_search.avgdl), 0::float8)
          ) DESC, books.id ASC
        LIMIT ${list.size} OFFSET ${offset}
      ) AS page ON TRUE`) as PageRow[],
  )
  return offsetPageDocument(list, page.rows, page.total)
}

async function cursorPage(list: Extract<ListRequest, { kind: 'cursor' }>): Promise<Response> {
  const after = list.after ?? 0
  // One more than the page: whether another book follows it.
  const page = pageOf(
    (await sql`
      SELECT counted.total, page.* FROM (SELECT COUNT(*)::int AS total FROM books) AS counted
      LEFT JOIN LATERAL (
        SELECT id, name, author_id, book_collection_id FROM books WHERE id > ${after} ORDER BY id LIMIT ${list.size + 1}
      ) AS page ON TRUE`) as PageRow[],
  )
  const more = page.rows.length > list.size
  return cursorPageDocument(list, page.rows.slice(0, list.size), page.total, more)
}

async function postBook(request: Request): Promise<Response> {
  const wanted = await parseNewBook(request)
  if (wanted instanceof Response) return wanted
  if (wanted.authorId === null) return authorMissing()
  // No row, so no id taken, for a missing author; one deleted meanwhile fails the foreign key (a
  // 500 here: the bench never deletes authors).
  const [row] = (await sql`
    INSERT INTO books (name, author_id)
      SELECT ${wanted.name}, ${wanted.authorId}::bigint WHERE EXISTS (SELECT 1 FROM authors WHERE id = ${wanted.authorId})
    RETURNING id, name, author_id, book_collection_id`) as PgBook[]
  return row ? createdDocument(book(row)) : authorMissing()
}

async function patchBook(request: Request, id: number | null): Promise<Response> {
  if (id === null) return notFound()
  const wanted = await parseRename(request, id)
  if (wanted instanceof Response) return wanted
  const [row] = (await sql`
    UPDATE books SET name = ${wanted.name} WHERE id = ${id}
    RETURNING id, name, author_id, book_collection_id`) as PgBook[]
  return row ? updatedDocument(book(row)) : notFound()
}

async function deleteBook(id: number | null): Promise<Response> {
  if (id === null) return notFound()
  const rows = await sql`DELETE FROM books WHERE id = ${id} RETURNING id`
  return rows.length > 0 ? deletedAnswer() : notFound()
}

const server = Bun.serve({
  hostname: '127.0.0.1',
  port,
  reusePort,
  routes: {
    '/api/v1/books/:id': {
      GET: (request) => showBook(pathId(request.params.id)),
      PATCH: (request) => patchBook(request, pathId(request.params.id)),
      DELETE: (request) => deleteBook(pathId(request.params.id)),
    },
    '/api/v1/books': { GET: listBooks, POST: postBook },
  },
  fetch: notFound,
})

runWorkers(server, () => sql.close({ timeout: 5 }))
