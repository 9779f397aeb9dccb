import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { type BulkCatalogue, insertCatalogue } from '../support/bulk'
import { notIncluded } from '../support/catalogue'
import { expectOneError, expectRecordNotFound } from '../support/expectations'
import { JSON_API, openTestApp, type TestApp } from '../support/harness'
import { checkJsonApiAnswer } from '../support/jsonapi-schema'

// Documents too large to gather (over 64 KB) are written a batch at a time and streamed: lists,
// and single records that link a to-many relationship. The data (3,000 books) is written straight
// into the database file; nothing here writes through the API.

/**
 * What an answer gathers before it starts streaming (responses.ts): a body larger than this was
 * streamed. (The piece count tells nothing: Bun hands even a string body over in 16 KB pieces.)
 */
const GATHERED_BYTES = 64 * 1024

const AUTHORS = ['Ada Quill', 'Bram Fenwick', 'Cora Lindqvist', 'Dell Marsh', 'Eve Unread']
const COLLECTIONS = ['Northern Tales', 'Southern Tales', 'Eastern Tales', 'Unused Shelf']

/**
 * 3,000 books. Five in six are by author 1 (2,500, interleaved with the others'), the rest by
 * authors 2 to 4; author 5 has none. Collections 1 to 3 hold three in four; collection 4 none.
 */
function seed(t: TestApp): Promise<BulkCatalogue> {
  return insertCatalogue(t, {
    authors: AUTHORS,
    collections: COLLECTIONS,
    books: 3000,
    authorOf: (i) => (i % 6 === 5 ? 2 + (Math.floor(i / 6) % 3) : 1),
    collectionOf: (i) => (i % 4 === 3 ? null : 1 + (i % 4)),
  })
}

interface Streamed {
  readonly status: number
  readonly bytes: number
  readonly text: string
  // biome-ignore lint/suspicious/noExplicitAny: documents of every shape
  readonly json: any
}

/** A GET whose body is read piece by piece, as a client reading the stream would. */
async function stream(t: TestApp, path: string): Promise<Streamed> {
  const response = await t.app.handle(new Request(`http://localhost${path}`, { headers: { accept: JSON_API } }))
  const body = response.body
  if (!body) throw new Error(`GET ${path} answered ${response.status} without a body`)
  const decoder = new TextDecoder()
  let text = ''
  let bytes = 0
  for await (const piece of body) {
    bytes += piece.byteLength
    text += decoder.decode(piece, { stream: true })
  }
  text += decoder.decode()
  checkJsonApiAnswer({ method: 'GET', path, status: response.status, headers: response.headers, text })
  return { status: response.status, bytes, text, json: JSON.parse(text) }
}

function expectStreamed(answer: Streamed): void {
  expect(answer.status).toBe(200)
  expect(answer.bytes).toBeGreaterThan(GATHERED_BYTES)
}

interface Identified {
  readonly type: string
  readonly id: string
}

/** `type:id` of each record, in order. */
function keys(records: readonly Identified[]): string[] {
  return records.map((r) => `${r.type}:${r.id}`)
}

const author = (id: number) => ({ type: 'authors', id: String(id) })
const collection = (id: number | null) => (id === null ? null : { type: 'book_collections', id: String(id) })

let t: TestApp
let c: BulkCatalogue
beforeAll(async () => {
  t = await openTestApp({ readWorkers: 2 })
  c = await seed(t)
})
afterAll(() => t.close())

describe('GET /api/v1/books?include=author,book_collection (streamed)', () => {
  let answer: Streamed
  beforeAll(async () => {
    answer = await stream(t, '/api/v1/books?include=author,book_collection')
  })

  it('is streamed, and the pieces make one JSON document of data then included', () => {
    expectStreamed(answer)
    expect(Object.keys(answer.json)).toEqual(['data', 'included'])
  })

  it('has every book once, in id order, with author and book_collection linkage', () => {
    expect(answer.json.data).toEqual(
      c.books.map((b) => ({
        id: String(b.id),
        type: 'books',
        attributes: { name: b.name },
        relationships: { author: { data: author(b.author) }, book_collection: { data: collection(b.collection) } },
      })),
    )
  })

  it('includes each referenced author and collection exactly once, no book and nothing unreferenced', () => {
    const included = answer.json.included as Identified[]
    expect(new Set(keys(included)).size).toBe(included.length)
    const referenced = new Set<string>()
    for (const b of c.books) {
      referenced.add(`authors:${b.author}`)
      if (b.collection !== null) referenced.add(`book_collections:${b.collection}`)
    }
    expect(new Set(keys(included))).toEqual(referenced)
    expect(referenced.has('authors:5')).toBe(false)
    expect(referenced.has('book_collections:4')).toBe(false)
    const full = (type: string, records: BulkCatalogue['authors']) =>
      records
        .filter((r) => referenced.has(`${type}:${r.id}`))
        .map((r) => ({ id: String(r.id), type, attributes: { name: r.name }, relationships: { books: notIncluded } }))
    expect(included.filter((r) => r.type === 'authors')).toEqual(full('authors', c.authors))
    expect(included.filter((r) => r.type === 'book_collections')).toEqual(full('book_collections', c.collections))
  })
})

describe('GET /api/v1/authors?include=books.author (streamed)', () => {
  let answer: Streamed
  beforeAll(async () => {
    answer = await stream(t, '/api/v1/authors?include=books.author')
  })

  it('lists every author with the ids of their books in id order', () => {
    expectStreamed(answer)
    expect(answer.json.data).toEqual(
      c.authors.map((a) => ({
        id: String(a.id),
        type: 'authors',
        attributes: { name: a.name },
        relationships: {
          books: { data: c.books.filter((b) => b.author === a.id).map((b) => ({ type: 'books', id: String(b.id) })) },
        },
      })),
    )
  })

  it('includes each book once, with its author linkage, and repeats no primary author', () => {
    const included = answer.json.included as Identified[]
    expect(included.every((r) => r.type === 'books')).toBe(true)
    expect(new Set(keys(included)).size).toBe(included.length)
    const byId = [...included].sort((a, b) => Number(a.id) - Number(b.id))
    expect(byId).toEqual(
      c.books.map((b) => ({
        id: String(b.id),
        type: 'books',
        attributes: { name: b.name },
        relationships: { author: { data: author(b.author) }, book_collection: notIncluded },
      })),
    )
  })
})

describe('GET /api/v1/authors/{id} for an author of 2,500 books (streamed)', () => {
  let answer: Streamed
  const mine = () => c.books.filter((b) => b.author === 1)
  beforeAll(async () => {
    answer = await stream(t, '/api/v1/authors/1')
  })

  it('is the author with the ids of all 2,500 books in id order', () => {
    expectStreamed(answer)
    expect(mine()).toHaveLength(2500)
    expect(answer.json.data).toEqual({
      id: '1',
      type: 'authors',
      attributes: { name: AUTHORS[0] },
      relationships: { books: { data: mine().map((b) => ({ type: 'books', id: String(b.id) })) } },
    })
  })

  it('includes each of the books once, their own relationships unlinked', () => {
    const included = answer.json.included as Identified[]
    expect(new Set(keys(included)).size).toBe(included.length)
    expect([...included].sort((a, b) => Number(a.id) - Number(b.id))).toEqual(
      mine().map((b) => ({
        id: String(b.id),
        type: 'books',
        attributes: { name: b.name },
        relationships: { author: notIncluded, book_collection: notIncluded },
      })),
    )
  })

  it('has the same shape for an author small enough to be gathered whole', async () => {
    const small = await stream(t, '/api/v1/authors/2')
    expect(small.status).toBe(200)
    expect(small.bytes).toBeLessThan(GATHERED_BYTES)
    expect(small.json.data.relationships.books.data).toEqual(
      c.books.filter((b) => b.author === 2).map((b) => ({ type: 'books', id: String(b.id) })),
    )
    expect(keys(small.json.included)).toEqual(c.books.filter((b) => b.author === 2).map((b) => `books:${b.id}`))
  })
})

describe('sparse fieldsets on a streamed list', () => {
  it('fields[books]=name,author and fields[authors]=name trim data and included; other types stay whole', async () => {
    const answer = await stream(
      t,
      '/api/v1/books?include=author,book_collection&fields[books]=name,author&fields[authors]=name',
    )
    expectStreamed(answer)
    expect(answer.json.data).toEqual(
      c.books.map((b) => ({
        id: String(b.id),
        type: 'books',
        attributes: { name: b.name },
        relationships: { author: { data: author(b.author) } },
      })),
    )
    const included = answer.json.included as Identified[]
    expect(included.filter((r) => r.type === 'authors')).toEqual(
      [1, 2, 3, 4].map((id) => ({
        id: String(id),
        type: 'authors',
        attributes: { name: AUTHORS[id - 1] },
        relationships: {},
      })),
    )
    expect(included.filter((r) => r.type === 'book_collections')).toEqual(
      [1, 2, 3].map((id) => ({
        id: String(id),
        type: 'book_collections',
        attributes: { name: COLLECTIONS[id - 1] },
        relationships: { books: notIncluded },
      })),
    )
  })

  it('fields[authors]=name drops the linkage the books are included by, and still includes every book once', async () => {
    const answer = await stream(t, '/api/v1/authors?include=books&fields[authors]=name')
    expectStreamed(answer)
    expect(answer.json.data).toEqual(
      c.authors.map((a) => ({ id: String(a.id), type: 'authors', attributes: { name: a.name }, relationships: {} })),
    )
    // Path by path, in id order: the pieces of `included` join up with nothing lost or repeated.
    expect(answer.json.included).toEqual(
      c.books.map((b) => ({
        id: String(b.id),
        type: 'books',
        attributes: { name: b.name },
        relationships: { author: notIncluded, book_collection: notIncluded },
      })),
    )
  })

  it('an include that reaches nothing answers `included` [] (JSON:API 1.1: a compound document all the same)', async () => {
    const answer = await stream(t, `/api/v1/authors?include=books.author&filter[name]=${AUTHORS[4]}`)
    expect(answer.status).toBe(200)
    expect(answer.json).toEqual({
      data: [{ id: '5', type: 'authors', attributes: { name: AUTHORS[4] }, relationships: { books: { data: [] } } }],
      included: [],
    })
  })

  it('fields[books]=name renders empty relationships, and the included authors are still there', async () => {
    const answer = await stream(t, '/api/v1/books?include=author&fields[books]=name')
    expectStreamed(answer)
    expect(answer.json.data).toEqual(
      c.books.map((b) => ({ id: String(b.id), type: 'books', attributes: { name: b.name }, relationships: {} })),
    )
    expect(keys(answer.json.included)).toEqual(['authors:1', 'authors:2', 'authors:3', 'authors:4'])
  })
})

describe('HEAD of a streamed list over a real port', () => {
  it("answers 200 with the GET's headers and no body, and logs no error: the list stops being read", async () => {
    const heads = await openTestApp({ readWorkers: 1, logLevel: 'warn' })
    try {
      await seed(heads)
      heads.app.listen({ port: 0, hostname: '127.0.0.1' })
      const base = `http://127.0.0.1:${heads.app.server?.port}`
      for (const path of ['/api/v1/books', '/api/v1/books?include=author', '/api/v1/authors/1']) {
        const got = await fetch(base + path, { headers: { accept: JSON_API } })
        expect((await got.text()).length).toBeGreaterThan(64 * 1024)
        const head = await fetch(base + path, { method: 'HEAD', headers: { accept: JSON_API } })
        expect(head.status).toBe(200)
        expect(await head.text()).toBe('')
        expect(head.headers.get('etag')).toBe(got.headers.get('etag'))
      }
      // A cut-off HEAD was logged as a failed list ("response cut off", level error) after the answer.
      await Bun.sleep(200)
      expect(heads.logs.filter((line) => JSON.parse(line).level === 'error')).toEqual([])
    } finally {
      await heads.app.stop(true)
      await heads.close()
    }
  })
})

describe('read workers', () => {
  // Read workers read SQLite files. The same catalogue behind an app with two and one that reads on
  // its main thread: ids match, as both files are fresh.
  let workers: TestApp
  let local: TestApp
  beforeAll(async () => {
    workers = await openTestApp({ backend: 'sqlite', readWorkers: 2 })
    local = await openTestApp({ backend: 'sqlite', readWorkers: 0 })
    await seed(workers)
    await seed(local)
  })
  afterAll(async () => {
    await workers.close()
    await local.close()
  })

  it.each([
    '/api/v1/books?include=author,book_collection',
    '/api/v1/authors?include=books.author',
    '/api/v1/authors/1',
    '/api/v1/books?filter[search]=quill%20winter',
    '/api/v1/books?sort=-name',
    '/api/v1/books?filter[author]=2,3&sort=-name',
    '/api/v1/books?sort=name&page[size]=100&page[after]=&include=author',
    '/api/v1/books?page[number]=7&page[size]=100&include=book_collection',
    '/api/v1/book_collections?include=books',
  ])('GET %s answers the same text with 2 workers as on the main thread', async (path) => {
    const [onWorker, onMain] = [await stream(workers, path), await stream(local, path)]
    expect(onWorker.status).toBe(200)
    expect([onWorker.json.data].flat().length).toBeGreaterThan(0)
    expect(onWorker.text).toBe(onMain.text)
  })

  it('a cursor page and the page its next link names agree across workers and main thread', async () => {
    const first = await stream(workers, '/api/v1/books?sort=-name&page[size]=100&page[after]=')
    const next = first.json.links.next as string
    expect(next).toBeString()
    const [onWorker, onMain] = [await stream(workers, next), await stream(local, next)]
    expect(onWorker.json.data).toHaveLength(100)
    expect(onWorker.text).toBe(onMain.text)
  })

  it('a list query error on a worker keeps its JSON:API 400', async () => {
    const answer = await t.get('/api/v1/books?include=publisher')
    expectOneError(answer, 400, { parameter: 'include' })
    expect(answer.json).toEqual((await local.get('/api/v1/books?include=publisher')).json)
    expectOneError(await t.get('/api/v1/books?filter[author]=abc'), 400, { parameter: 'filter[author]' })
  })

  it('an author that does not exist is a 404 with an empty errors array from a worker', async () => {
    expectRecordNotFound(await t.get('/api/v1/authors/999999'))
    expectRecordNotFound(await t.get('/api/v1/authors/999999?include=books.author'))
  })
})
