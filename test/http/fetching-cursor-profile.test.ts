import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { type Catalogue, ids, seedCatalogue } from '../support/catalogue'
import { RESPONSE_CONTENT_TYPE } from '../support/expectations'
import { type Answer, JSON_API, openTestApp, type TestApp } from '../support/harness'

// The cursor pagination profile (https://jsonapi.org/profiles/ethanresnick/cursor-pagination/),
// applied to a page when Accept asks for it. See test/support/catalogue.ts for the 7 books.

const PROFILE = 'https://jsonapi.org/profiles/ethanresnick/cursor-pagination'
const profiled = (uri = PROFILE) => ({ accept: `${JSON_API}; profile="${uri}"` })
const PROFILED_TYPE = `${JSON_API}; profile="${PROFILE}"; charset=utf-8`

let t: TestApp
let c: Catalogue
beforeAll(async () => {
  t = await openTestApp()
  c = await seedCatalogue(t)
})
afterAll(() => t.close())

function param(link: string, name: string): string | null {
  return new URL(link, 'http://localhost').searchParams.get(name)
}

function follow(link: string): Promise<Answer> {
  const url = new URL(link, 'http://localhost')
  return t.get(`${url.pathname}${url.search}`, profiled())
}

describe('GET /api/v1/books with Accept asking for the cursor pagination profile', () => {
  it('answers page[size] alone as the first cursor page: prev null, next a page[after] link, no last', async () => {
    const answer = await t.get('/api/v1/books?sort=name&page[size]=3', profiled())
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toBe(PROFILED_TYPE)
    const byName = ids(await t.get('/api/v1/books?sort=name'))
    expect(ids(answer)).toEqual(byName.slice(0, 3))
    expect(answer.json.meta).toEqual({ total: 7 })
    const { links } = answer.json
    expect(Object.keys(links)).toEqual(['self', 'first', 'prev', 'next'])
    expect(links.prev).toBeNull()
    expect(param(links.next, 'page[after]')).toBe(answer.json.data[2].meta.page.cursor)
    expect(param(links.next, 'page[size]')).toBe('3')
    expect(param(links.next, 'sort')).toBe('name')
  })

  it('ends the walk with next null, having given every book once', async () => {
    const seen: string[] = []
    let answer = await t.get('/api/v1/books?sort=-name&page[size]=2', profiled())
    for (;;) {
      seen.push(...ids(answer))
      if (answer.json.links.next === null) break
      answer = await follow(answer.json.links.next)
    }
    expect(answer.json.links).toHaveProperty('next', null)
    expect(seen).toEqual(ids(await t.get('/api/v1/books?sort=-name')))
  })

  it('gives numbered and offset pages prev and next always, null where there is none', async () => {
    const numbered = await t.get('/api/v1/books?page[number]=1&page[size]=10', profiled())
    expect(numbered.headers.get('content-type')).toBe(PROFILED_TYPE)
    expect(numbered.json.links).toMatchObject({ prev: null, next: null })
    expect(param(numbered.json.links.last, 'page[number]')).toBe('1')
    const offset = await t.get('/api/v1/books?page[offset]=5&page[limit]=5', profiled())
    expect(offset.json.links).toMatchObject({ next: null })
    expect(param(offset.json.links.prev, 'page[offset]')).toBe('0')
  })

  it('answers the last page before an empty page[before] with next null', async () => {
    const answer = await t.get('/api/v1/books?page[size]=3&page[before]=', profiled())
    expect(ids(answer)).toEqual(c.allBooks.slice(4).map((b) => b.id))
    expect(answer.json.links.next).toBeNull()
    expect(param(answer.json.links.prev, 'page[before]')).toBe(answer.json.data[0].meta.page.cursor)
  })

  it('names the profile back as the client wrote it', async () => {
    const uri = 'http://jsonapi.org/profiles/ethanresnick/cursor-pagination/'
    const answer = await t.get('/api/v1/books?page[size]=3', profiled(uri))
    expect(answer.headers.get('content-type')).toBe(`${JSON_API}; profile="${uri}"; charset=utf-8`)
  })

  it('pages related books, and those a read worker answers (a search), the same way', async () => {
    const related = await t.get(`/api/v1/authors/${c.authors.terry.id}/books?page[size]=3`, profiled())
    expect(related.headers.get('content-type')).toBe(PROFILED_TYPE)
    expect(related.json.links.prev).toBeNull()
    expect(param(related.json.links.next, 'page[after]')).toBe(related.json.data[2].meta.page.cursor)
    const search = await t.get('/api/v1/books?filter[search]=stories&page[size]=1', profiled())
    expect(search.headers.get('content-type')).toBe(PROFILED_TYPE)
    expect(ids(search)).toEqual([c.books.ursulaStories.id])
    expect(ids(await follow(search.json.links.next))).toEqual([c.books.terryStories.id])
  })

  it('answers a whole list (no page parameter) as without the profile', async () => {
    const answer = await t.get('/api/v1/books', profiled())
    expect(answer.headers.get('content-type')).toBe(RESPONSE_CONTENT_TYPE)
    expect(Object.keys(answer.json)).toEqual(['data'])
  })

  it('marks every page as varying with Accept, with the profile or without it', async () => {
    expect((await t.get('/api/v1/books?page[size]=2', profiled())).headers.get('vary')).toBe('Accept')
    const plain = await t.get('/api/v1/books?page[size]=2')
    expect(plain.headers.get('vary')).toBe('Accept')
    expect(plain.headers.get('content-type')).toBe(RESPONSE_CONTENT_TYPE)
    expect(param(plain.json.links.next, 'page[number]')).toBe('2')
  })
})

describe("the cursor pagination profile's errors", () => {
  it('page[size] over the maximum: 400 max-size-exceeded with meta.page.maxSize', async () => {
    const answer = await t.get('/api/v1/books?page[size]=200', profiled())
    expect(answer.status).toBe(400)
    expect(answer.headers.get('content-type')).toBe(PROFILED_TYPE)
    expect(answer.json).toEqual({
      errors: [
        {
          status: '400',
          title: 'Bad Request',
          detail: 'page[size] is at most 100 (got 200)',
          source: { parameter: 'page[size]' },
          meta: { page: { maxSize: 100 } },
          links: { type: `${PROFILE}/max-size-exceeded` },
        },
      ],
    })
  })

  it('page[after] with page[before]: 400 range-pagination-not-supported', async () => {
    const answer = await t.get('/api/v1/books?page[after]=&page[before]=', profiled())
    expect(answer.status).toBe(400)
    expect(answer.json.errors).toEqual([
      {
        status: '400',
        title: 'Bad Request',
        detail: 'Give page[after] or page[before], not both',
        source: { parameter: 'page[before]' },
        links: { type: `${PROFILE}/range-pagination-not-supported` },
      },
    ])
  })

  it.each([['0'], ['-1'], ['abc']])('page[size]=%s: 400 naming page[size]', async (value) => {
    const answer = await t.get(`/api/v1/books?page[size]=${value}`, profiled())
    expect(answer.status).toBe(400)
    expect(answer.json.errors[0].source).toEqual({ parameter: 'page[size]' })
  })

  it('a cursor that is no cursor of this list: 400 naming page[after]', async () => {
    const answer = await t.get('/api/v1/books?page[after]=nonsense', profiled())
    expect(answer.status).toBe(400)
    expect(answer.json.errors[0].source).toEqual({ parameter: 'page[after]' })
  })

  it('without the profile, the same errors have no type link or meta', async () => {
    const answer = await t.get('/api/v1/books?page[size]=200')
    expect(answer.headers.get('content-type')).toBe(RESPONSE_CONTENT_TYPE)
    expect(Object.keys(answer.json.errors[0])).toEqual(['status', 'title', 'detail', 'source'])
  })
})
