import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { openTestApp, type TestApp } from '../support/harness'

// Error details read as English for every type: a type is written in words where a sentence
// names it ("There is no book collection 5", "An author has no relationship ..."), and quoted as
// a client writes it where it is a value to send ("which takes \"book_collections\"").

const ATOMIC = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'

let t: TestApp
let author: string
let collection: string
let book: string
beforeAll(async () => {
  t = await openTestApp()
  author = await t.create('authors', { name: 'Ursula K. Le Guin' })
  collection = await t.create('book_collections', { name: 'Hainish Cycle' })
  book = await t.create('books', { name: 'The Dispossessed', author_id: author })
})
afterAll(() => t.close())

async function detailOf(answer: Promise<{ json: { errors: { detail: string }[] } }>): Promise<string> {
  return (await answer).json.errors[0]?.detail as string
}

function operations(list: unknown) {
  return t.request('POST', '/api/v1/operations', {
    body: { 'atomic:operations': list },
    headers: { 'content-type': ATOMIC, accept: ATOMIC },
  })
}

describe('error details name types in words', () => {
  it.each([
    [
      '/api/v1/book_collections?include=author',
      'A book collection has no relationship "author" (in include path "author")',
    ],
    ['/api/v1/authors?include=writer', 'An author has no relationship "writer" (in include path "writer")'],
    ['/api/v1/books?fields[book_collections]=title', 'A book collection has no attribute or relationship "title"'],
    ['/api/v1/book_collections?sort=title', 'Book collections cannot be sorted by "title"; sort keys: id, name'],
    ['/api/v1/book_collections?filter[title]=x', 'Book collections have no filter "title"'],
  ])('GET %s: %s', async (path, detail) => {
    expect(await detailOf(t.get(path))).toBe(detail)
  })

  it('an unknown collection in a relationship write: There is no book collection 99', async () => {
    const answer = t.request('PATCH', `/api/v1/books/${book}/relationships/book_collection`, {
      body: { data: { type: 'book_collections', id: '99' } },
    })
    expect(await detailOf(answer)).toBe('There is no book collection 99')
  })

  it('several unknown books: There are no books 98, 99', async () => {
    const answer = t.post(`/api/v1/book_collections/${collection}/relationships/books`, {
      data: [
        { type: 'books', id: '98' },
        { type: 'books', id: '99' },
      ],
    })
    expect(await detailOf(answer)).toBe('There are no books 98, 99')
  })

  it("an author's books in a create: An author's books cannot be set in this request", async () => {
    const answer = t.post('/api/v1/authors', {
      data: { type: 'authors', attributes: { name: 'X' }, relationships: { books: { data: [] } } },
    })
    expect(await detailOf(answer)).toBe(
      "An author's books cannot be set in this request: a book's author and collection are set on the book",
    )
  })

  it.each([
    [{ op: 'add', data: 5 }, 'An add operation needs a resource object as data'],
    [{ op: 'update', data: 5 }, 'An update operation needs a resource object as data'],
    [
      { op: 'update', ref: { type: 'book_collections', id: '1', relationship: 'author' }, data: null },
      'A book collection has no relationship "author"',
    ],
    [
      { op: 'update', data: { type: 'book_collections', id: '99', attributes: { name: 'X' } } },
      'Operation 0 names a book collection that does not exist',
    ],
    [{ op: 'remove', ref: { type: 'book_collections', id: 'x' } }, 'There is no book collection x'],
  ])('atomic %j: %s', async (operation, detail) => {
    expect(await detailOf(operations([operation]))).toBe(detail)
  })
})

describe('error details quote a type where it is a value to send', () => {
  it('a create at the wrong endpoint', async () => {
    const answer = t.post('/api/v1/book_collections', { data: { type: 'authors', attributes: { name: 'X' } } })
    expect(await detailOf(answer)).toBe('Type "authors" does not match this endpoint, which takes "book_collections"')
  })

  it('a relationship object of the wrong type', async () => {
    const answer = t.request('PATCH', `/api/v1/books/${book}`, {
      body: {
        data: {
          type: 'books',
          id: book,
          relationships: { book_collection: { data: { type: 'authors', id: author } } },
        },
      },
    })
    expect(await detailOf(answer)).toBe(
      'Type "authors" does not match relationships.book_collection, which takes "book_collections"',
    )
  })

  it('a relationship document of the wrong type', async () => {
    const answer = t.request('PATCH', `/api/v1/books/${book}/relationships/book_collection`, {
      body: { data: { type: 'authors', id: author } },
    })
    expect(await detailOf(answer)).toBe(
      'Type "authors" does not match this relationship, which takes "book_collections"',
    )
  })
})
