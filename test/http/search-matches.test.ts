import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { openTestApp, type TestApp } from '../support/harness'

type Listed = { id: string; attributes: { name: string }; meta?: Record<string, unknown> }

describe('GET /api/v1/books?filter[search]= gives each book meta.matches', () => {
  let t: TestApp
  let ids: { bridge: string; annas: string; keep: string; emile: string }
  beforeAll(async () => {
    t = await openTestApp()
    const plain = await t.create('authors', { name: 'Plain Writer' })
    const anna = await t.create('authors', { name: 'Anna Brigde' })
    const series = await t.create('book_collections', { name: 'Castle Chronicles' })
    ids = {
      bridge: await t.create('books', { name: 'The Bridge of Sighs', author_id: plain }),
      annas: await t.create('books', { name: 'Quiet Water', author_id: anna }),
      keep: await t.create('books', { name: 'The Keep', author_id: plain, book_collection_id: series }),
      emile: await t.create('books', { name: 'Émile et les Ponts', author_id: plain }),
    }
  })
  afterAll(() => t.close())

  const byId = async (path: string): Promise<Map<string, Listed>> => {
    const answer = await t.get(path)
    expect(answer.status).toBe(200)
    return new Map(answer.json.data.map((r: Listed) => [r.id, r]))
  }

  it('gives the UTF-16 range of each matched word per field, and whether it was forgiven', async () => {
    const found = await byId('/api/v1/books?filter[search]=brigde')
    expect(found.get(ids.bridge)?.meta).toEqual({
      matches: { name: [{ start: 4, end: 10, forgiven: true, typos: 1 }] },
    })
    expect(found.get(ids.annas)?.meta).toEqual({
      matches: { 'author.name': [{ start: 5, end: 11, forgiven: false, typos: 0 }] },
    })
  })

  it('names a collection’s matches, and every matched word of a field in order', async () => {
    const keep = (await byId('/api/v1/books?filter[search]=chronicels%20kee')).get(ids.keep)
    expect(keep?.meta).toEqual({
      matches: {
        name: [{ start: 4, end: 8, forgiven: false, typos: 0 }],
        'book_collection.name': [{ start: 7, end: 17, forgiven: true, typos: 1 }],
      },
    })
    const emile = (await byId('/api/v1/books?filter[search]=emile%20pon')).get(ids.emile)
    expect(emile?.meta).toEqual({
      matches: {
        name: [
          { start: 0, end: 5, forgiven: false, typos: 0 },
          { start: 13, end: 18, forgiven: false, typos: 0 },
        ],
      },
    })
  })

  it('marks a word before the last only where it stands whole, or forgiven, and the last where it begins a word', async () => {
    // "the" whole: The; "s", the last, as a prefix: Sighs.
    const bridge = (await byId('/api/v1/books?filter[search]=the%20s')).get(ids.bridge)
    expect(bridge?.meta).toEqual({
      matches: {
        name: [
          { start: 0, end: 3, forgiven: false, typos: 0 },
          { start: 14, end: 19, forgiven: false, typos: 0 },
        ],
      },
    })
    // "brid" before the last is a whole word no book has: nothing found.
    expect((await byId('/api/v1/books?filter[search]=brid%20sighs')).size).toBe(0)
  })

  it('sits beside the item cursor on a cursor page, and the ranges cut out the matched words', async () => {
    const answer = await t.get('/api/v1/books?filter[search]=brigde&page[size]=5&page[after]=')
    const bridge = answer.json.data.find((r: Listed) => r.id === ids.bridge)
    expect(typeof bridge.meta.page.cursor).toBe('string')
    const [range] = bridge.meta.matches.name
    expect(bridge.attributes.name.slice(range.start, range.end)).toBe('Bridge')
  })

  it('is given on every kind of list: a page, a sorted page, a whole list', async () => {
    for (const query of ['&page[number]=1&page[size]=5', '&sort=-name', '&page[size]=5&sort=name', '&include=author']) {
      const found = await byId(`/api/v1/books?filter[search]=brigde${query}`)
      expect(found.get(ids.bridge)?.meta?.matches).toEqual({ name: [{ start: 4, end: 10, forgiven: true, typos: 1 }] })
    }
  })

  it('is not given to a list without a search', async () => {
    const answer = await t.get('/api/v1/books?page[size]=5')
    expect(answer.json.data.every((r: Listed) => r.meta?.matches === undefined)).toBe(true)
  })
})
