import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { importBooks } from '../support/bulk'
import { openTestApp, type TestApp } from '../support/harness'

describe('filter[search]', () => {
  let t: TestApp
  let tolkien: string
  let zola: string
  let middleEarth: string
  const book: Record<string, string> = {}

  /** The names of what a search lists, in the order given. */
  const names = async (path: string) => {
    const answer = await t.get(path)
    expect(answer.status).toBe(200)
    return answer.json.data.map((r: { attributes: { name: string } }) => r.attributes.name)
  }

  beforeAll(async () => {
    t = await openTestApp()
    tolkien = await t.create('authors', { name: 'J.R.R. Tolkien' })
    zola = await t.create('authors', { name: 'Émile Zola' })
    middleEarth = await t.create('book_collections', { name: 'Middle-earth' })
    const rougon = await t.create('book_collections', { name: 'Les Rougon-Macquart' })
    book.hobbit = await t.create('books', { name: 'The Hobbit', author_id: tolkien, book_collection_id: middleEarth })
    book.silmarillion = await t.create('books', { name: 'The Silmarillion', author_id: tolkien })
    book.germinal = await t.create('books', { name: 'Germinal', author_id: zola, book_collection_id: rougon })
    book.nana = await t.create('books', { name: 'Nana', author_id: zola, book_collection_id: rougon })
  })
  afterAll(() => t.close())

  it("finds J.R.R. Tolkien's books by the author's name", async () => {
    expect(await names('/api/v1/books?filter[search]=Tolkien&sort=name')).toEqual(['The Hobbit', 'The Silmarillion'])
  })

  it('folds case and accents: emile finds Émile and his books', async () => {
    expect(await names('/api/v1/authors?filter[search]=emile')).toEqual(['Émile Zola'])
    expect(await names('/api/v1/books?filter[search]=EMILE&sort=name')).toEqual(['Germinal', 'Nana'])
  })

  it('matches the last word as a prefix, the words before it whole, and every word must match', async () => {
    expect(await names('/api/v1/books?filter[search]=hob')).toEqual(['The Hobbit'])
    expect(await names('/api/v1/books?filter[search]=tolkien%20silm')).toEqual(['The Silmarillion'])
    expect(await names('/api/v1/books?filter[search]=tolk%20silm')).toEqual([])
    expect(await names('/api/v1/books?filter[search]=tolkien%20nana')).toEqual([])
  })

  it("matches a book by its collection's name, and collections by theirs", async () => {
    expect(await names('/api/v1/books?filter[search]=middle')).toEqual(['The Hobbit'])
    expect(await names('/api/v1/book_collections?filter[search]=macquart')).toEqual(['Les Rougon-Macquart'])
  })

  it('puts the more relevant record first when no sort is given: the title before the collection', async () => {
    const cycle = await t.create('book_collections', { name: 'The Ring Cycle' })
    const first = await t.create('books', { name: 'Das Rheingold', author_id: zola, book_collection_id: cycle })
    const second = await t.create('books', { name: 'The Ring', author_id: zola })
    expect(await names('/api/v1/books?filter[search]=ring')).toEqual(['The Ring', 'Das Rheingold'])
    expect(await names('/api/v1/books?filter[search]=ring&sort=id')).toEqual(['Das Rheingold', 'The Ring'])
    for (const id of [first, second]) expect((await t.request('DELETE', `/api/v1/books/${id}`)).status).toBe(204)
  })

  it('combines with other filters, sort and pagination', async () => {
    const answer = await t.get(`/api/v1/books?filter[search]=the&filter[author]=${tolkien}&sort=-name&page[size]=1`)
    expect(answer.json.meta.total).toBe(2)
    expect(answer.json.data.map((b: { id: string }) => b.id)).toEqual([book.silmarillion])
  })

  it('follows a renamed author, a renamed collection and a deleted collection', async () => {
    const author = await t.create('authors', { name: 'Mary Shelley' })
    const gothic = await t.create('book_collections', { name: 'Gothic' })
    await t.create('books', { name: 'Frankenstein', author_id: author, book_collection_id: gothic })
    const rename = (type: string, id: string, name: string) =>
      t.request('PATCH', `/api/v1/${type}/${id}`, { body: { data: { type, id, attributes: { name } } } })
    expect((await rename('authors', author, 'Mary Wollstonecraft Shelley')).status).toBe(200)
    expect(await names('/api/v1/books?filter[search]=wollstonecraft')).toEqual(['Frankenstein'])
    expect((await rename('book_collections', gothic, 'Romantic')).status).toBe(200)
    expect(await names('/api/v1/books?filter[search]=gothic')).toEqual([])
    expect(await names('/api/v1/books?filter[search]=romantic')).toEqual(['Frankenstein'])
    expect((await t.request('DELETE', `/api/v1/book_collections/${gothic}`)).status).toBe(204)
    expect(await names('/api/v1/books?filter[search]=romantic')).toEqual([])
    expect(await names('/api/v1/books?filter[search]=frankenstein')).toEqual(['Frankenstein'])
  })

  it('follows renamed and deleted books, and not writes that were refused', async () => {
    const id = await t.create('books', { name: 'Draft Title', author_id: zola })
    const refused = await t.request('PATCH', `/api/v1/books/${id}`, {
      body: { data: { type: 'books', id, attributes: { name: 'Final Title', author_id: 999 } } },
    })
    expect(refused.status).toBe(422)
    expect(await names('/api/v1/books?filter[search]=final')).toEqual([])
    expect(await names('/api/v1/books?filter[search]=draft')).toEqual(['Draft Title'])
    expect((await t.request('DELETE', `/api/v1/books/${id}`)).status).toBe(204)
    expect(await names('/api/v1/books?filter[search]=draft')).toEqual([])
  })

  it('streams a ranked result longer than one batch whole, each record once', async () => {
    const volumes = Array.from({ length: 2500 }, (_, i) => `Volume ${'zz '.repeat(i % 5)}${i}`)
    await importBooks(
      t,
      volumes.map((title) => ({ title, author: 'Émile Zola', collection: null })),
    )
    const listed = await names('/api/v1/books?filter[search]=volume')
    expect(listed).toHaveLength(2500)
    expect(new Set(listed).size).toBe(2500)
  })

  it("treats the search engine's own syntax as plain words", async () => {
    for (const text of ['NEAR(hobbit tolkien)', 'name:hobbit', '"hobbit', 'hobbit*', 'hobbit OR nana', 'hob AND']) {
      const answer = await t.get(`/api/v1/books?filter[search]=${encodeURIComponent(text)}`)
      expect(answer.status).toBe(200)
    }
    expect(await names(`/api/v1/books?filter[search]=${encodeURIComponent('"hobbit')}`)).toEqual(['The Hobbit'])
  })

  it('refuses a search with no word in it with 400 naming filter[search]', async () => {
    for (const text of ['', '   ', '!!', '*']) {
      const answer = await t.get(`/api/v1/books?filter[search]=${encodeURIComponent(text)}`)
      expect(answer.status).toBe(400)
      expect(answer.json.errors[0].source).toEqual({ parameter: 'filter[search]' })
    }
  })
})

describe('filter[search] of a type with no records', () => {
  /** The ranked answers (whole, and a page with its total) for each type: 200 and nothing listed. */
  const expectEmptyRankedLists = async (t: TestApp) => {
    for (const type of ['authors', 'book_collections', 'books']) {
      const whole = await t.get(`/api/v1/${type}?filter[search]=tolkien`)
      expect([type, whole.status, whole.json.data]).toEqual([type, 200, []])
      const page = await t.get(`/api/v1/${type}?filter[search]=tolkien&page[size]=10`)
      expect([type, page.status, page.json.data, page.json.meta.total]).toEqual([type, 200, [], 0])
    }
  }

  it('answers 200 with an empty list on a fresh database', async () => {
    const t = await openTestApp()
    try {
      await expectEmptyRankedLists(t)
    } finally {
      await t.close()
    }
  })

  it('answers 200 with an empty list once the last record of each type is deleted', async () => {
    const t = await openTestApp()
    try {
      const author = await t.create('authors', { name: 'J.R.R. Tolkien' })
      const collection = await t.create('book_collections', { name: 'Tolkien Classics' })
      const book = await t.create('books', {
        name: 'Tolkien Reader',
        author_id: author,
        book_collection_id: collection,
      })
      for (const [type, id] of [
        ['books', book],
        ['book_collections', collection],
        ['authors', author],
      ] as const) {
        expect((await t.request('DELETE', `/api/v1/${type}/${id}`)).status).toBe(204)
      }
      await expectEmptyRankedLists(t)
    } finally {
      await t.close()
    }
  })
})
