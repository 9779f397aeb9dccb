/**
 * The search bench's reference: plain Bun.serve answering the first page of a search as the
 * service is asked for it, `GET /api/v1/books?filter[search]=...&page[size]=20[&sort=name|-name]`,
 * over the index of bench/parts/search/reference-index.ts: the last word a prefix (FTS5 `"w"*`, or
 * PostgreSQL's `'w':*`), the words before it whole, all of them required; ranked by bm25 (SQLite) or ts_rank (PostgreSQL),
 * or sorted by name then id; the total counted to 10,001 as the service counts a search; the
 * page written as the service writes one (bench/references/documents.ts). One statement for the
 * total and one for the page. Anything else is a 400.
 *
 * Run as its own process: PORT=<port> REFERENCE_DB=<file> | REFERENCE_DATABASE_URL=<postgres://…>
 *   bun bench/parts/search/reference.ts
 */
import { Database } from 'bun:sqlite'
import { SQL } from 'bun'
import { type BookRow, badRequest, offsetPageDocument, SEARCH_WINDOW, searchWords } from '../../references/documents'

type Order = 'ranked' | 'name' | '-name'

interface SearchPage {
  readonly words: readonly string[]
  readonly order: Order
  readonly size: number
}

interface Searcher {
  page(search: SearchPage): Promise<{ rows: BookRow[]; total: number }> | { rows: BookRow[]; total: number }
}

function sqliteSearcher(file: string): Searcher {
  const db = new Database(file, { readonly: true })
  db.run('PRAGMA mmap_size = 268435456')
  const counted = db.query<{ n: number }, [string]>(
    `SELECT count(*) AS n FROM (SELECT 1 FROM books_fts WHERE books_fts MATCH ? LIMIT ${SEARCH_WINDOW + 1})`,
  )
  const columns = 'b.id, b.name, b.author_id, b.book_collection_id'
  const pages: Record<Order, ReturnType<typeof db.query<BookRow, [string, number]>>> = {
    // The FTS table's own order by rank (its first `size` rows only), then the books joined to those.
    ranked: db.query(`WITH f AS MATERIALIZED (
        SELECT rowid, rank FROM books_fts WHERE books_fts MATCH ? ORDER BY rank LIMIT ?)
      SELECT ${columns} FROM f JOIN books b ON b.id = f.rowid ORDER BY f.rank, b.id`),
    name: db.query(`SELECT ${columns} FROM books b WHERE b.id IN (SELECT rowid FROM books_fts WHERE books_fts MATCH ?)
      ORDER BY b.name, b.id LIMIT ?`),
    '-name':
      db.query(`SELECT ${columns} FROM books b WHERE b.id IN (SELECT rowid FROM books_fts WHERE books_fts MATCH ?)
      ORDER BY b.name DESC, b.id DESC LIMIT ?`),
  }
  return {
    page({ words, order, size }) {
      const last = words.length - 1
      const match = words.map((w, i) => `"${w.replaceAll('"', '""')}"${i === last ? '*' : ''}`).join(' ')
      return { rows: pages[order].all(match, size), total: counted.get(match)?.n ?? 0 }
    },
  }
}

interface PgRow {
  id: string
  name: string
  author_id: string
  book_collection_id: string | null
}

function postgresSearcher(url: string): Searcher {
  const sql = new SQL(url, { max: 10 })
  const orderBy: Record<Order, string> = {
    ranked: 'ts_rank(words, q) DESC, id',
    name: 'name, id',
    '-name': 'name DESC, id DESC',
  }
  return {
    async page({ words, order, size }) {
      // Letters and digits only (searchWords), so each word can stand quoted in a tsquery as it is.
      const last = words.length - 1
      const query = words.map((w, i) => `'${w}'${i === last ? ':*' : ''}`).join(' & ')
      const [found, [counted]] = await Promise.all([
        sql.unsafe(
          `SELECT id, name, author_id, book_collection_id FROM reference_books, to_tsquery('simple', $1) AS q
           WHERE words @@ q ORDER BY ${orderBy[order]} LIMIT $2`,
          [query, size],
        ) as Promise<PgRow[]>,
        sql.unsafe(
          `SELECT count(*)::int AS n FROM (SELECT 1 FROM reference_books WHERE words @@ to_tsquery('simple', $1) LIMIT ${SEARCH_WINDOW + 1}) AS t`,
          [query],
        ) as Promise<{ n: number }[]>,
      ])
      const rows = found.map((row) => ({
        id: Number(row.id),
        name: row.name,
        author_id: Number(row.author_id),
        book_collection_id: row.book_collection_id === null ? null : Number(row.book_collection_id),
      }))
      return { rows, total: counted?.n ?? 0 }
    },
  }
}

async function listBooks(searcher: Searcher, request: Request): Promise<Response> {
  const url = new URL(request.url)
  const params = url.searchParams
  for (const name of params.keys()) {
    if (!['filter[search]', 'page[size]', 'sort'].includes(name)) return badRequest(name)
  }
  const search = params.get('filter[search]')
  if (search === null) return badRequest('a list without filter[search]')
  const sort = params.get('sort')
  const order: Order | undefined = sort === null ? 'ranked' : sort === 'name' || sort === '-name' ? sort : undefined
  if (order === undefined) return badRequest(`sort=${sort}`)
  const size = Number(params.get('page[size]') ?? 20)
  if (!Number.isInteger(size) || size < 1 || size > 100) return badRequest('page[size]')
  const words = searchWords(search)
  const list = { kind: 'offset' as const, url, size, number: 1, search }
  if (words.length === 0) return offsetPageDocument(list, [], 0)
  const { rows, total } = await searcher.page({ words, order, size })
  return offsetPageDocument(list, rows, total)
}

const port = Number(process.env.PORT)
const file = process.env.REFERENCE_DB
const databaseUrl = process.env.REFERENCE_DATABASE_URL
if (!Number.isInteger(port) || port <= 0 || (!file && !databaseUrl)) {
  console.error('search reference: set PORT and REFERENCE_DB or REFERENCE_DATABASE_URL')
  process.exit(2)
}
const searcher = file ? sqliteSearcher(file) : postgresSearcher(databaseUrl ?? '')

Bun.serve({
  hostname: '127.0.0.1',
  port,
  // The longest Bun allows: a slow page is measured, not cut off at the default 10 s.
  idleTimeout: 255,
  routes: { '/api/v1/books': { GET: (request) => listBooks(searcher, request) } },
  fetch: () => badRequest('another path'),
})
