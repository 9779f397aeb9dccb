import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { removeTempDirs, stopChildren } from '../support/process'
import { type RunningService, startService } from '../support/service'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/*
 * A client written as JSON:API's Cursor Pagination profile
 * (https://jsonapi.org/profiles/ethanresnick/cursor-pagination/) has it, against the real service on
 * a real port: it starts with `page[size]` alone, then follows `links.next` until it is null, or
 * goes on from an item's `meta.page.cursor` with `page[after]` (or back with `page[before]`).
 */

const PROFILE = 'https://jsonapi.org/profiles/ethanresnick/cursor-pagination'
const JSON_API = 'application/vnd.api+json'
/** Asks for the profile, as the profile's clients do. */
const PROFILED = `${JSON_API}; profile="${PROFILE}"`
const SIZE = 10

interface Item {
  readonly id: string
  readonly attributes: { readonly name: string }
  readonly meta?: { readonly page?: { readonly cursor?: string } }
}
interface Page {
  readonly data: Item[]
  readonly links: { readonly next?: string | null; readonly prev?: string | null }
}

let service: RunningService
/** The 53 books as the list sorted by name has them: names repeat, so ties go by id. */
let byName: string[]

async function get(path: string, accept = JSON_API): Promise<{ response: Response; body: Page }> {
  const response = await fetch(new URL(path, service.origin), { headers: { accept } })
  return { response, body: (await response.json()) as Page }
}

function cursorOf(item: Item | undefined): string {
  const cursor = item?.meta?.page?.cursor
  if (!cursor) throw new Error(`no item cursor on ${JSON.stringify(item)}`)
  return cursor
}

beforeAll(async () => {
  service = await startService()
  const post = (type: string, attributes: Record<string, unknown>) =>
    fetch(`${service.origin}/api/v1/${type}`, {
      method: 'POST',
      headers: { 'content-type': JSON_API, accept: JSON_API },
      body: JSON.stringify({ data: { type, attributes } }),
    }).then(async (r) => ((await r.json()) as { data: { id: string } }).data.id)
  const author = await post('authors', { name: 'Many' })
  const created: { id: string; name: string }[] = []
  for (let i = 0; i < 53; i++) {
    const name = `Book ${String.fromCharCode(65 + ((i * 5) % 7))}`
    created.push({ id: await post('books', { name, author_id: author }), name })
  }
  byName = created
    .sort((a, b) => (a.name === b.name ? Number(a.id) - Number(b.id) : a.name < b.name ? -1 : 1))
    .map((b) => b.id)
}, 30_000)

afterAll(async () => {
  await stopChildren()
  removeTempDirs()
})

describe('a client of the cursor pagination profile', () => {
  it('that asks for the profile starts with page[size] alone and follows links.next until it is null', async () => {
    const seen: string[] = []
    let link: string | null | undefined = `/api/v1/books?sort=name&page[size]=${SIZE}`
    let pages = 0
    while (link) {
      const { response, body } = await get(link, PROFILED)
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toBe(`${JSON_API}; profile="${PROFILE}"; charset=utf-8`)
      if (pages === 0) expect(body.links.prev).toBeNull()
      expect(body.data.length).toBeLessThanOrEqual(SIZE)
      seen.push(...body.data.map((book) => book.id))
      // The profile's next link is a cursor link, or null at the end: never absent.
      expect(
        body.links.next === null || new URL(body.links.next ?? '', service.origin).searchParams.has('page[after]'),
      ).toBe(true)
      link = body.links.next
      if (++pages > 10) throw new Error('more pages than books')
    }
    expect(pages).toBe(6)
    expect(seen).toEqual(byName)
  })

  it("that does not ask goes on from the last item's cursor with page[after] until a page is empty", async () => {
    const first = await get(`/api/v1/books?sort=name&page[size]=${SIZE}`)
    const seen = first.body.data.map((book) => book.id)
    let cursor = cursorOf(first.body.data.at(-1))
    for (let pages = 1; ; pages++) {
      const { body } = await get(`/api/v1/books?sort=name&page[size]=${SIZE}&page[after]=${cursor}`)
      if (body.data.length === 0) break
      seen.push(...body.data.map((book) => book.id))
      cursor = cursorOf(body.data.at(-1))
      if (pages > 10) throw new Error('more pages than books')
    }
    expect(seen).toEqual(byName)
  })

  it('walks back from the last book with page[before] and links.prev, reaching every other book once', async () => {
    const last = await get(`/api/v1/books?sort=name&page[size]=${SIZE}&page[number]=6`)
    const end = last.body.data.at(-1)
    expect(end?.id).toBe(byName.at(-1))
    const seen: string[] = []
    let link: string | null | undefined = `/api/v1/books?sort=name&page[size]=${SIZE}&page[before]=${cursorOf(end)}`
    for (let pages = 0; link; pages++) {
      const { body } = await get(link, PROFILED)
      seen.unshift(...body.data.map((book) => book.id))
      link = body.links.prev
      if (pages > 10) throw new Error('more pages than books')
    }
    expect([...seen, end?.id]).toEqual(byName)
  })

  it('is refused a range (page[after] with page[before]) and a page over the maximum, with the profile error types', async () => {
    const { body } = await get(`/api/v1/books?sort=name&page[size]=2`, PROFILED)
    const [a, b] = body.data
    const range = await fetch(
      `${service.origin}/api/v1/books?sort=name&page[after]=${cursorOf(a)}&page[before]=${cursorOf(b)}`,
      { headers: { accept: PROFILED } },
    )
    expect(range.status).toBe(400)
    expect(((await range.json()) as { errors: { links: unknown }[] }).errors[0]?.links).toEqual({
      type: `${PROFILE}/range-pagination-not-supported`,
    })
    const large = await fetch(`${service.origin}/api/v1/books?page[size]=101`, { headers: { accept: PROFILED } })
    expect(large.status).toBe(400)
    expect(((await large.json()) as { errors: unknown[] }).errors[0]).toMatchObject({
      source: { parameter: 'page[size]' },
      meta: { page: { maxSize: 100 } },
      links: { type: `${PROFILE}/max-size-exceeded` },
    })
  })
})
