import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { changesNothing } from '../support/expectations'
import { openTestApp, type TestApp } from '../support/harness'

let t: TestApp
let tolkien: string
let lewis: string
let middleEarth: string
let hobbit: string
let silmarillion: string
let narnia: string

beforeEach(async () => {
  t = await openTestApp()
  tolkien = await t.create('authors', { name: 'J.R.R. Tolkien' })
  lewis = await t.create('authors', { name: 'C.S. Lewis' })
  middleEarth = await t.create('book_collections', { name: 'Middle-earth' })
  hobbit = await t.create('books', { name: 'The Hobbit', author_id: tolkien, book_collection_id: middleEarth })
  silmarillion = await t.create('books', { name: 'The Silmarillion', author_id: tolkien })
  narnia = await t.create('books', { name: 'The Magician’s Nephew', author_id: lewis })
})
afterEach(() => t.close())

const ids = (data: { id: string }[]) => data.map((r) => r.id)
const books = (...which: string[]) => ({ data: which.map((id) => ({ type: 'books', id })) })
const collectionOf = async (book: string) =>
  (await t.stored('books')).find((row) => row.id === Number(book))?.book_collection_id

describe('GET /api/v1/{type}/{id}/{relationship}', () => {
  it("answers a book's author as GET /api/v1/authors/{id} does", async () => {
    const related = await t.get(`/api/v1/books/${hobbit}/author`)
    expect(related.status).toBe(200)
    expect(related.json).toEqual((await t.get(`/api/v1/authors/${tolkien}`)).json)
  })

  it('answers data null for a book without a collection', async () => {
    const related = await t.get(`/api/v1/books/${silmarillion}/book_collection`)
    expect(related.status).toBe(200)
    expect(related.json).toEqual({ data: null })
  })

  it("lists an author's books with the list's fetching parameters", async () => {
    expect(ids((await t.get(`/api/v1/authors/${tolkien}/books`)).json.data)).toEqual([hobbit, silmarillion])
    const page = await t.get(`/api/v1/authors/${tolkien}/books?sort=-name&page[size]=1&include=author`)
    expect(page.json.meta.total).toBe(2)
    expect(ids(page.json.data)).toEqual([silmarillion])
    expect(ids(page.json.included)).toEqual([tolkien])
    expect(ids((await t.get(`/api/v1/book_collections/${middleEarth}/books`)).json.data)).toEqual([hobbit])
  })

  it('answers 404 with an empty errors array for an unknown record', async () => {
    for (const path of ['/api/v1/books/999/author', '/api/v1/authors/999/books', '/api/v1/authors/abc/books']) {
      const answer = await t.get(path)
      expect(answer.status).toBe(404)
      expect(answer.json).toEqual({ errors: [] })
    }
  })

  it('refuses an unknown query parameter with 400', async () => {
    const answer = await t.get(`/api/v1/books/${hobbit}/author?sort=name`)
    expect(answer.status).toBe(400)
    expect(answer.json.errors[0].source).toEqual({ parameter: 'sort' })
  })
})

describe('GET /api/v1/{type}/{id}/relationships/{relationship}', () => {
  it('answers to-one linkage with self and related links', async () => {
    const answer = await t.get(`/api/v1/books/${hobbit}/relationships/author`)
    expect(answer.status).toBe(200)
    expect(answer.json).toEqual({
      links: {
        self: `/api/v1/books/${hobbit}/relationships/author`,
        related: `/api/v1/books/${hobbit}/author`,
      },
      data: { type: 'authors', id: tolkien },
    })
    expect((await t.get(`/api/v1/books/${silmarillion}/relationships/book_collection`)).json.data).toBeNull()
  })

  it('answers to-many linkage in id order, an empty array when there is none', async () => {
    expect((await t.get(`/api/v1/authors/${tolkien}/relationships/books`)).json.data).toEqual(
      books(hobbit, silmarillion).data,
    )
    const empty = await t.create('book_collections', { name: 'Empty' })
    expect((await t.get(`/api/v1/book_collections/${empty}/relationships/books`)).json.data).toEqual([])
  })

  it('answers 404 for an unknown record and 400 for any query parameter', async () => {
    expect((await t.get('/api/v1/books/999/relationships/author')).json).toEqual({ errors: [] })
    const answer = await t.get(`/api/v1/books/${hobbit}/relationships/author?include=author`)
    expect(answer.status).toBe(400)
  })
})

describe('PATCH /api/v1/books/{id}/relationships/{to-one}', () => {
  it('sets the author and answers the new linkage', async () => {
    const answer = await t.request('PATCH', `/api/v1/books/${hobbit}/relationships/author`, {
      body: { data: { type: 'authors', id: lewis } },
    })
    expect(answer.status).toBe(200)
    expect(answer.json.data).toEqual({ type: 'authors', id: lewis })
    expect((await t.stored('books')).find((row) => row.id === Number(hobbit))?.author_id).toBe(Number(lewis))
  })

  it('clears the collection with data null', async () => {
    const answer = await t.request('PATCH', `/api/v1/books/${hobbit}/relationships/book_collection`, {
      body: { data: null },
    })
    expect(answer.status).toBe(200)
    expect(answer.json.data).toBeNull()
    expect(await collectionOf(hobbit)).toBeNull()
  })

  it('refuses a null author with 422 Author must exist and changes nothing', async () => {
    const answer = await changesNothing(t, () =>
      t.request('PATCH', `/api/v1/books/${hobbit}/relationships/author`, { body: { data: null } }),
    )
    expect(answer.status).toBe(422)
    expect(answer.json.errors).toEqual([
      {
        title: 'Unprocessable Entity',
        detail: 'Author must exist',
        source: { parameter: 'author', pointer: 'data/attributes/author' },
      },
    ])
  })

  it('answers 404 for an author that does not exist, 409 for the wrong type, 400 for an array', async () => {
    const patch = (data: unknown) =>
      changesNothing(t, () => t.request('PATCH', `/api/v1/books/${hobbit}/relationships/author`, { body: { data } }))
    const missing = await patch({ type: 'authors', id: '999' })
    expect(missing.status).toBe(404)
    expect(missing.json.errors[0].status).toBe('404')
    expect((await patch({ type: 'authors', id: 'abc' })).status).toBe(404)
    expect((await patch({ type: 'books', id: hobbit })).status).toBe(409)
    expect((await patch([{ type: 'authors', id: lewis }])).status).toBe(400)
  })

  it('answers 404 with an empty errors array for an unknown book', async () => {
    const answer = await t.request('PATCH', '/api/v1/books/999/relationships/author', {
      body: { data: { type: 'authors', id: lewis } },
    })
    expect(answer.status).toBe(404)
    expect(answer.json).toEqual({ errors: [] })
  })
})

describe('POST, DELETE and PATCH /api/v1/book_collections/{id}/relationships/books', () => {
  const path = () => `/api/v1/book_collections/${middleEarth}/relationships/books`

  it('adds books to the collection and answers its members', async () => {
    const answer = await t.request('POST', path(), { body: books(silmarillion, narnia) })
    expect(answer.status).toBe(200)
    expect(answer.json.data).toEqual(books(hobbit, silmarillion, narnia).data)
    expect(await collectionOf(narnia)).toBe(Number(middleEarth))
  })

  it('removes books from the collection, ignoring books that were not in it', async () => {
    const answer = await t.request('DELETE', path(), { body: books(hobbit, narnia) })
    expect(answer.status).toBe(200)
    expect(answer.json.data).toEqual([])
    expect(await collectionOf(hobbit)).toBeNull()
    expect(await collectionOf(narnia)).toBeNull()
  })

  it('replaces the members whole, an empty array emptying the collection', async () => {
    expect((await t.request('PATCH', path(), { body: books(narnia) })).json.data).toEqual(books(narnia).data)
    expect(await collectionOf(hobbit)).toBeNull()
    expect(await collectionOf(narnia)).toBe(Number(middleEarth))
    expect((await t.request('PATCH', path(), { body: books() })).json.data).toEqual([])
    expect(await collectionOf(narnia)).toBeNull()
  })

  it('changes nothing when one of the books does not exist, and says which with 404', async () => {
    const answer = await changesNothing(t, () => t.request('POST', path(), { body: books(narnia, '999') }))
    expect(answer.status).toBe(404)
    expect(answer.json.errors[0].detail).toContain('999')
  })

  it('refuses a body that is not an array of book identifiers', async () => {
    expect((await changesNothing(t, () => t.request('POST', path(), { body: { data: null } }))).status).toBe(400)
    const wrongType = { data: [{ type: 'authors', id: tolkien }] }
    expect((await changesNothing(t, () => t.request('POST', path(), { body: wrongType }))).status).toBe(409)
  })

  it('answers 404 with an empty errors array for an unknown collection', async () => {
    const answer = await t.request('POST', '/api/v1/book_collections/999/relationships/books', { body: books(hobbit) })
    expect(answer.json).toEqual({ errors: [] })
  })
})

describe("an author's books relationship", () => {
  const path = () => `/api/v1/authors/${lewis}/relationships/books`

  it('takes books from another author with POST', async () => {
    const answer = await t.request('POST', path(), { body: books(silmarillion) })
    expect(answer.status).toBe(200)
    expect(answer.json.data).toEqual(books(silmarillion, narnia).data)
  })

  it('refuses to remove or replace books with 403, since a book needs an author, and changes nothing', async () => {
    for (const method of ['DELETE', 'PATCH']) {
      const answer = await changesNothing(t, () => t.request(method, path(), { body: books(narnia) }))
      expect(answer.status).toBe(403)
      expect(answer.json.errors[0].detail).toBe(
        'Books cannot be removed from their author or replaced: each needs one. Give them another author instead, or delete them',
      )
    }
  })
})
