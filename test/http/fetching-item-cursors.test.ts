import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { type Catalogue, ids, seedCatalogue } from '../support/catalogue'
import { openTestApp, type TestApp } from '../support/harness'

// Every record in a page carries its own cursor in `meta.page.cursor` (the cursor pagination
// profile's item cursor): `page[after]` or `page[before]` with it pages on from that record, in
// the same sort. See test/support/catalogue.ts for the 7 books (two share a name).

type Item = { id: string; meta?: { page: { cursor: string } } }

let t: TestApp
let c: Catalogue
beforeAll(async () => {
  t = await openTestApp()
  c = await seedCatalogue(t)
})
afterAll(() => t.close())

function cursorsOf(items: Item[]): string[] {
  return items.map((item) => {
    // Beside a search's matches (docs/search.md), when the list has a search.
    expect(Object.keys(item.meta ?? {}).filter((key) => key !== 'matches')).toEqual(['page'])
    expect(typeof item.meta?.page.cursor).toBe('string')
    return item.meta?.page.cursor as string
  })
}

const sorts = ['', 'name', '-name', 'name,-id', '-id']

describe('meta.page.cursor of the records of a page', () => {
  for (const sort of sorts) {
    const s = sort ? `sort=${sort}&` : ''
    it(`continues right after or before each record of a numbered page${sort ? ` sorted by ${sort}` : ''}`, async () => {
      const whole = ids(await t.get(`/api/v1/books?${s}`))
      const page = await t.get(`/api/v1/books?${s}page[size]=7`)
      expect(ids(page)).toEqual(whole)
      const cursors = cursorsOf(page.json.data)
      for (const [i, cursor] of cursors.entries()) {
        expect(ids(await t.get(`/api/v1/books?${s}page[size]=2&page[after]=${cursor}`))).toEqual(
          whole.slice(i + 1, i + 3),
        )
        expect(ids(await t.get(`/api/v1/books?${s}page[size]=2&page[before]=${cursor}`))).toEqual(
          whole.slice(Math.max(0, i - 2), i),
        )
      }
    })
  }

  it('are the cursors of the next and prev links of a cursor page: its last and first records', async () => {
    const page = await t.get('/api/v1/books?sort=-name&page[size]=3&page[after]=')
    const next = new URL(page.json.links.next, 'http://localhost')
    const second = await t.get(`${next.pathname}${next.search}`)
    const cursors = cursorsOf(second.json.data)
    const param = (link: string, name: string) => new URL(link, 'http://localhost').searchParams.get(name)
    expect(param(second.json.links.next, 'page[after]')).toBe(cursors.at(-1) as string)
    expect(param(second.json.links.prev, 'page[before]')).toBe(cursors[0] as string)
  })

  it('are the same for a record on an offset page as on a numbered page', async () => {
    const offset = await t.get('/api/v1/books?sort=name&page[offset]=2&page[limit]=2')
    const numbered = await t.get('/api/v1/books?sort=name&page[number]=2&page[size]=2')
    expect(cursorsOf(offset.json.data)).toEqual(cursorsOf(numbered.json.data))
  })

  it('come with include and sparse fieldsets, on the primary records only', async () => {
    const answer = await t.get('/api/v1/books?include=author&fields[books]=name,author&page[size]=2')
    expect(cursorsOf(answer.json.data)).toHaveLength(2)
    expect(answer.json.data[0]).toEqual({
      id: c.books.leftHand.id,
      type: 'books',
      attributes: { name: c.books.leftHand.name },
      relationships: { author: { data: { type: 'authors', id: c.authors.ursula.id } } },
      meta: { page: { cursor: expect.any(String) } },
    })
    for (const included of answer.json.included) expect(included.meta).toBeUndefined()
  })

  it('page on through the related books of an author', async () => {
    const terry = c.authors.terry.id
    const first = await t.get(`/api/v1/authors/${terry}/books?sort=name&page[size]=2`)
    const [, last] = cursorsOf(first.json.data)
    const rest = await t.get(`/api/v1/authors/${terry}/books?sort=name&page[size]=2&page[after]=${last}`)
    const whole = ids(await t.get(`/api/v1/authors/${terry}/books?sort=name`))
    expect([...ids(first), ...ids(rest)]).toEqual(whole)
  })

  it('come from a read worker too (a search sorted by name), and page on', async () => {
    const first = await t.get('/api/v1/books?filter[search]=stories&sort=name&page[size]=1')
    const [cursor] = cursorsOf(first.json.data)
    const next = await t.get(`/api/v1/books?filter[search]=stories&sort=name&page[size]=1&page[after]=${cursor}`)
    expect([...ids(first), ...ids(next)]).toEqual([c.books.ursulaStories.id, c.books.terryStories.id])
  })

  it('are not given on a search ranked by relevance: no sort key places its records', async () => {
    const answer = await t.get('/api/v1/books?filter[search]=stories&page[size]=2')
    expect(answer.json.data).toHaveLength(2)
    for (const item of answer.json.data) expect(item.meta.page).toBeUndefined()
  })

  it('are not given in a whole list, which is no page', async () => {
    const answer = await t.get('/api/v1/books?sort=name&include=author')
    for (const item of answer.json.data) expect(item.meta).toBeUndefined()
  })

  it('only fit the sort they were made in: another sort is a 400 naming page[after]', async () => {
    const page = await t.get('/api/v1/books?sort=name&page[size]=1')
    const [cursor] = cursorsOf(page.json.data)
    const answer = await t.get(`/api/v1/books?sort=-name&page[after]=${cursor}`)
    expect(answer.status).toBe(400)
    expect(answer.json.errors[0].source).toEqual({ parameter: 'page[after]' })
  })
})
