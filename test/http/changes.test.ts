import { afterAll, afterEach, beforeAll, describe, expect, it } from 'bun:test'
import {
  atomic,
  CHANGES,
  type ChangeRecord,
  changeOf,
  changesAfter,
  described,
  follow,
  idAt,
  linkParameters,
  waitForChanges,
  waitForPage,
} from '../support/change-feed'
import { expectOneError, RESPONSE_CONTENT_TYPE } from '../support/expectations'
import { type Answer, openTestApp, type TestApp } from '../support/harness'

// GET /api/v1/changes: the change feed as pages (FEED-SPEC: the page, its links and its errors).

const ids = (changes: ChangeRecord[]) => changes.map((change) => change.id)
describe('GET /api/v1/changes on a catalogue without changes', () => {
  it('answers data [], meta.latest null, and links.next from the start of the feed', async () => {
    const t = await openTestApp()
    try {
      const answer = await t.get(CHANGES)
      expect(answer.status).toBe(200)
      expect(answer.headers.get('content-type')).toBe(RESPONSE_CONTENT_TYPE)
      expect(answer.json).toEqual({ data: [], links: { next: expect.any(String) }, meta: { latest: null } })
      expect(answer.json.links.next).toStartWith(`${CHANGES}?`)
      expect(linkParameters(answer.json.links.next)).toEqual({ 'page[after]': '0' })
      expect((await t.get(follow(answer.json.links.next))).json).toEqual(answer.json)
      // include=resource makes a compound document, included [] when there is nothing to include.
      const included = await t.get(`${CHANGES}?include=resource`)
      expect(included.json).toEqual({ ...answer.json, included: [], links: { next: expect.any(String) } })
    } finally {
      await t.close()
    }
  })
})

describe('GET /api/v1/changes', () => {
  let t: TestApp
  let author: string
  let collection: string
  let kept: string
  let deleted: string
  /** The six changes the catalogue was made with, in order: `create authors/1`... */
  let made: string[]
  /** Their change records, as the first page shows them. */
  let feed: ChangeRecord[]
  const idOf = (index: number) => idAt(feed, index)
  beforeAll(async () => {
    t = await openTestApp()
    author = await t.create('authors', { name: 'Octavia E. Butler' })
    collection = await t.create('book_collections', { name: 'Patternist' })
    kept = await t.create('books', { name: 'Wild Seed', author_id: author })
    deleted = await t.create('books', { name: 'Survivor', author_id: author, book_collection_id: collection })
    const renamed = await t.request('PATCH', `/api/v1/books/${kept}`, {
      body: { data: { type: 'books', id: kept, attributes: { name: 'Wild Seed (1980)' } } },
    })
    expect(renamed.status).toBe(200)
    expect((await t.request('DELETE', `/api/v1/books/${deleted}`)).status).toBe(204)
    made = [
      `create authors/${author}`,
      `create book_collections/${collection}`,
      `create books/${kept}`,
      `create books/${deleted}`,
      `update books/${kept}`,
      `delete books/${deleted}`,
    ]
    feed = await waitForChanges(t, null, made.length)
  })
  afterAll(() => t.close())

  it('answers every change oldest first as change records, with meta.latest the newest', async () => {
    const answer = await t.get(CHANGES)
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toBe(RESPONSE_CONTENT_TYPE)
    const expected = made.map((text, i) => {
      const [op = '', type = '', id = ''] = text.split(/[ /]/)
      return changeOf(op, type, id, idOf(i))
    })
    expect(answer.json).toEqual({ data: expected, links: { next: expect.any(String) }, meta: { latest: idOf(5) } })
    expect(new Set(ids(feed)).size).toBe(6)
    for (const change of feed) expect(change.id).toBeString()
    expect(linkParameters(answer.json.links.next)).toEqual({ 'page[after]': idOf(5) })
  })

  it('answers the changes after page[after], page[after]=0 being the start of the feed', async () => {
    expect((await t.get(`${CHANGES}?page[after]=${idOf(1)}`)).json.data).toEqual(feed.slice(2))
    expect((await t.get(`${CHANGES}?page[after]=${idOf(4)}`)).json.data).toEqual(feed.slice(5))
    expect((await t.get(`${CHANGES}?page[after]=0`)).json).toEqual((await t.get(CHANGES)).json)
  })

  it('pages by page[size], links.next moving past each page and keeping its size', async () => {
    const first = await t.get(`${CHANGES}?page[size]=4`)
    expect(first.json.data).toEqual(feed.slice(0, 4))
    expect(first.json.meta).toEqual({ latest: idOf(5) })
    expect(linkParameters(first.json.links.next)).toEqual({ 'page[after]': idOf(3), 'page[size]': '4' })
    const second = await t.get(follow(first.json.links.next))
    expect(second.json.data).toEqual(feed.slice(4))
    expect(linkParameters(second.json.links.next)).toEqual({ 'page[after]': idOf(5), 'page[size]': '4' })
  })

  it('answers an empty page at the end whose links.next repeats the cursor, until there is a new change', async () => {
    const end = await t.get(`${CHANGES}?page[after]=${idOf(5)}&page[size]=4`)
    expect(end.status).toBe(200)
    expect(end.json).toEqual({ data: [], links: { next: expect.any(String) }, meta: { latest: idOf(5) } })
    expect(linkParameters(end.json.links.next)).toEqual({ 'page[after]': idOf(5), 'page[size]': '4' })
    const newer = await t.create('authors', { name: 'Nalo Hopkinson' })
    try {
      const after = await waitForPage(t, follow(end.json.links.next))
      expect(after.json.data.map(described)).toEqual([`create authors/${newer}`])
      expect(after.json.meta).toEqual({ latest: after.json.data[0].id })
    } finally {
      expect((await t.request('DELETE', `/api/v1/authors/${newer}`)).status).toBe(204)
      made.push(`create authors/${newer}`, `delete authors/${newer}`)
      feed = await waitForChanges(t, null, made.length)
      expect(feed.map(described)).toEqual(made)
    }
  })

  it('keeps the changes of one type with filter[type], links.next keeping the filter', async () => {
    const books = await t.get(`${CHANGES}?filter[type]=books`)
    expect(books.json.data).toEqual(feed.filter((change) => change.relationships.resource.data.type === 'books'))
    expect(books.json.meta).toEqual({ latest: idOf(-1) })
    expect(linkParameters(books.json.links.next)).toEqual({ 'page[after]': idOf(-1), 'filter[type]': 'books' })
  })

  it('keeps the changes of several types with filter[type]=a,b', async () => {
    const answer = await t.get(`${CHANGES}?filter[type]=authors,book_collections`)
    expect(answer.json.data.map(described)).toEqual(made.filter((text) => !text.includes(' books/')))
    expect(linkParameters(answer.json.links.next)['filter[type]']).toBe('authors,book_collections')
  })

  it("writes links.next as a URI: brackets and commas percent-encoded, as every list's links are", async () => {
    const answer = await t.get(`${CHANGES}?page[size]=2&filter[type]=authors,books&include=resource`)
    const next = linkParameters(answer.json.links.next)['page[after]']
    expect(answer.json.links.next).toBe(
      `${CHANGES}?page%5Bafter%5D=${next}&page%5Bsize%5D=2&filter%5Btype%5D=authors%2Cbooks&include=resource`,
    )
    // RFC 3986 §3.4: a query is pchars, "/" and "?"; "[" and "]" are not among them.
    expect(answer.json.links.next).toMatch(/^[/\w.~-]+\?(?:[\w.~!$&'()*+,;=:@/?-]|%[0-9A-F]{2})*$/)
  })

  it('reads page[size] changes of the feed for a filtered page, keeping those asked for, and moves past them all', async () => {
    const first = await t.get(`${CHANGES}?filter[type]=books&page[size]=2`)
    expect(first.json.data).toEqual([])
    const next = linkParameters(first.json.links.next)
    expect(next).toEqual({ 'page[after]': idOf(1), 'page[size]': '2', 'filter[type]': 'books' })
    const second = await t.get(follow(first.json.links.next))
    expect(second.json.data).toEqual(feed.slice(2, 4))
    const walked = await changesAfter(t, null, '&filter[type]=books&page[size]=2')
    expect(walked).toEqual(feed.filter((change) => change.relationships.resource.data.type === 'books'))
  })

  it('includes with include=resource the current state of each changed record still there, once each: attributes and to-one linkage', async () => {
    const answer = await t.get(`${CHANGES}?include=resource`)
    expect(answer.json.data).toEqual(feed)
    const current = [`/api/v1/authors/${author}`, `/api/v1/book_collections/${collection}`, `/api/v1/books/${kept}`]
    // As GET shows it, but a to-many relationship is not included: its members' own changes say where they are.
    type Shown = { type: string; id: string; relationships: Record<string, unknown> }
    const asIncluded = (data: Shown): Shown => ({
      ...data,
      relationships: Object.fromEntries(
        Object.entries(data.relationships).map(([name, r]) => [
          name,
          Array.isArray((r as { data?: unknown }).data) ? { meta: { included: false } } : r,
        ]),
      ),
    })
    const expected = await Promise.all(current.map(async (path) => asIncluded((await t.get(path)).json.data)))
    const byRecord = (a: { type: string; id: string }, b: { type: string; id: string }) =>
      `${a.type}/${a.id}`.localeCompare(`${b.type}/${b.id}`)
    expect([...answer.json.included].sort(byRecord)).toEqual(expected.sort(byRecord))
    const book = answer.json.included.find((r: Shown) => r.type === 'books' && r.id === kept)
    expect(book.attributes.name).toBe('Wild Seed (1980)')
    expect(linkParameters(answer.json.links.next)).toEqual({ 'page[after]': idOf(-1), include: 'resource' })
  })

  it('includes only the records of the page: none for a page of deleted records', async () => {
    const books = await t.get(`${CHANGES}?filter[type]=books&include=resource`)
    expect(books.json.included).toEqual([(await t.get(`/api/v1/books/${kept}`)).json.data])
    const gone = await t.get(`${CHANGES}?page[after]=${idOf(4)}&page[size]=1&include=resource`)
    expect(gone.json.data.map(described)).toEqual([`delete books/${deleted}`])
    expect(gone.json.included).toEqual([])
  })

  it('has no included member without include=resource', async () => {
    expect(Object.keys((await t.get(`${CHANGES}?page[size]=3`)).json).sort()).toEqual(['data', 'links', 'meta'])
  })

  const refused: [string, string, string][] = [
    ['page[after] that is not a change id', 'page[after]=abc', 'page[after]'],
    ['page[after] of two dots', 'page[after]=1.2.3', 'page[after]'],
    ['page[size] 0', 'page[size]=0', 'page[size]'],
    ['page[size] over MAX_PAGE_SIZE', 'page[size]=101', 'page[size]'],
    ['page[size] not an integer', 'page[size]=2.5', 'page[size]'],
    ['page[size] not a number', 'page[size]=many', 'page[size]'],
    ['filter[type] naming an unknown type', 'filter[type]=shelves', 'filter[type]'],
    ['filter[type] naming an unknown type beside a known one', 'filter[type]=books,shelves', 'filter[type]'],
    ['page[size] given twice', 'page[size]=1&page[size]=2', 'page[size]'],
    ['page[after] given twice', 'page[after]=0&page[after]=0', 'page[after]'],
    ['include other than resource', 'include=author', 'include'],
    ['sort, which the feed does not take', 'sort=id', 'sort'],
    ['an unknown parameter', 'since=yesterday', 'since'],
  ]
  it.each(refused)('answers 400 for %s, naming the parameter', async (_, query, parameter) => {
    const answer: Answer = await t.get(`${CHANGES}?${query}`)
    expectOneError(answer, 400, { parameter })
  })
})

describe('GET /api/v1/changes: page[size]', () => {
  let t: TestApp | undefined
  afterEach(async () => {
    await t?.close()
    t = undefined
  })

  it('is 100 by default', async () => {
    t = await openTestApp({ maxOperations: 100 })
    const app = t
    const addAuthors = (from: number) =>
      atomic(
        app,
        Array.from({ length: 60 }, (_, i) => ({
          op: 'add',
          data: { type: 'authors', attributes: { name: `Author ${from + i}` } },
        })),
      )
    const created: string[] = []
    for (const from of [0, 60]) {
      const answer = await addAuthors(from)
      expect(answer.status).toBe(200)
      created.push(...answer.json['atomic:results'].map((result: { data: { id: string } }) => result.data.id))
    }
    await waitForChanges(t, null, created.length)
    const first = await t.get(CHANGES)
    expect(first.json.data).toHaveLength(100)
    expect(linkParameters(first.json.links.next)).toEqual({ 'page[after]': first.json.data[99].id })
    const second = await t.get(follow(first.json.links.next))
    expect(second.json.data).toHaveLength(20)
    expect([...first.json.data, ...second.json.data].map(described)).toEqual(
      created.map((id) => `create authors/${id}`),
    )
  })

  it('is at most MAX_PAGE_SIZE', async () => {
    t = await openTestApp({ maxPageSize: 3 })
    for (const name of ['A', 'B', 'C', 'D']) await t.create('authors', { name })
    await waitForChanges(t, null, 4)
    expect((await t.get(`${CHANGES}?page[size]=3`)).json.data).toHaveLength(3)
    expectOneError(await t.get(`${CHANGES}?page[size]=4`), 400, { parameter: 'page[size]' })
  })
})

describe('GET /api/v1/changes after old changes were pruned (CHANGES_RETENTION)', () => {
  it('answers 410 Gone for a cursor pruned past, on the page and the stream, and 200 from where the feed now starts', async () => {
    const t = await openTestApp({ app: { changes: { retentionSeconds: 1 } } })
    try {
      const author = await t.create('authors', { name: 'Pruned' })
      await t.request('PATCH', `/api/v1/authors/${author}`, {
        body: { data: { type: 'authors', id: author, attributes: { name: 'Pruned twice' } } },
      })
      const changes = await waitForChanges(t, null, 2)
      const first = idAt(changes, 0)
      expect(changes.map(described)).toEqual([`create authors/${author}`, `update authors/${author}`])
      // Pruned in the background, every min(retention, 60) seconds: within a few seconds at 1 s.
      let answer = await t.get(`${CHANGES}?page[after]=${first}`)
      for (const deadline = Date.now() + 15_000; answer.status === 200 && Date.now() < deadline; ) {
        await Bun.sleep(250)
        answer = await t.get(`${CHANGES}?page[after]=${first}`)
      }
      expectGone(answer)
      expectGone(await t.get(`${CHANGES}?page[after]=0`))
      const stream = await t.send('GET', `${CHANGES}?page[after]=${first}`, {
        headers: { accept: 'text/event-stream' },
      })
      expectGone(stream)
      const start = await t.get(CHANGES)
      expect(start.status).toBe(200)
      expect(start.json.data).toEqual([])
      const restart = await t.get(follow(start.json.links.next))
      expect(restart.status).toBe(200)
      const renamed = await t.request('PATCH', `/api/v1/authors/${author}`, {
        body: { data: { type: 'authors', id: author, attributes: { name: 'After the pruning' } } },
      })
      expect(renamed.status).toBe(200)
      expect((await waitForPage(t, follow(restart.json.links.next))).json.data.map(described)).toEqual([
        `update authors/${author}`,
      ])
    } finally {
      await t.close()
    }
  })
})

describe('GET /api/v1/changes after a position ahead of every change', () => {
  it('answers 410 Gone: a cursor of another catalogue, or of this one before a restore from an older backup', async () => {
    const older = await openTestApp()
    const newer = await openTestApp()
    try {
      await older.create('authors', { name: 'Only change' })
      await waitForChanges(older, null, 1)
      for (const name of ['One', 'Two']) await newer.create('authors', { name })
      const ahead = idAt(await waitForChanges(newer, null, 2), -1)
      expectGone(await older.get(`${CHANGES}?page[after]=${encodeURIComponent(ahead)}`))
    } finally {
      await newer.close()
      await older.close()
    }
  })
})

/** 410 Gone, one JSON:API error telling the client to re-read the lists. */
function expectGone(answer: Answer): void {
  expect(answer.status).toBe(410)
  expect(answer.headers.get('content-type')).toBe(RESPONSE_CONTENT_TYPE)
  expect(answer.json.errors).toHaveLength(1)
  expect(answer.json.errors[0]).toMatchObject({ status: '410', title: 'Gone', detail: expect.stringMatching(/\S/) })
}
