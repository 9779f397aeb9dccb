import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { type Catalogue, expectDocument, ids, type SeededBook, seedCatalogue } from '../support/catalogue'
import { expectOneError } from '../support/expectations'
import { type Answer, openTestApp, type TestApp } from '../support/harness'

// `page[number]` and `page[size]` on the lists, with `meta.total` and the `links` that go with
// them (see test/support/catalogue.ts for the data; nothing here writes except the last block,
// which has its own app).

type LinkName = 'self' | 'first' | 'last' | 'prev' | 'next'

interface ExpectedPage {
  /** The list's path, e.g. `/api/v1/books`. */
  readonly path: string
  /** The request's other query parameters, which every link must carry unchanged. */
  readonly params?: Record<string, string>
  readonly size: number
  /** The page number each link points at; links absent here must be absent from the answer. */
  readonly links: Partial<Record<LinkName, number>>
  readonly total: number
}

/** A link as path plus its query parameters as sorted pairs (a repeated parameter shows twice). */
function parseLink(link: unknown): { relative: boolean; path: string; params: [string, string][] } | unknown {
  if (typeof link !== 'string') return link
  const url = new URL(link, 'http://localhost')
  return { relative: link.startsWith('/api/v1/'), path: url.pathname, params: [...url.searchParams].sort() }
}

/**
 * A paginated 200: top-level `data`, `meta` = `{total}` and `links` (plus `included` when
 * `withIncluded`), and exactly the expected links, each a relative URL to the same list with the
 * same other parameters and its own page[number] and page[size]. Brackets may be encoded or not.
 * Each record of `data` carries exactly its item cursor in `meta.page.cursor` (what the cursor is
 * worth is tested in fetching-item-cursors.test.ts); it is taken off here, so that callers compare
 * the rest of each record with what a list renders.
 */
function expectPage(answer: Answer, expected: ExpectedPage, withIncluded = false): void {
  expect(answer.status).toBe(200)
  for (const record of answer.json.data as Record<string, unknown>[]) {
    expect(record.meta).toEqual({ page: { cursor: expect.stringMatching(/^[\w-]+$/) } })
    delete record.meta
  }
  expect(Object.keys(answer.json).sort()).toEqual(
    withIncluded ? ['data', 'included', 'links', 'meta'] : ['data', 'links', 'meta'],
  )
  expect(answer.json.meta).toEqual({ total: expected.total })
  const links = answer.json.links as Record<string, unknown>
  const parsed = Object.fromEntries(Object.entries(links).map(([name, link]) => [name, parseLink(link)]))
  const wanted = Object.fromEntries(
    Object.entries(expected.links).map(([name, number]) => [
      name,
      {
        relative: true,
        path: expected.path,
        params: Object.entries({
          ...expected.params,
          'page[number]': String(number),
          'page[size]': String(expected.size),
        }).sort(),
      },
    ]),
  )
  expect(parsed).toEqual(wanted)
}

let t: TestApp
let c: Catalogue
beforeAll(async () => {
  t = await openTestApp()
  c = await seedCatalogue(t)
})
afterAll(() => t.close())

const booksOf = (...books: SeededBook[]) => books.map((b) => c.book(b))

describe('without page parameters', () => {
  it('a list has no links and no meta, exactly as before', async () => {
    expectDocument(await t.get('/api/v1/books'), { data: c.allBooks.map((b) => c.book(b)) })
    expectDocument(await t.get('/api/v1/authors?sort=-id'), {
      data: [...c.allAuthors].reverse().map((a) => c.author(a)),
    })
    expectDocument(await t.get(`/api/v1/books?author_id=${c.authors.ursula.id}`), {
      data: booksOf(c.books.leftHand, c.books.dispossessed, c.books.ursulaStories),
    })
  })
})

describe('pages of the book list (7 books, page[size]=3)', () => {
  const path = '/api/v1/books'

  it('page[size] alone answers the first page', async () => {
    const answer = await t.get('/api/v1/books?page[size]=3')
    expectPage(answer, { path, size: 3, total: 7, links: { self: 1, first: 1, last: 3, next: 2 } })
    expect(answer.json.data).toEqual(booksOf(c.books.leftHand, c.books.dispossessed, c.books.guards))
  })

  it('page[number]=1 is the same first page', async () => {
    const answer = await t.get('/api/v1/books?page[number]=1&page[size]=3')
    expectPage(answer, { path, size: 3, total: 7, links: { self: 1, first: 1, last: 3, next: 2 } })
    expect(answer.json.data).toEqual(booksOf(c.books.leftHand, c.books.dispossessed, c.books.guards))
  })

  it('a middle page has prev and next', async () => {
    const answer = await t.get('/api/v1/books?page[number]=2&page[size]=3')
    expectPage(answer, { path, size: 3, total: 7, links: { self: 2, first: 1, last: 3, prev: 1, next: 3 } })
    expect(answer.json.data).toEqual(booksOf(c.books.mort, c.books.ursulaStories, c.books.terryStories))
  })

  it('the last page has prev and no next', async () => {
    const answer = await t.get('/api/v1/books?page[number]=3&page[size]=3')
    expectPage(answer, { path, size: 3, total: 7, links: { self: 3, first: 1, last: 3, prev: 2 } })
    expect(answer.json.data).toEqual(booksOf(c.books.smallGods))
  })

  it('a page beyond the last answers 200 with data [] and the same meta and links shape', async () => {
    const answer = await t.get('/api/v1/books?page[number]=4&page[size]=3')
    expectPage(answer, { path, size: 3, total: 7, links: { self: 4, first: 1, last: 3, prev: 3 } })
    expect(answer.json.data).toEqual([])
  })

  it('a page size equal to the total gives one page without next; one less gives two', async () => {
    const whole = await t.get('/api/v1/books?page[size]=7')
    expectPage(whole, { path, size: 7, total: 7, links: { self: 1, first: 1, last: 1 } })
    expect(whole.json.data).toEqual(c.allBooks.map((b) => c.book(b)))
    const split = await t.get('/api/v1/books?page[size]=6')
    expectPage(split, { path, size: 6, total: 7, links: { self: 1, first: 1, last: 2, next: 2 } })
    expect(ids(split)).toHaveLength(6)
  })

  it('page[number] alone uses the default size 20', async () => {
    const first = await t.get('/api/v1/books?page[number]=1')
    expectPage(first, { path, size: 20, total: 7, links: { self: 1, first: 1, last: 1 } })
    expect(first.json.data).toEqual(c.allBooks.map((b) => c.book(b)))
    const second = await t.get('/api/v1/books?page[number]=2')
    expectPage(second, { path, size: 20, total: 7, links: { self: 2, first: 1, last: 1, prev: 1 } })
    expect(second.json.data).toEqual([])
  })

  it('percent-encoded brackets name the same parameters', async () => {
    const answer = await t.get('/api/v1/books?page%5Bnumber%5D=2&page%5Bsize%5D=3')
    expectPage(answer, { path, size: 3, total: 7, links: { self: 2, first: 1, last: 3, prev: 1, next: 3 } })
    expect(answer.json.data).toEqual(booksOf(c.books.mort, c.books.ursulaStories, c.books.terryStories))
  })

  it('following next from the first page visits every book once, in the list order, and ends without next', async () => {
    const seen: string[] = []
    let link: string | undefined = '/api/v1/books?sort=-name&page[size]=2'
    let pages = 0
    while (link !== undefined && pages < 10) {
      const answer = await t.get(link)
      expect(answer.status).toBe(200)
      seen.push(...ids(answer))
      link = answer.json.links.next
      pages++
    }
    expect(pages).toBe(4)
    const byNameDescending = [
      'leftHand',
      'dispossessed',
      'smallGods',
      'mort',
      'guards',
      'terryStories',
      'ursulaStories',
    ]
    expect(seen).toEqual(byNameDescending.map((key) => c.books[key as keyof Catalogue['books']].id))
  })

  it('following prev, first and last lands on those pages', async () => {
    const middle = await t.get('/api/v1/books?page[number]=2&page[size]=3')
    expect(ids(await t.get(middle.json.links.prev))).toEqual(ids(await t.get('/api/v1/books?page[size]=3')))
    expect(ids(await t.get(middle.json.links.first))).toEqual(
      [c.books.leftHand, c.books.dispossessed, c.books.guards].map((b) => b.id),
    )
    expect(ids(await t.get(middle.json.links.last))).toEqual([c.books.smallGods.id])
    expect(ids(await t.get(middle.json.links.self))).toEqual(ids(middle))
  })
})

describe('pages of the other lists and of filtered lists', () => {
  it('paginates authors', async () => {
    const answer = await t.get('/api/v1/authors?page[number]=2&page[size]=2')
    expectPage(answer, { path: '/api/v1/authors', size: 2, total: 3, links: { self: 2, first: 1, last: 2, prev: 1 } })
    expect(answer.json.data).toEqual([c.author(c.authors.nobody)])
  })

  it('paginates book collections', async () => {
    const answer = await t.get('/api/v1/book_collections?page[size]=2')
    expectPage(answer, {
      path: '/api/v1/book_collections',
      size: 2,
      total: 3,
      links: { self: 1, first: 1, last: 2, next: 2 },
    })
    expect(answer.json.data).toEqual([c.collection(c.collections.hainish), c.collection(c.collections.discworld)])
  })

  it('meta.total counts the records matching the filters, and the links keep the filters', async () => {
    const terry = c.authors.terry.id
    const answer = await t.get(`/api/v1/books?filter[author]=${terry}&page[size]=3`)
    expectPage(answer, {
      path: '/api/v1/books',
      params: { 'filter[author]': terry },
      size: 3,
      total: 4,
      links: { self: 1, first: 1, last: 2, next: 2 },
    })
    expect(answer.json.data).toEqual(booksOf(c.books.guards, c.books.mort, c.books.terryStories))
  })

  it('the original ?author_id= is kept in the links too', async () => {
    const ursula = c.authors.ursula.id
    const answer = await t.get(`/api/v1/books?author_id=${ursula}&page[number]=2&page[size]=2`)
    expectPage(answer, {
      path: '/api/v1/books',
      params: { author_id: ursula },
      size: 2,
      total: 3,
      links: { self: 2, first: 1, last: 2, prev: 1 },
    })
    expect(answer.json.data).toEqual(booksOf(c.books.ursulaStories))
  })

  it('with no matching records: data [], total 0, and last points at page 1', async () => {
    const answer = await t.get('/api/v1/book_collections?filter[name]=Nothing&page[size]=5')
    expectPage(answer, {
      path: '/api/v1/book_collections',
      params: { 'filter[name]': 'Nothing' },
      size: 5,
      total: 0,
      links: { self: 1, first: 1, last: 1 },
    })
    expect(answer.json.data).toEqual([])
    const later = await t.get('/api/v1/book_collections?filter[name]=Nothing&page[number]=3&page[size]=5')
    expectPage(later, {
      path: '/api/v1/book_collections',
      params: { 'filter[name]': 'Nothing' },
      size: 5,
      total: 0,
      links: { self: 3, first: 1, last: 1, prev: 2 },
    })
    expect(later.json.data).toEqual([])
  })

  it('included holds only the records related to the page', async () => {
    const answer = await t.get('/api/v1/books?include=author&page[size]=2')
    expectPage(
      answer,
      {
        path: '/api/v1/books',
        params: { include: 'author' },
        size: 2,
        total: 7,
        links: { self: 1, first: 1, last: 4, next: 2 },
      },
      true,
    )
    expect(answer.json.data).toEqual([c.book(c.books.leftHand, ['author']), c.book(c.books.dispossessed, ['author'])])
    expect(answer.json.included).toEqual([c.author(c.authors.ursula)])
  })
})

describe('filter, sort, page, include and fields together', () => {
  it('GET /api/v1/books?filter[author]=T&sort=-name&page[size]=2&page[number]=2&include=author&fields[books]=name,author&fields[authors]=name', async () => {
    const terry = c.authors.terry
    const params = {
      'filter[author]': terry.id,
      sort: '-name',
      include: 'author',
      'fields[books]': 'name,author',
      'fields[authors]': 'name',
    }
    const answer = await t.get(
      `/api/v1/books?filter[author]=${terry.id}&sort=-name&page[size]=2&page[number]=2&include=author&fields[books]=name,author&fields[authors]=name`,
    )
    // Terry's books by name descending: Small Gods, Mort | Guards! Guards!, Collected Stories.
    expectPage(
      answer,
      { path: '/api/v1/books', params, size: 2, total: 4, links: { self: 2, first: 1, last: 2, prev: 1 } },
      true,
    )
    const linkedToTerry = (b: SeededBook) => ({
      id: b.id,
      type: 'books',
      attributes: { name: b.name },
      relationships: { author: { data: { type: 'authors', id: terry.id } } },
    })
    expect(answer.json.data).toEqual([linkedToTerry(c.books.guards), linkedToTerry(c.books.terryStories)])
    expect(answer.json.included).toEqual([
      { id: terry.id, type: 'authors', attributes: { name: terry.name }, relationships: {} },
    ])
  })
})

describe('invalid page parameters', () => {
  it('page[size] above the maximum of 100 answers 400 naming page[size], and the detail names the maximum', async () => {
    const answer = await t.get('/api/v1/books?page[size]=101')
    expectOneError(answer, 400, { parameter: 'page[size]' })
    expect(answer.json.errors[0].detail).toContain('100')
  })

  it.each([['0'], ['-1'], ['1.5'], ['abc'], [''], ['1000']])(
    'GET /api/v1/books?page[size]=%s answers 400 naming page[size]',
    async (value) => {
      expectOneError(await t.get(`/api/v1/books?page[size]=${value}`), 400, { parameter: 'page[size]' })
    },
  )

  it.each([['0'], ['-1'], ['1.5'], ['abc'], ['']])(
    'GET /api/v1/books?page[number]=%s answers 400 naming page[number]',
    async (value) => {
      expectOneError(await t.get(`/api/v1/books?page[number]=${value}&page[size]=3`), 400, {
        parameter: 'page[number]',
      })
    },
  )

  it.each([
    ['/api/v1/books?page[foo]=1', 'page[foo]'],
    ['/api/v1/authors?page[cursor]=abc', 'page[cursor]'],
    ['/api/v1/book_collections?page=1', 'page'],
    ['/api/v1/books?page[size]=2&page[size]=3', 'page[size]'],
  ])('GET %s answers 400 naming %s', async (path, parameter) => {
    expectOneError(await t.get(path), 400, { parameter })
  })

  it.each([
    ['books', 'page[number]=1', 'page[number]', () => c.books.mort.id],
    ['authors', 'page[size]=2', 'page[size]', () => c.authors.terry.id],
    ['book_collections', 'page[size]=2', 'page[size]', () => c.collections.discworld.id],
  ])('GET /api/v1/%s/{id}?%s answers 400 naming %s', async (type, page, parameter, id) => {
    expectOneError(await t.get(`/api/v1/${type}/${id()}?${page}`), 400, { parameter })
  })
})

describe('default and maximum page size (45 book collections)', () => {
  let big: TestApp
  let all: string[]
  const path = '/api/v1/book_collections'
  beforeAll(async () => {
    big = await openTestApp()
    all = []
    for (let i = 1; i <= 45; i++) all.push(await big.create('book_collections', { name: `Shelf ${i}` }))
  })
  afterAll(() => big.close())

  it('page[number]=1 alone answers 20 records', async () => {
    const answer = await big.get(`${path}?page[number]=1`)
    expectPage(answer, { path, size: 20, total: 45, links: { self: 1, first: 1, last: 3, next: 2 } })
    expect(ids(answer)).toEqual(all.slice(0, 20))
  })

  it('the third page of 20 holds the last 5', async () => {
    const answer = await big.get(`${path}?page[number]=3`)
    expectPage(answer, { path, size: 20, total: 45, links: { self: 3, first: 1, last: 3, prev: 2 } })
    expect(ids(answer)).toEqual(all.slice(40))
  })

  it('page[size]=100 (the maximum) is accepted and holds all 45', async () => {
    const answer = await big.get(`${path}?page[size]=100`)
    expectPage(answer, { path, size: 100, total: 45, links: { self: 1, first: 1, last: 1 } })
    expect(ids(answer)).toEqual(all)
  })

  it('without page parameters every record comes back, with no links or meta', async () => {
    const answer = await big.get(path)
    expect(answer.status).toBe(200)
    expect(Object.keys(answer.json)).toEqual(['data'])
    expect(ids(answer)).toEqual(all)
  })
})

describe('meta.total as records are written (its own app)', () => {
  let app: TestApp
  beforeAll(async () => {
    app = await openTestApp()
  })
  afterAll(() => app.close())

  const total = async (path: string) => {
    const answer = await app.get(`${path}${path.includes('?') ? '&' : '?'}page[size]=1`)
    expect(answer.status).toBe(200)
    return (answer.json.meta as { total: number }).total
  }
  const totals = async () => ({
    authors: await total('/api/v1/authors'),
    book_collections: await total('/api/v1/book_collections'),
    books: await total('/api/v1/books'),
  })
  const atomic = (operations: unknown[]) =>
    app.request('POST', '/api/v1/operations', {
      body: { 'atomic:operations': operations },
      headers: {
        'content-type': 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"',
        accept: 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"',
      },
    })

  it('gives meta.total from the maintained count: it follows creates, deletes and atomic requests, and a failed one changes nothing', async () => {
    expect(await totals()).toEqual({ authors: 0, book_collections: 0, books: 0 })
    const author = await app.create('authors', { name: 'A' })
    const shelf = await app.create('book_collections', { name: 'Shelf' })
    const toAuthor = { author: { data: { type: 'authors', id: author } } }
    const onShelf = { ...toAuthor, book_collection: { data: { type: 'book_collections', id: shelf } } }
    const books = [
      await app.create('books', { name: 'One' }, onShelf),
      await app.create('books', { name: 'Two' }, onShelf),
      await app.create('books', { name: 'Three' }, toAuthor),
    ]
    expect(await totals()).toEqual({ authors: 1, book_collections: 1, books: 3 })
    const add = (name: string) => ({
      op: 'add',
      data: { type: 'books', attributes: { name }, relationships: toAuthor },
    })
    const failed = await atomic([add('Four'), add('Five'), { op: 'remove', ref: { type: 'books', id: '999' } }])
    expect(failed.status).toBe(404)
    expect(await totals()).toEqual({ authors: 1, book_collections: 1, books: 3 })
    expect((await atomic([add('Four'), add('Five')])).status).toBe(200)
    expect((await app.request('DELETE', `/api/v1/books/${books[0]}`)).status).toBe(204)
    expect((await app.request('DELETE', `/api/v1/book_collections/${shelf}`)).status).toBe(204)
    expect(await totals()).toEqual({ authors: 1, book_collections: 0, books: 4 })
    expect(await total('/api/v1/books?filter[book_collection]=null')).toBe(4)
    expect(await total(`/api/v1/authors/${author}/books`)).toBe(4)
    expect(await total(`/api/v1/books?author_id=${author}&filter[book_collection]=null`)).toBe(4)
  })
})
