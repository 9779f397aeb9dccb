import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { insertCatalogue, titleOf } from '../support/bulk'
import { openTestApp, type TestApp } from '../support/harness'

const notIncluded = { meta: { included: false } }
const unlinkedBook = (id: string, name: string) => ({
  id,
  type: 'books',
  attributes: { name },
  relationships: { author: notIncluded, book_collection: notIncluded },
})
const unlinkedNamed = (type: string, id: string, name: string) => ({
  id,
  type,
  attributes: { name },
  relationships: { books: notIncluded },
})

describe('/api/v1/books', () => {
  let t: TestApp
  let author: string
  let otherAuthor: string
  let collection: string
  beforeAll(async () => {
    t = await openTestApp()
    author = await t.create('authors', { name: 'J.R.R. Tolkien' })
    otherAuthor = await t.create('authors', { name: 'Ursula K. Le Guin' })
    collection = await t.create('book_collections', { name: 'Middle-earth' })
  })
  afterAll(() => t.close())

  describe('POST /api/v1/books', () => {
    it('creates a book from name and author_id and answers 201 without author_id in the attributes', async () => {
      const answer = await t.post('/api/v1/books', {
        data: { type: 'book', attributes: { name: 'The Hobbit', author_id: Number(author) } },
      })
      expect(answer.status).toBe(201)
      expect(answer.json).toEqual({ data: unlinkedBook(answer.json.data.id, 'The Hobbit') })
      expect((await t.stored('books')).at(-1)).toEqual({
        id: Number(answer.json.data.id),
        name: 'The Hobbit',
        author_id: Number(author),
        book_collection_id: null,
      })
    })

    it('takes author_id as a numeric string', async () => {
      const answer = await t.post('/api/v1/books', {
        data: { type: 'book', attributes: { name: 'S', author_id: author } },
      })
      expect(answer.status).toBe(201)
    })

    it('sets the author and the collection from relationship linkage, singular or plural types', async () => {
      const answer = await t.post('/api/v1/books', {
        data: {
          type: 'books',
          attributes: { name: 'The Fellowship of the Ring' },
          relationships: {
            author: { data: { type: 'authors', id: author } },
            book_collection: { data: { type: 'book_collection', id: Number(collection) } },
          },
        },
      })
      expect(answer.status).toBe(201)
      expect((await t.stored('books')).at(-1)).toMatchObject({
        author_id: Number(author),
        book_collection_id: Number(collection),
      })
    })

    it('sets the collection from book_collection_id', async () => {
      const answer = await t.post('/api/v1/books', {
        data: {
          type: 'book',
          attributes: { name: 'The Two Towers', author_id: author, book_collection_id: collection },
        },
      })
      expect(answer.status).toBe(201)
      expect((await t.stored('books')).at(-1)).toMatchObject({ book_collection_id: Number(collection) })
    })

    it('rejects a book whose author does not exist with 422 and stores nothing', async () => {
      const before = await t.stored('books')
      const answer = await t.post('/api/v1/books', {
        data: { type: 'book', attributes: { name: 'X', author_id: 424242 } },
      })
      expect(answer.status).toBe(422)
      expect(answer.json).toEqual({
        errors: [
          {
            title: 'Unprocessable Entity',
            detail: 'Author must exist',
            source: { parameter: 'author', pointer: 'data/attributes/author' },
          },
        ],
      })
      expect(await t.stored('books')).toEqual(before)
    })

    it('returns all errors together, the author error first, then the name error', async () => {
      const before = await t.stored('books')
      const answer = await t.post('/api/v1/books', { data: { type: 'book', attributes: { name: '' } } })
      expect(answer.status).toBe(422)
      expect(answer.json).toEqual({
        errors: [
          {
            title: 'Unprocessable Entity',
            detail: 'Author must exist',
            source: { parameter: 'author', pointer: 'data/attributes/author' },
          },
          {
            title: 'Unprocessable Entity',
            detail: "Name can't be blank",
            source: { parameter: 'name', pointer: 'data/attributes/name' },
          },
        ],
      })
      expect(await t.stored('books')).toEqual(before)
    })
  })

  describe('GET /api/v1/books/{id}', () => {
    it('renders author and collection linkage and includes both full records', async () => {
      const book = await t.create('books', {
        name: 'The Return of the King',
        author_id: author,
        book_collection_id: collection,
      })
      const answer = await t.get(`/api/v1/books/${book}`)
      expect(answer.status).toBe(200)
      expect(answer.json).toEqual({
        data: {
          id: book,
          type: 'books',
          attributes: { name: 'The Return of the King' },
          relationships: {
            author: { data: { type: 'authors', id: author } },
            book_collection: { data: { type: 'book_collections', id: collection } },
          },
        },
        included: [
          unlinkedNamed('authors', author, 'J.R.R. Tolkien'),
          unlinkedNamed('book_collections', collection, 'Middle-earth'),
        ],
      })
    })

    it('renders a missing collection as data null and includes the author alone', async () => {
      const book = await t.create('books', { name: 'The Silmarillion', author_id: author })
      const answer = await t.get(`/api/v1/books/${book}`)
      expect(answer.json.data.relationships.book_collection).toEqual({ data: null })
      expect(answer.json.included).toEqual([unlinkedNamed('authors', author, 'J.R.R. Tolkien')])
    })

    it('answers 404 with an empty errors array for an unknown id', async () => {
      const answer = await t.get('/api/v1/books/987654')
      expect(answer.status).toBe(404)
      expect(answer.json).toEqual({ errors: [] })
    })
  })

  describe('PUT /api/v1/books/{id}', () => {
    it('updates a book with only a valid name, without author_id', async () => {
      const book = await t.create('books', { name: 'Draft', author_id: author, book_collection_id: collection })
      const answer = await t.request('PUT', `/api/v1/books/${book}`, {
        body: { data: { type: 'book', id: Number(book), attributes: { name: 'Final' } } },
      })
      expect(answer.status).toBe(200)
      expect(answer.json).toEqual({ data: unlinkedBook(book, 'Final') })
      expect((await t.stored('books')).find((row) => row.id === Number(book))).toEqual({
        id: Number(book),
        name: 'Final',
        author_id: Number(author),
        book_collection_id: Number(collection),
      })
    })

    it('moves a book to another author and clears its collection', async () => {
      const book = await t.create('books', { name: 'Moved', author_id: author, book_collection_id: collection })
      const answer = await t.request('PATCH', `/api/v1/books/${book}`, {
        body: {
          data: {
            type: 'books',
            id: book,
            relationships: {
              author: { data: { type: 'authors', id: otherAuthor } },
              book_collection: { data: null },
            },
          },
        },
      })
      expect(answer.status).toBe(200)
      const shown = await t.get(`/api/v1/books/${book}`)
      expect(shown.json.data.relationships).toEqual({
        author: { data: { type: 'authors', id: otherAuthor } },
        book_collection: { data: null },
      })
    })

    it('rejects an unknown author with 422 and changes nothing', async () => {
      const book = await t.create('books', { name: 'Fixed', author_id: author })
      const before = await t.stored('books')
      const answer = await t.request('PUT', `/api/v1/books/${book}`, {
        body: { data: { type: 'book', id: book, attributes: { name: 'Changed', author_id: 31337 } } },
      })
      expect(answer.status).toBe(422)
      expect(answer.json.errors.map((e: { detail: string }) => e.detail)).toEqual(['Author must exist'])
      expect(await t.stored('books')).toEqual(before)
    })

    it('answers 404, not 422, for a book that does not exist naming an author that does not either', async () => {
      const before = await t.stored('books')
      for (const method of ['PUT', 'PATCH']) {
        const answer = await t.request(method, '/api/v1/books/31337', {
          body: { data: { type: 'book', id: '31337', attributes: { name: 'Nowhere', author_id: 31337 } } },
        })
        expect(answer.status).toBe(404)
        expect(answer.json).toEqual({ errors: [] })
      }
      expect(await t.stored('books')).toEqual(before)
    })
  })

  describe('DELETE /api/v1/books/{id}', () => {
    it('deletes the book and leaves its author and collection', async () => {
      const book = await t.create('books', { name: 'Ephemeral', author_id: author, book_collection_id: collection })
      expect((await t.request('DELETE', `/api/v1/books/${book}`)).status).toBe(204)
      expect((await t.stored('books')).some((row) => row.id === Number(book))).toBe(false)
      expect((await t.get(`/api/v1/authors/${author}`)).status).toBe(200)
      expect((await t.get(`/api/v1/book_collections/${collection}`)).status).toBe(200)
    })
  })

  describe('GET /api/v1/books', () => {
    it('lists every book with relationships as meta.included = false', async () => {
      const answer = await t.get('/api/v1/books')
      expect(answer.status).toBe(200)
      expect(answer.json).toEqual({
        data: (await t.stored('books')).map((row) => unlinkedBook(String(row.id), String(row.name))),
      })
    })

    it('filters by ?author_id=', async () => {
      const book = await t.create('books', { name: 'The Left Hand of Darkness', author_id: otherAuthor })
      const answer = await t.get(`/api/v1/books?author_id=${otherAuthor}`)
      const expected = (await t.stored('books')).filter((row) => row.author_id === Number(otherAuthor))
      expect(answer.json.data.map((b: { id: string }) => b.id)).toEqual(expected.map((row) => String(row.id)))
      expect(answer.json.data.map((b: { id: string }) => b.id)).toContain(book)
    })

    it('answers an empty list for an author with no books or no such author', async () => {
      const lonely = await t.create('authors', { name: 'Nobody Yet' })
      expect((await t.get(`/api/v1/books?author_id=${lonely}`)).json).toEqual({ data: [] })
      expect((await t.get('/api/v1/books?author_id=55555')).json).toEqual({ data: [] })
    })
  })
})

describe('GET /api/v1/books on a long list', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await openTestApp()
  })
  afterAll(() => t.close())

  it('returns every one of 2,500 books in id order, across the batches it streams', async () => {
    const { authors, books } = await insertCatalogue(t, {
      authors: ['Prolific'],
      collections: [],
      books: 2500,
      authorOf: () => 1,
      collectionOf: () => null,
    })
    const author = authors[0]?.id
    const answer = await t.get('/api/v1/books')
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toBe('application/vnd.api+json; charset=utf-8')
    expect(answer.json.data).toHaveLength(2500)
    expect(answer.json.data[0]).toEqual(unlinkedBook('1', titleOf(0)))
    expect(answer.json.data.at(-1).attributes.name).toBe(books.at(-1)?.name)
    const ids = answer.json.data.map((b: { id: string }) => Number(b.id))
    expect(ids).toEqual([...ids].sort((a, b) => a - b))
    expect((await t.get(`/api/v1/books?author_id=${author}`)).json.data).toHaveLength(2500)
  })
})
