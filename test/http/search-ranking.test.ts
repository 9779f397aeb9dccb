import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { type BulkCatalogue, insertCatalogue } from '../support/bulk'
import { openTestApp, type TestApp } from '../support/harness'

type Listed = { id: string; attributes: { name: string } }

/** The ids a list answers, in its order. */
async function idsOf(t: TestApp, path: string): Promise<number[]> {
  const answer = await t.get(path)
  expect(answer.status).toBe(200)
  return answer.json.data.map((r: Listed) => Number(r.id))
}

describe('GET /api/v1/books?filter[search]= ranked (no sort)', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await openTestApp()
  })
  afterAll(() => t.close())

  it('sums, for each word, the heaviest field it matches (title 10, author 2, collection 1); then ids ascending', async () => {
    const ash = await t.create('authors', { name: 'Ash Marlowe' })
    const plain = await t.create('authors', { name: 'Plain Writer' })
    const shelf = await t.create('book_collections', { name: 'Marlowe Shelf' })
    const other = await t.create('book_collections', { name: 'Other Shelf' })
    const create = (name: string, author: string, collection: string) =>
      t.create('books', { name, author_id: author, book_collection_id: collection })
    // Created in an order that the ranking must undo.
    const inCollectionOnly = await create('Nothing Here', plain, shelf) // marlowe: collection, 1
    const byAuthor = await create('Nothing Either', ash, other) // marlowe: author, 2
    const both = await create('Marlowe Ash', plain, other) // marlowe and ash in the title: 10 + 10
    const titled = await create('Marlowe Days', plain, other) // marlowe: title, 10
    const titledAndAuthor = await create('Marlowe Nights', ash, shelf) // title beats author: still 10
    const ids = (text: string) => idsOf(t, `/api/v1/books?filter[search]=${encodeURIComponent(text)}`)
    expect(await ids('marlowe')).toEqual(
      [titled, titledAndAuthor, both]
        .map(Number)
        .sort((a, b) => a - b)
        .concat([byAuthor, inCollectionOnly].map(Number)),
    )
    // ash: in both's title (10), in the author of byAuthor and titledAndAuthor (2); marlowe as above.
    expect(await ids('marlowe ash')).toEqual([both, titledAndAuthor, byAuthor].map(Number))
  })
})

/**
 * 11,000 books, and `saga` matches some 10,400 of them, more than a search page reaches: 315
 * titles, the author of every other book, the collection of most of the rest; `river` is in a
 * sixth of the titles.
 */
function sagaPlan() {
  return {
    authors: ['Saga Writer', 'Plain Writer'],
    collections: ['Saga Shelf', 'Plain Shelf'],
    books: 11_000,
    authorOf: (i: number) => (i % 2 === 0 ? 1 : 2),
    collectionOf: (i: number) => (i % 9 === 0 ? null : i % 2 === 1 ? 1 : 2),
    titleOf: (i: number) =>
      `${i % 35 === 0 ? 'Saga' : ['River', 'Stone', 'Glass', 'Winter', 'Harbour', 'Orchard'][i % 6]} ${i}`,
  }
}

describe('a search that matches more than 10,000 books', () => {
  let t: TestApp
  let catalogue: BulkCatalogue
  beforeAll(async () => {
    t = await openTestApp()
    catalogue = await insertCatalogue(t, sagaPlan())
  })
  afterAll(() => t.close())

  /** Every match in ranked order, computed here from the rule the service documents. */
  function expectedRanking(): number[] {
    const score = (b: BulkCatalogue['books'][number]) => {
      if (/\bsaga/i.test(b.name)) return 10
      if (b.author === 1) return 2
      if (b.collection === 1) return 1
      return 0
    }
    return catalogue.books
      .filter((b) => score(b) > 0)
      .sort((a, b) => score(b) - score(a) || a.id - b.id)
      .map((b) => b.id)
  }

  it('says meta.total is a lower bound (10,000) and pages the ranking as the whole list orders it', async () => {
    const ranking = expectedRanking()
    expect(ranking.length).toBeGreaterThan(10_000)
    const first = await t.get('/api/v1/books?filter[search]=saga&page[size]=100')
    expect(first.status).toBe(200)
    expect(first.json.meta).toEqual({ total: 10_000, totalIsLowerBound: true })
    expect(first.json.data.map((r: Listed) => Number(r.id))).toEqual(ranking.slice(0, 100))
    // Across the tiers: titles (300), then the author's books, then the collection's.
    for (const number of [3, 4, 40, 100]) {
      expect(await idsOf(t, `/api/v1/books?filter[search]=saga&page[size]=100&page[number]=${number}`)).toEqual(
        ranking.slice((number - 1) * 100, number * 100),
      )
    }
    expect(first.json.links.last).toBe('/api/v1/books?filter%5Bsearch%5D=saga&page%5Bsize%5D=100&page%5Bnumber%5D=100')
    // The whole list has every match, in the same order.
    expect(await idsOf(t, '/api/v1/books?filter[search]=saga')).toEqual(ranking)
  })

  it('pages a ranking of between 1,000 and 10,000 matches as the whole list orders it', async () => {
    // Plain Shelf's books are all by Saga Writer: saga in the title (10) first, then as the author (2).
    const ranking = expectedRanking().filter((id) => catalogue.books.find((b) => b.id === id)?.collection === 2)
    expect(ranking.length).toBeGreaterThan(1_000)
    expect(ranking.length).toBeLessThan(10_000)
    const filtered = '/api/v1/books?filter[search]=saga&filter[book_collection]=2'
    for (const number of [1, 2, 3, 20]) {
      expect(await idsOf(t, `${filtered}&page[size]=100&page[number]=${number}`)).toEqual(
        ranking.slice((number - 1) * 100, number * 100),
      )
    }
    expect((await t.get(`${filtered}&page[size]=1`)).json.meta).toEqual({ total: ranking.length })
  })

  it('answers 400 for a numbered or an offset page that starts past the first 10,000 matches', async () => {
    for (const [query, parameter] of [
      ['page[number]=101&page[size]=100', 'page[number]'],
      ['page[offset]=10000&page[limit]=5', 'page[offset]'],
    ] as const) {
      const answer = await t.get(`/api/v1/books?filter[search]=saga&${query}`)
      expect(answer.status).toBe(400)
      expect(answer.json.errors[0].source).toEqual({ parameter })
      expect(answer.json.errors[0].detail).toContain('Pages of a search reach its first 10,000 matches')
      expect(answer.json.errors[0].detail).toContain('page[after]')
    }
    // The last page inside the window is answered.
    expect(await idsOf(t, '/api/v1/books?filter[search]=saga&page[offset]=9995&page[limit]=5')).toEqual(
      expectedRanking().slice(9995, 10_000),
    )
  })

  it('walks every match by cursor, in id order, past the first 10,000', async () => {
    const matching = expectedRanking().sort((a, b) => a - b)
    const cursorOf = async (path: string) => (await t.get(path)).json.links.next as string
    let next = await cursorOf('/api/v1/books?filter[search]=saga&page[size]=100&page[after]=')
    const seen: number[] = []
    for (let pages = 0; next && pages < 120; pages++) {
      const answer = await t.get(next)
      seen.push(...answer.json.data.map((r: Listed) => Number(r.id)))
      next = answer.json.links.next
    }
    expect(seen).toEqual(matching.slice(100))
  })

  it('sorts a search by name, whether more than 10,000 books match or fewer', async () => {
    const byNameDown = (a: { name: string; id: number }, b: { name: string; id: number }) =>
      a.name < b.name ? 1 : a.name > b.name ? -1 : b.id - a.id
    for (const [text, match] of [
      ['saga', (b: BulkCatalogue['books'][number]) => /\bsaga/i.test(b.name) || b.author === 1 || b.collection === 1],
      ['river', (b: BulkCatalogue['books'][number]) => /\briver/i.test(b.name)],
    ] as const) {
      const expected = catalogue.books.filter(match).sort(byNameDown)
      for (const number of [1, 7]) {
        const path = `/api/v1/books?filter[search]=${text}&sort=-name&page[size]=50&page[number]=${number}`
        expect(await idsOf(t, path)).toEqual(expected.slice((number - 1) * 50, number * 50).map((b) => b.id))
      }
    }
  })
})

/**
 * 300 authors, 200 of them named Kline or Klien (a typo apart), 40 collections, 3,000 books: a
 * search word names far more related records than one index query holds (past 64 ids the store
 * matches them by the table's own indexes), in both its exact and its forgiven forms.
 */
describe('words that name many authors and collections', () => {
  let t: TestApp
  let catalogue: BulkCatalogue
  const authors = Array.from({ length: 300 }, (_, i) =>
    i % 3 === 0 ? `Ada Moss ${i}` : `${i % 2 === 0 ? 'Kline' : 'Klien'} Author ${i}`,
  )
  const collections = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? `Kline Shelf ${i}` : `River Shelf ${i}`))
  beforeAll(async () => {
    t = await openTestApp()
    catalogue = await insertCatalogue(t, {
      authors,
      collections,
      books: 3000,
      authorOf: (i) => 1 + ((i * 7) % 300),
      collectionOf: (i) => (i % 5 === 0 ? null : 1 + (i % 40)),
      titleOf: (i) => `${['Kline', 'River', 'Stone', 'Klien', 'Glass'][i % 5]} Tale ${i}`,
    })
  })
  afterAll(() => t.close())

  /** Every match of one word in ranked order, by the documented rule: typos, then weights, then id. */
  function ranked(exact: RegExp, forgiven: RegExp): number[] {
    const nameOf = (list: readonly string[], id: number | null) => (id === null ? '' : (list[id - 1] ?? ''))
    const key = (b: BulkCatalogue['books'][number]) => {
      const fields: [string, number][] = [
        [b.name, 10],
        [nameOf(authors, b.author), 2],
        [nameOf(collections, b.collection), 1],
      ]
      for (const typos of [0, 1]) {
        const found = fields.filter(([text]) => (typos === 0 ? exact : forgiven).test(text))
        if (found.length > 0) return typos * 1_000_000 - Math.max(...found.map(([, w]) => w))
      }
      return null
    }
    return catalogue.books
      .map((b) => ({ id: b.id, key: key(b) }))
      .filter((b): b is { id: number; key: number } => b.key !== null)
      .sort((a, b) => a.key - b.key || a.id - b.id)
      .map((b) => b.id)
  }

  it('ranks every match of a word forgiven in hundreds of authors as the rule says, page by page', async () => {
    const expected = ranked(/\bkline\b/i, /\bklien\b/i)
    expect(expected.length).toBeGreaterThan(2000)
    const whole = await idsOf(t, '/api/v1/books?filter[search]=kline')
    expect(whole).toEqual(expected)
    const page = await idsOf(t, '/api/v1/books?filter[search]=kline&page[size]=50&page[number]=3')
    expect(page).toEqual(expected.slice(100, 150))
  })

  it('narrows by a second word, sorted and by cursor, as the ranked list matches', async () => {
    const both = ranked(/\bkline\b/i, /\bklien\b/i).filter((id) => /\bTale\b/.test(catalogue.books[id - 1]?.name ?? ''))
    const sorted = await idsOf(t, '/api/v1/books?filter[search]=kline%20tal&sort=id&page[size]=100')
    expect(sorted).toEqual([...both].sort((a, b) => a - b).slice(0, 100))
    const count = await t.get('/api/v1/books?filter[search]=kline%20tal&page[size]=1')
    expect(count.json.meta.total).toBe(both.length)
    // Two words that each name hundreds of authors: the rows of one are listed, the other tested.
    const kline = ranked(/\bkline\b/i, /\bklien\b/i)
    const together = await idsOf(t, '/api/v1/books?filter[search]=kline%20kl&sort=id')
    expect(together).toEqual([...kline].sort((a, b) => a - b))
    expect(await idsOf(t, '/api/v1/books?filter[search]=kline%20kl&page[size]=100')).toEqual(kline.slice(0, 100))
  })

  it('finds a rare word beside a prefix of hundreds of authors and collections, in every field the prefix matches', async () => {
    const nameOf = (list: readonly string[], id: number | null) => (id === null ? '' : (list[id - 1] ?? ''))
    const prefixed = (text: string) => /\bkl/i.test(text)
    // A number stands in one title, and in some authors' and collections' names.
    let found = 0
    for (const n of [5, 11, 12, 13, 14, 2001]) {
      const number = new RegExp(`\\b${n}\\b`)
      const fields = (b: BulkCatalogue['books'][number]) => [
        b.name,
        nameOf(authors, b.author),
        nameOf(collections, b.collection),
      ]
      const expected = catalogue.books
        .filter((b) => fields(b).some((text) => number.test(text)) && fields(b).some(prefixed))
        .map((b) => b.id)
      found += expected.length
      expect({ n, ids: await idsOf(t, `/api/v1/books?filter[search]=${n}%20kl&sort=id`) }).toEqual({ n, ids: expected })
    }
    expect(found).toBeGreaterThan(6)
  })
})
