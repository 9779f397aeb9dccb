import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { insertCatalogue } from '../support/bulk'
import { openTestApp, type TestApp } from '../support/harness'

type Listed = {
  data: { id: string; attributes: { name: string } }[]
  links: Record<string, string>
  meta: { total: number }
}

/** The link's path and query, ready for the harness. */
function follow(link: string | undefined): string {
  if (!link) throw new Error('expected a link')
  const url = new URL(link, 'http://localhost')
  return `${url.pathname}${url.search}`
}

function cursorOf(link: string, name: 'page[after]' | 'page[before]'): string {
  return new URL(link, 'http://localhost').searchParams.get(name) ?? ''
}

describe('GET /api/v1/books with page[after] and page[before]', () => {
  let t: TestApp
  let author: string
  const originals = new Map<string, string>()

  beforeAll(async () => {
    t = await openTestApp()
    const { authors, books } = await insertCatalogue(t, {
      authors: ['Many'],
      collections: [],
      books: 10_000,
      authorOf: () => 1,
      collectionOf: () => null,
      // Names repeat, so that sorting by name needs the id to break ties.
      titleOf: (i) => `Book ${String(i % 997).padStart(4, '0')}`,
    })
    author = String(authors[0]?.id)
    for (const book of books) originals.set(String(book.id), book.name)
  })
  afterAll(() => t.close())

  for (const sort of ['', '-name', 'name,-id']) {
    it(`pages through 10,000 books${sort ? ` sorted by ${sort}` : ''} without missing or repeating one while others come and go`, async () => {
      const seen: string[] = []
      const extra: string[] = []
      // An empty page[after] starts at the beginning; each next link carries a cursor.
      let path = `/api/v1/books?page[size]=100&page[after]=${sort ? `&sort=${sort}` : ''}`
      for (let pages = 0; pages < 200; pages++) {
        const answer = await t.get(path)
        expect(answer.status).toBe(200)
        const body = answer.json as Listed
        for (const book of body.data) seen.push(book.id)
        // Books come and go between pages: new ones are added, earlier new ones deleted.
        extra.push(await t.create('books', { name: `Book 0500 new ${pages}`, author_id: author }))
        extra.push(await t.create('books', { name: `Aardvark ${pages}`, author_id: author }))
        if (extra.length > 4) {
          const gone = extra.shift() as string
          expect((await t.request('DELETE', `/api/v1/books/${gone}`)).status).toBe(204)
        }
        if (!body.links.next) break
        path = follow(body.links.next)
      }
      const original = seen.filter((id) => originals.has(id))
      expect(original).toHaveLength(originals.size)
      expect(new Set(original).size).toBe(originals.size)
      expect(new Set(seen).size).toBe(seen.length)
      for (const id of extra) await t.request('DELETE', `/api/v1/books/${id}`)
    }, 60_000)
  }

  it('walks back with prev links to exactly the pages it came through', async () => {
    const forward: string[][] = []
    let path = '/api/v1/books?page[size]=3&sort=-name&filter[name]=Book 0001&page[after]='
    let body: Listed
    for (;;) {
      body = (await t.get(path)).json as Listed
      forward.push(body.data.map((b) => b.id))
      if (!body.links.next) break
      path = follow(body.links.next)
    }
    expect(forward.flat()).toHaveLength(11)
    const backward: string[][] = [body.data.map((b) => b.id)]
    while (body.links.prev) {
      body = (await t.get(follow(body.links.prev))).json as Listed
      backward.unshift(body.data.map((b) => b.id))
    }
    expect(backward).toEqual(forward)
  })

  it('gives meta.total, a first link without a cursor, and no prev on the first page', async () => {
    const firstPage = (await t.get('/api/v1/books?filter[name]=Book 0002&page[size]=4&page[after]=')).json as Listed
    expect(firstPage.meta.total).toBe(11)
    expect(firstPage.links.prev).toBeUndefined()
    const second = (await t.get(follow(firstPage.links.next))).json as Listed
    expect(second.meta.total).toBe(11)
    expect(second.data).toHaveLength(4)
    expect(second.links.prev).toBeDefined()
    const first = new URL(second.links.first ?? '', 'http://localhost').searchParams
    expect(first.get('page[after]')).toBe('')
    expect(first.get('page[size]')).toBe('4')
    expect(first.get('filter[name]')).toBe('Book 0002')
  })

  it('reads the last page with an empty page[before], with a prev link and no next', async () => {
    const last = (await t.get('/api/v1/books?filter[name]=Book 0004&page[size]=4&page[before]=')).json as Listed
    const all = (await t.get('/api/v1/books?filter[name]=Book 0004')).json as Listed
    expect(last.data.map((b) => b.id)).toEqual(all.data.slice(-4).map((b) => b.id))
    expect(last.links.next).toBeUndefined()
    const previous = (await t.get(follow(last.links.prev))).json as Listed
    expect(previous.data.map((b) => b.id)).toEqual(all.data.slice(-8, -4).map((b) => b.id))
    expect(previous.links.next).toBeDefined()
  })

  it('answers the last page without a next link, and a prev link from it leads back', async () => {
    const all = ((await t.get('/api/v1/books?filter[name]=Book 0003')).json as Listed).data.map((b) => b.id)
    const start = (await t.get('/api/v1/books?filter[name]=Book 0003&page[size]=10&page[after]=')).json as Listed
    expect(start.data.map((b) => b.id)).toEqual(all.slice(0, 10))
    const end = (await t.get(follow(start.links.next))).json as Listed
    expect(end.data.map((b) => b.id)).toEqual(all.slice(10))
    expect(end.links.next).toBeUndefined()
    const back = (await t.get(follow(end.links.prev))).json as Listed
    expect(back.data.map((b) => b.id)).toEqual(all.slice(0, 10))
  })

  for (const [label, query, parameter] of [
    ['a cursor that is not base64 JSON', 'page[after]=%%%', 'page[after]'],
    ['a cursor of another sort order', 'sort=-name&page[after]=BOOK', 'page[after]'],
    ['a cursor of another type', 'page[before]=AUTHOR', 'page[before]'],
    ['a cursor together with page[number]', 'page[after]=BOOK&page[number]=2', 'page[number]'],
    ['page[after] and page[before] together', 'page[after]=BOOK&page[before]=BOOK', 'page[before]'],
  ] as const) {
    it(`refuses ${label} with 400 naming ${parameter}`, async () => {
      const firstPage = (path: string) => t.get(`${path}?page[size]=1&page[after]=`)
      const book = cursorOf(((await firstPage('/api/v1/books')).json as Listed).links.next ?? '', 'page[after]')
      await t.create('authors', { name: 'Second' })
      const author = cursorOf(((await firstPage('/api/v1/authors')).json as Listed).links.next ?? '', 'page[after]')
      expect(book).not.toBe('')
      expect(author).not.toBe('')
      const answer = await t.get(`/api/v1/books?${query.replace('AUTHOR', author).replaceAll('BOOK', book)}`)
      expect(answer.status).toBe(400)
      expect(answer.json.errors[0].source).toEqual({ parameter })
    })
  }
})
