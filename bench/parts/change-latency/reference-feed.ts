/**
 * The catch-up case's reference: the change feed's stream with no framework and no hub. Plain
 * Bun.serve over bun:sqlite (REFERENCE_DB, its own copy of the service's file) or Bun's `SQL`
 * (REFERENCE_DATABASE_URL, the service's database, read only), answering two routes as the service
 * does, byte for byte:
 *
 * - GET /api/v1/changes with `page[after]` (or `Last-Event-ID`) and `Accept: text/event-stream`:
 *   the service's opening comment, then the changes after the position, 1,000 rows a read in the
 *   feed's order (a read and its bytes shared by the streams at the same position, as the
 *   service's streams share theirs), each batch written as one chunk, the next read only once the
 *   socket took it (Bun's direct stream: its backpressure) and after a turn of the event loop;
 *   when none is left, a read every 100 ms, as the service's polling. It does not check that the
 *   position is a row, nor (PostgreSQL) hold rows back behind running transactions nor compute the
 *   history: it takes the one stored. What the service does on top is what the ratio shows;
 * - GET /api/v1/books/:id: the book, its author and collection included (bench/references/documents.ts).
 *
 * Run as its own process: PORT=<port> REFERENCE_DB=<file> | REFERENCE_DATABASE_URL=<postgres://…>
 * bun bench/parts/change-latency/reference-feed.ts
 */
import { Database } from 'bun:sqlite'
import { SQL } from 'bun'
import { type BookRow, bookDocument, type NamedRow, notFound } from '../../references/documents'

const port = Number(process.env.PORT)
const file = process.env.REFERENCE_DB
const url = process.env.REFERENCE_DATABASE_URL
if (!Number.isInteger(port) || port <= 0 || (file === undefined) === (url === undefined)) {
  console.error('reference-feed: set PORT and one of REFERENCE_DB, REFERENCE_DATABASE_URL')
  process.exit(2)
}

const BATCH = 1000
const POLL_MS = 100
const encoder = new TextEncoder()
const OPENING = encoder.encode(': change stream\nretry: 2000\n\n')

interface ChangeRow {
  readonly id: string | number
  readonly type: string
  readonly record_id: string | number
  readonly op: string
}

interface BookJoin extends BookRow {
  readonly author_name: string
  readonly collection_name: string | null
}

/** What each backend gives: the rows after a position (in the feed's order), and one book. */
interface Reads {
  after(position: string): Promise<ChangeRow[]>
  book(id: number): Promise<BookJoin | undefined>
}

const BOOK_SQL = `SELECT b.id, b.name, b.author_id, b.book_collection_id, a.name AS author_name, c.name AS collection_name
  FROM books b JOIN authors a ON a.id = b.author_id LEFT JOIN book_collections c ON c.id = b.book_collection_id
  WHERE b.id = `

function sqliteReads(path: string): Reads {
  const db = new Database(path, { readonly: true })
  // An opening's place holder ('start') is no change: the service skips it too.
  const after = db.prepare<ChangeRow, [number]>(
    `SELECT id, type, record_id, op FROM changes WHERE id > ? AND op <> 'start' ORDER BY id LIMIT ${BATCH}`,
  )
  const book = db.prepare<BookJoin, [number]>(`${BOOK_SQL}?`)
  return {
    after: async (position) => after.all(Number(position)),
    book: async (id) => book.get(id) ?? undefined,
  }
}

function postgresReads(databaseUrl: string): Reads {
  const sql = new SQL(databaseUrl, { max: 10 })
  let history: Promise<string> | undefined
  const historyOf = async () => {
    const [row] = (await sql`SELECT history FROM change_horizon`) as { history: string }[]
    return row?.history ?? ''
  }
  return {
    async after(position) {
      history ??= historyOf()
      const stored = await history
      // `<history>.<xid>.<seq>`, or "0" for the start of the feed.
      const [, xid = '0', seq = '0'] = position === '0' ? ['', '0', '0'] : position.split('.')
      const rows = (await sql`SELECT xid::text AS xid, seq::text AS seq, type, record_id::text AS record_id, op
        FROM changes WHERE (xid, seq) > (${xid}::xid8, ${seq}::bigint) ORDER BY xid, seq LIMIT ${BATCH}`) as {
        xid: string
        seq: string
        type: string
        record_id: string
        op: string
      }[]
      return rows.map((row) => ({
        id: `${stored}.${row.xid}.${row.seq}`,
        type: row.type,
        record_id: row.record_id,
        op: row.op,
      }))
    },
    async book(id) {
      const [row] = (await sql.unsafe(`${BOOK_SQL}$1`, [id])) as (Omit<BookJoin, 'id'> & Record<string, unknown>)[]
      if (!row) return undefined
      return {
        id: Number(row.id),
        name: row.name,
        author_id: Number(row.author_id),
        book_collection_id: row.book_collection_id === null ? null : Number(row.book_collection_id),
        author_name: row.author_name,
        collection_name: row.collection_name,
      }
    },
  }
}

const reads = file === undefined ? postgresReads(url as string) : sqliteReads(file)

/** One batch as the service sends its events: `id:`, `event: change`, the record on one `data:` line. */
function events(rows: readonly ChangeRow[]): Uint8Array {
  let text = ''
  for (const row of rows) {
    const record = {
      type: 'changes',
      id: String(row.id),
      attributes: { op: row.op },
      relationships: { resource: { data: { type: row.type, id: String(row.record_id) } } },
    }
    text += `id: ${row.id}\nevent: change\ndata: ${JSON.stringify(record)}\n\n`
  }
  return encoder.encode(text)
}

/** A batch read after a position: its events' bytes and the position past them; null when none. */
type Batch = { readonly bytes: Uint8Array; readonly next: string } | null

/**
 * The last batches read, by the position they follow: streams at the same place share one read and
 * one encoding, as the service's streams of one position do. A batch with changes never changes
 * (the feed only grows after it); an empty one is not kept, so a caught-up stream reads again.
 */
const batches = new Map<string, Promise<Batch>>()
const KEPT_BATCHES = 64

function batchAfter(position: string): Promise<Batch> {
  const kept = batches.get(position)
  if (kept) return kept
  const read = reads.after(position).then((rows) => {
    const last = rows.at(-1)
    if (last === undefined) {
      batches.delete(position)
      return null
    }
    return { bytes: events(rows), next: String(last.id) }
  })
  batches.set(position, read)
  read.catch(() => batches.delete(position))
  if (batches.size > KEPT_BATCHES) batches.delete(batches.keys().next().value as string)
  return read
}

function stream(start: string, signal: AbortSignal): Response {
  let position = start
  // Bun's direct stream: a write is awaited until the socket took it, so a read waits for the client.
  const body = new ReadableStream<Uint8Array>({
    type: 'direct',
    pull: async (controller: ReadableStreamDirectController) => {
      await controller.write(OPENING)
      while (!signal.aborted) {
        const batch = await batchAfter(position)
        if (batch === null) {
          await Bun.sleep(POLL_MS)
          continue
        }
        position = batch.next
        await controller.write(batch.bytes)
        // A write the socket took at once resolves in a microtask: without a turn of the event loop
        // between batches, streams that keep up hold every other request back until they are done.
        await new Promise((resolve) => setImmediate(resolve))
      }
      controller.close()
    },
  })
  return new Response(body, {
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' },
  })
}

async function showBook(id: number): Promise<Response> {
  const row = Number.isInteger(id) ? await reads.book(id) : undefined
  if (!row) return notFound()
  const author: NamedRow = { id: row.author_id, name: row.author_name }
  const collection: NamedRow | null =
    row.book_collection_id === null || row.collection_name === null
      ? null
      : { id: row.book_collection_id, name: row.collection_name }
  return bookDocument(row, author, collection)
}

Bun.serve({
  hostname: '127.0.0.1',
  port,
  idleTimeout: 0,
  fetch(request) {
    const { pathname, searchParams } = new URL(request.url)
    if (pathname === '/api/v1/changes') {
      const start = searchParams.get('page[after]') ?? request.headers.get('last-event-id') ?? '0'
      return stream(start, request.signal)
    }
    if (pathname.startsWith('/api/v1/books/')) return showBook(Number(pathname.slice('/api/v1/books/'.length)))
    return notFound()
  },
})
process.on('SIGTERM', () => process.exit(0))
