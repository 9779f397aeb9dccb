import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { insertCatalogue } from '../support/bulk'
import { type Catalogue, ids, seedCatalogue } from '../support/catalogue'
import { expectOneError } from '../support/expectations'
import { type Answer, openTestApp, type TestApp } from '../support/harness'

// `page[offset]` and `page[limit]`: the numbered page spelled as Orbit and others send it (see
// test/support/catalogue.ts for the 7 books; nothing here writes but the last block, with its own app).

let t: TestApp
let c: Catalogue
beforeAll(async () => {
  t = await openTestApp()
  c = await seedCatalogue(t)
})
afterAll(() => t.close())

/** The books in id order, by their keys in the catalogue. */
const allIds = () => c.allBooks.map((b) => b.id)

/** A link's query as sorted pairs: brackets may be encoded or not. */
function paramsOf(link: string | undefined): [string, string][] {
  if (link === undefined) return []
  expect(link.startsWith('/api/v1/')).toBe(true)
  return [...new URL(link, 'http://localhost').searchParams].sort()
}

/** The links of an offset page: each named one points at that offset with this limit and `params`; none other is there. */
function expectOffsetLinks(
  answer: Answer,
  limit: number,
  offsets: Partial<Record<'self' | 'first' | 'prev' | 'next' | 'last', number>>,
  params: Record<string, string> = {},
): void {
  expect(answer.status).toBe(200)
  const links = answer.json.links as Record<string, string>
  expect(Object.keys(links).sort()).toEqual(Object.keys(offsets).sort())
  for (const [name, offset] of Object.entries(offsets)) {
    const wanted = Object.entries({ ...params, 'page[offset]': String(offset), 'page[limit]': String(limit) })
    expect(paramsOf(links[name])).toEqual(wanted.sort())
  }
}

describe('GET /api/v1/books?page[offset]=&page[limit]=', () => {
  it('answers the limit records after the offset, with meta.total and links in the same spelling', async () => {
    const answer = await t.get('/api/v1/books?page[offset]=2&page[limit]=3')
    expect(ids(answer)).toEqual(allIds().slice(2, 5))
    expect(answer.json.meta).toEqual({ total: 7 })
    expectOffsetLinks(answer, 3, { self: 2, first: 0, prev: 0, next: 5, last: 4 })
  })

  it('takes any offset, not only multiples of the limit: prev stops at 0', async () => {
    const answer = await t.get('/api/v1/books?page[offset]=1&page[limit]=3')
    expect(ids(answer)).toEqual(allIds().slice(1, 4))
    expectOffsetLinks(answer, 3, { self: 1, first: 0, prev: 0, next: 4, last: 4 })
  })

  it('has no prev at offset 0 and no next on the last records; last holds the final limit records', async () => {
    const first = await t.get('/api/v1/books?page[offset]=0&page[limit]=3')
    expectOffsetLinks(first, 3, { self: 0, first: 0, next: 3, last: 4 })
    const end = await t.get('/api/v1/books?page[offset]=4&page[limit]=3')
    expect(ids(end)).toEqual(allIds().slice(4))
    expectOffsetLinks(end, 3, { self: 4, first: 0, prev: 1, last: 4 })
  })

  it('answers data [] past the end, with prev and the same meta', async () => {
    const answer = await t.get('/api/v1/books?page[offset]=10&page[limit]=3')
    expect(answer.json.data).toEqual([])
    expect(answer.json.meta).toEqual({ total: 7 })
    expectOffsetLinks(answer, 3, { self: 10, first: 0, prev: 7, last: 4 })
  })

  it('takes page[offset] alone with the default limit of 20, and page[limit] alone from offset 0', async () => {
    const offset = await t.get('/api/v1/books?page[offset]=5')
    expect(ids(offset)).toEqual(allIds().slice(5))
    expectOffsetLinks(offset, 20, { self: 5, first: 0, prev: 0, last: 0 })
    const limit = await t.get('/api/v1/books?page[limit]=2')
    expect(ids(limit)).toEqual(allIds().slice(0, 2))
    expectOffsetLinks(limit, 2, { self: 0, first: 0, next: 2, last: 5 })
  })

  it('answers exactly what the numbered page of the same window answers, item cursors included', async () => {
    const offset = await t.get('/api/v1/books?sort=-name&include=author&page[offset]=3&page[limit]=3')
    const numbered = await t.get('/api/v1/books?sort=-name&include=author&page[number]=2&page[size]=3')
    expect(offset.json.data).toEqual(numbered.json.data)
    expect(offset.json.included).toEqual(numbered.json.included)
    expect(offset.json.meta).toEqual(numbered.json.meta)
  })

  it('keeps filters, sort and include in every link', async () => {
    const terry = c.authors.terry.id
    const answer = await t.get(
      `/api/v1/books?filter[author]=${terry}&sort=name&include=author&page[offset]=1&page[limit]=2`,
    )
    expect(answer.json.meta).toEqual({ total: 4 })
    expectOffsetLinks(
      answer,
      2,
      { self: 1, first: 0, prev: 0, next: 3, last: 2 },
      { 'filter[author]': terry, sort: 'name', include: 'author' },
    )
  })

  it('visits every book once following next from offset 0', async () => {
    const seen: string[] = []
    let link: string | undefined = '/api/v1/books?sort=name&page[limit]=2'
    for (let pages = 0; link && pages < 10; pages++) {
      const answer = await t.get(link)
      seen.push(...ids(answer))
      link = answer.json.links.next
    }
    const byName = (await t.get('/api/v1/books?sort=name')).json.data.map((b: { id: string }) => b.id)
    expect(seen).toEqual(byName)
  })

  it('pages the related books of an author', async () => {
    const ursula = c.authors.ursula.id
    const answer = await t.get(`/api/v1/authors/${ursula}/books?page[offset]=1&page[limit]=1`)
    expect(ids(answer)).toEqual([c.books.dispossessed.id])
    expect(answer.json.meta).toEqual({ total: 3 })
    expect(paramsOf(answer.json.links.next)).toEqual([
      ['page[limit]', '1'],
      ['page[offset]', '2'],
    ])
  })
})

describe('invalid page[offset] and page[limit]', () => {
  it.each([['-1'], ['1.5'], ['abc'], [''], ['01'], ['99999999999999999']])(
    'GET /api/v1/books?page[offset]=%s answers 400 naming page[offset]',
    async (value) => {
      expectOneError(await t.get(`/api/v1/books?page[offset]=${value}`), 400, { parameter: 'page[offset]' })
    },
  )

  it.each([['0'], ['-1'], ['abc'], [''], ['101']])(
    'GET /api/v1/books?page[limit]=%s answers 400 naming page[limit]',
    async (value) => {
      expectOneError(await t.get(`/api/v1/books?page[limit]=${value}`), 400, { parameter: 'page[limit]' })
    },
  )

  it('names the maximum like page[size] does', async () => {
    const answer = await t.get('/api/v1/books?page[limit]=500')
    expect(answer.json.errors[0].detail).toBe('page[limit] is at most 100 (got 500)')
  })

  it.each([
    ['page[offset]=0&page[number]=1', 'page[offset]', 'page[number]'],
    ['page[offset]=0&page[size]=2', 'page[offset]', 'page[size]'],
    ['page[limit]=2&page[size]=2', 'page[limit]', 'page[size]'],
    ['page[number]=2&page[limit]=2', 'page[limit]', 'page[number]'],
  ])('GET /api/v1/books?%s mixes the two spellings: 400 naming %s', async (query, parameter, other) => {
    const answer = await t.get(`/api/v1/books?${query}`)
    expectOneError(answer, 400, { parameter })
    expect(answer.json.errors[0].detail).toBe(
      `page[offset] and page[limit] spell page[number] and page[size] another way: use one spelling, not both (got ${parameter} and ${other})`,
    )
  })

  it.each([
    ['page[offset]=0&page[after]=', 'page[offset]'],
    ['page[limit]=2&page[before]=', 'page[limit]'],
  ])('GET /api/v1/books?%s is not a cursor page: 400 naming %s', async (query, parameter) => {
    expectOneError(await t.get(`/api/v1/books?${query}`), 400, { parameter })
  })

  it('GET /api/v1/books/{id}?page[offset]=0 answers 400: pages are for lists', async () => {
    expectOneError(await t.get(`/api/v1/books/${c.books.mort.id}?page[offset]=0`), 400, { parameter: 'page[offset]' })
  })
})

describe('deep offsets (1,100 book collections), read by a read worker as deep numbered pages are', () => {
  let big: TestApp
  let all: string[]
  beforeAll(async () => {
    big = await openTestApp()
    const shelves = Array.from({ length: 1099 }, (_, i) => `Shelf ${i + 2}`)
    await insertCatalogue(big, {
      authors: [],
      collections: ['First', ...shelves],
      books: 0,
      authorOf: () => 1,
      collectionOf: () => null,
    })
    all = Array.from({ length: 1100 }, (_, i) => String(i + 1))
  })
  afterAll(() => big.close())

  it('answers offset 1,050 with the right records and links', async () => {
    const answer = await big.get('/api/v1/book_collections?page[offset]=1050&page[limit]=20')
    expect(ids(answer)).toEqual(all.slice(1050, 1070))
    expect(answer.json.meta).toEqual({ total: 1100 })
    expect(paramsOf(answer.json.links.last)).toEqual([
      ['page[limit]', '20'],
      ['page[offset]', '1080'],
    ])
  })
})
