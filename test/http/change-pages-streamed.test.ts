import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { SQL } from 'bun'
import { insertCatalogue } from '../support/bulk'
import { CHANGES, described, follow, latestChange, linkParameters, waitForChanges } from '../support/change-feed'
import { expectOneError } from '../support/expectations'
import { JSON_API, openTestApp, type TestApp } from '../support/harness'

// GET /api/v1/changes with MAX_PAGE_SIZE raised: a page of more than 1,000 changes is a long
// answer, as a whole list is. It takes a long-answer slot of its client before anything is read,
// is written a batch at a time and streamed, and is byte for byte the document a page read at
// once would be. 100,000 changes: the catalogue's creates written straight into the database
// (test/support/bulk.ts), then a few writes through the API.

const SIZE = 100_000
const AUTHORS = 100
const COLLECTIONS = 20
/** The creates and the three writes after them make SIZE changes; one more comes after the page. */
const BOOKS = SIZE - AUTHORS - COLLECTIONS - 3
const LONG_PAGE = `${CHANGES}?page[size]=${SIZE}&include=resource`

interface Document {
  data: { id: string }[]
  included?: { type: string; id: string }[]
  links: { next: string }
  meta: { latest: string | null }
}

let t: TestApp
let origin: string

/**
 * The document a page of `size` read at once would be, gathered from pages of 1,000 (read at once,
 * by links.next): their changes, the records they include each once in the order of its first
 * change, links.next past the last change read, and meta.latest.
 */
async function gathered(size: number, query: string, include: boolean): Promise<string> {
  const data: Document['data'] = []
  const included = new Map<string, { type: string; id: string }>()
  let path = `${CHANGES}?page[size]=1000${query}${include ? '&include=resource' : ''}`
  let after = '0'
  let latest: string | null = null
  for (let read = 0; read < size; read += 1000) {
    const page = await t.get(path)
    expect(page.status).toBe(200)
    const document = page.json as Document
    data.push(...document.data)
    for (const record of document.included ?? []) {
      const key = `${record.type}/${record.id}`
      if (!included.has(key)) included.set(key, record)
    }
    after = linkParameters(document.links.next)['page[after]'] ?? ''
    latest = document.meta.latest
    path = follow(document.links.next)
  }
  const params = new URLSearchParams({ 'page[after]': after, 'page[size]': String(size) })
  for (const [name, value] of new URLSearchParams(query)) params.set(name, value)
  if (include) params.set('include', 'resource')
  const next = `${CHANGES}?${params}`
  return JSON.stringify({
    data,
    ...(include ? { included: [...included.values()] } : {}),
    links: { next },
    meta: { latest },
  })
}

/** The two texts the same, or where they first differ. */
function expectSameText(actual: string, expected: string): void {
  let at = 0
  while (at < expected.length && actual.charCodeAt(at) === expected.charCodeAt(at)) at++
  expect({ at, actual: actual.slice(at, at + 200) }).toEqual({ at: expected.length, actual: '' })
  expect(actual.length).toBe(expected.length)
}

/** A GET over the app's port. */
function get(path: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(origin + path, { headers: { accept: JSON_API, ...headers } })
}

/** A GET through the app itself (one client), its body not read yet. */
function handle(path: string, headers: Record<string, string> = {}): Promise<Response> {
  return t.app.handle(new Request(`http://localhost${path}`, { headers: { accept: JSON_API, ...headers } }))
}

/** A GET whose long answer is left unread: it holds its slot. */
async function unread(path: string): Promise<Response> {
  const response = await handle(path)
  expect(response.status).toBe(200)
  return response
}

beforeAll(async () => {
  t = await openTestApp({ maxPageSize: SIZE, app: { longAnswers: { total: 8, perClient: 2 } } })
  await insertCatalogue(t, {
    authors: Array.from({ length: AUTHORS }, (_, i) => `Author ${i + 1}`),
    collections: Array.from({ length: COLLECTIONS }, (_, i) => `Collection ${i + 1}`),
    books: BOOKS,
    authorOf: (i) => (i % AUTHORS) + 1,
    collectionOf: (i) => (i % 10 === 9 ? null : (i % COLLECTIONS) + 1),
  })
  // The statistics autovacuum would gather after such an insert: without them PostgreSQL plans the
  // feed's reads for an empty table, and a page takes seconds.
  if (t.database.kind === 'postgres') {
    const sql = new SQL(t.database.url, { max: 1 })
    await sql.unsafe('ANALYZE')
    await sql.close()
  }
  // A record changed again after its create (included once, where it first changed), one deleted
  // (left out of included), one created; then a change past the page.
  const before = await latestChange(t)
  const patch = (id: string, name: string) =>
    t.request('PATCH', `/api/v1/books/${id}`, { body: { data: { type: 'books', id, attributes: { name } } } })
  expect((await patch('1', 'Renamed')).status).toBe(200)
  expect((await t.request('DELETE', '/api/v1/books/2')).status).toBe(204)
  await t.create('authors', { name: 'Late Author' })
  expect((await patch('3', 'Past the page')).status).toBe(200)
  // On PostgreSQL a commit is read once every older transaction has ended.
  expect((await waitForChanges(t, before, 4)).map(described)).toEqual([
    'update books/1',
    'delete books/2',
    `create authors/${AUTHORS + 1}`,
    'update books/3',
  ])
  t.app.listen({ port: 0, hostname: '127.0.0.1' })
  origin = `http://127.0.0.1:${t.app.server?.port}`
}, 120_000)

afterAll(async () => {
  await t.app.stop(true)
  await t.close()
})

describe(`GET ${LONG_PAGE} (MAX_PAGE_SIZE=${SIZE})`, () => {
  let expected: string
  beforeAll(async () => {
    expected = await gathered(SIZE, '', true)
  }, 120_000)

  it('is streamed: chunked, without Content-Length, with a weak ETag', async () => {
    const answer = await get(LONG_PAGE, { 'accept-encoding': 'identity' })
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-length')).toBeNull()
    expect(answer.headers.get('transfer-encoding')).toBe('chunked')
    expect(answer.headers.get('etag')).toStartWith('W/"')
    expectSameText(await answer.text(), expected)
  })

  it('is the document a page read at once would be: every change once, in order, then included, links and meta', async () => {
    const answer = await get(LONG_PAGE, { 'accept-encoding': 'identity' })
    const text = await answer.text()
    expectSameText(text, expected)
    const document = JSON.parse(text) as Document
    expect(Object.keys(document)).toEqual(['data', 'included', 'links', 'meta'])
    expect(document.data).toHaveLength(SIZE)
    expect(new Set(document.data.map((change) => change.id)).size).toBe(SIZE)
    // Every record created, each once, but book 2 (deleted); book 1 where it was created.
    expect(document.included).toHaveLength(AUTHORS + 1 + COLLECTIONS + BOOKS - 1)
    expect(document.included?.[AUTHORS + COLLECTIONS]).toMatchObject({ type: 'books', id: '1' })
    expect(document.included?.find((record) => record.type === 'books' && record.id === '2')).toBeUndefined()
    // links.next is the page's last change, before the one past it; meta.latest that one.
    expect(linkParameters(document.links.next)['page[after]']).toBe(document.data.at(-1)?.id)
    expect(document.meta.latest).not.toBe(document.data.at(-1)?.id)
  })

  it('is compressed as it streams, when the client asks', async () => {
    const answer = await get(LONG_PAGE, { 'accept-encoding': 'gzip' })
    expect(answer.headers.get('content-encoding')).toBe('gzip')
    expect(answer.headers.get('etag')).toMatch(/^W\/".*-gzip"$/)
    expectSameText(await answer.text(), expected)
  })

  it('answers 304 to its weak ETag while nothing has changed, before taking a slot, and 200 once something has', async () => {
    const first = await handle(LONG_PAGE)
    await first.arrayBuffer()
    const tag = first.headers.get('etag') as string
    expect(tag).toStartWith('W/"')
    // The client's two slots taken: a 304 needs none.
    const held = [await unread(LONG_PAGE), await unread(LONG_PAGE)]
    const again = await t.get(LONG_PAGE, { 'if-none-match': tag })
    expect(again.status).toBe(304)
    expect(again.headers.get('etag')).toBe(tag)
    for (const answer of held) await answer.body?.cancel()
    await t.create('authors', { name: 'Later Still' })
    const changed = await handle(LONG_PAGE, { 'if-none-match': tag })
    expect(changed.status).toBe(200)
    expect(changed.headers.get('etag')).not.toBe(tag)
    await changed.arrayBuffer()
  })
})

describe('GET /api/v1/changes?filter[type]=...&page[size]=5000 (read in batches)', () => {
  it('reads 5,000 changes and keeps those of the types asked, as a page read at once would', async () => {
    const query = '&filter[type]=authors,book_collections'
    const answer = await t.get(`${CHANGES}?page[size]=5000${query}`)
    expect(answer.status).toBe(200)
    expect(answer.json.data).toHaveLength(AUTHORS + COLLECTIONS)
    expectSameText(answer.text, await gathered(5000, query, false))
  })
})

describe('GET /api/v1/changes with page[size] over 1,000: a long answer', () => {
  it('takes a slot of its client before anything is read: past the cap, 503 with Retry-After', async () => {
    const held = [await unread(`${CHANGES}?page[size]=5000`), await unread(`${CHANGES}?page[size]=5000&page[after]=0`)]
    expect(t.app.decorator.longAnswers.count).toBe(2)
    const refused = await t.get(`${CHANGES}?page[size]=5000`)
    expectOneError(refused, 503)
    expect(refused.headers.get('retry-after')).toBe('1')
    expect(refused.json.errors[0].detail).toContain('long answers')
    // A page of up to 1,000 is no long answer, and keeps answering.
    expect((await t.get(`${CHANGES}?page[size]=1000&include=resource`)).json.data).toHaveLength(1000)
    expect((await t.get('/api/v1/books/1')).status).toBe(200)
    await held[0]?.arrayBuffer()
    await held[1]?.body?.cancel()
    expect(t.app.decorator.longAnswers.count).toBe(0)
    expect((await t.get(`${CHANGES}?page[size]=5000`)).json.data).toHaveLength(5000)
  })

  it('answers a position no longer kept 410 with its error document, and gives the slot back', async () => {
    // The other backend's form of a change id: never a position of this feed.
    const other = t.database.kind === 'postgres' ? '17' : '0a1b2c3d4e.5.6'
    const gone = await t.get(`${CHANGES}?page[size]=5000&page[after]=${other}`)
    expect(gone.status).toBe(410)
    expect(gone.json.errors).toEqual([
      { status: '410', title: 'Gone', detail: expect.stringContaining('no longer kept') },
    ])
    expect(t.app.decorator.longAnswers.count).toBe(0)
  })
})
