/**
 * The reference server over PostgreSQL: what the compared routes cost with no framework, so the
 * service's numbers on PostgreSQL can be read as a ratio. Plain Bun.serve and Bun's `SQL` client
 * (tagged queries, which Bun prepares once per connection), a pool as large as the service's
 * default (10), the service's schema and search functions (the database is seeded through the
 * service's store), the same JSON bytes out (bench/references/documents.ts). Each request is one
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
 * bun bench/references/raw-postgres.ts
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
  searchWords,
  updatedDocument,
} from './documents'
import { serveReference } from './workers'

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
  // The service's condition and order for one word (src/store/search-ranking.ts): the title, or
  // the author's or collection's name, matched as a prefix; the heaviest field it matches (title 10,
  // author 2, collection 1), then id. Plainly: every match scored and sorted, and counted up to the
  // 10,001 the service counts a search to.
  const title = sql`search_vector(books.name) @@ search_prefix(${word})`
  const byAuthor = sql`books.author_id IN (SELECT id FROM authors WHERE search_vector(name) @@ search_prefix(${word}))`
  const byCollection = sql`books.book_collection_id IN (SELECT id FROM book_collections WHERE search_vector(name) @@ search_prefix(${word}))`
  const page = pageOf(
    (await sql`
      SELECT counted.total, page.* FROM (
        SELECT COUNT(*)::int AS total FROM (SELECT 1 FROM books WHERE ${title} OR ${byAuthor} OR ${byCollection} LIMIT 10001) AS found
      ) AS counted
      LEFT JOIN LATERAL (
        SELECT books.id, books.name, books.author_id, books.book_collection_id FROM books
        WHERE ${title} OR ${byAuthor} OR ${byCollection}
        ORDER BY (CASE WHEN ${title} THEN 10 WHEN ${byAuthor} THEN 2 WHEN ${byCollection} THEN 1 ELSE 0 END) DESC, books.id ASC
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

serveReference(port, { showBook, patchBook, deleteBook, listBooks, postBook }, () => sql.close({ timeout: 5 }))
