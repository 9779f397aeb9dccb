import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { type Catalogue, expectDocument, seedCatalogue } from '../support/catalogue'
import { expectOneError } from '../support/expectations'
import { openTestApp, type TestApp } from '../support/harness'

// `include`: compound documents on lists and single-record GETs (see test/support/catalogue.ts
// for the data every test here reads; nothing here writes).

let t: TestApp
let c: Catalogue
beforeAll(async () => {
  t = await openTestApp()
  c = await seedCatalogue(t)
})
afterAll(() => t.close())

describe('requests without include answer exactly as before', () => {
  it('GET /api/v1/books lists every book with meta.included = false and no included', async () => {
    expectDocument(await t.get('/api/v1/books'), { data: c.allBooks.map((b) => c.book(b)) })
  })

  it('GET /api/v1/books/{id} links author and collection and includes both, author first', async () => {
    const b = c.books.leftHand
    const answer = await t.get(`/api/v1/books/${b.id}`)
    expect(answer.status).toBe(200)
    expect(answer.json).toEqual({
      data: c.book(b, ['author', 'book_collection']),
      included: [c.author(c.authors.ursula), c.collection(c.collections.hainish)],
    })
  })

  it('GET /api/v1/authors/{id} links its books and includes them', async () => {
    expectDocument(await t.get(`/api/v1/authors/${c.authors.ursula.id}`), {
      data: c.author(c.authors.ursula, true),
      included: [c.books.leftHand, c.books.dispossessed, c.books.ursulaStories].map((b) => c.book(b)),
    })
  })

  it('GET /api/v1/book_collections/{id} links its books and includes them', async () => {
    expectDocument(await t.get(`/api/v1/book_collections/${c.collections.discworld.id}`), {
      data: c.collection(c.collections.discworld, true),
      included: [c.books.guards, c.books.mort, c.books.smallGods].map((b) => c.book(b)),
    })
  })

  it('GET /api/v1/authors/{id} of an author without books has an empty linkage and no included', async () => {
    expectDocument(await t.get(`/api/v1/authors/${c.authors.nobody.id}`), { data: c.author(c.authors.nobody, true) })
  })
})

describe('include on lists', () => {
  it('GET /api/v1/books?include=author links every author and includes each author once', async () => {
    expectDocument(await t.get('/api/v1/books?include=author'), {
      data: c.allBooks.map((b) => c.book(b, ['author'])),
      included: [c.author(c.authors.ursula), c.author(c.authors.terry)],
    })
  })

  it('GET /api/v1/books?include=author,book_collection links both; a book without a collection has data null', async () => {
    const answer = await t.get('/api/v1/books?include=author,book_collection')
    expectDocument(answer, {
      data: c.allBooks.map((b) => c.book(b, ['author', 'book_collection'])),
      included: [
        c.author(c.authors.ursula),
        c.author(c.authors.terry),
        c.collection(c.collections.hainish),
        c.collection(c.collections.discworld),
      ],
    })
    const stories = answer.json.data.find((r: { id: string }) => r.id === c.books.terryStories.id)
    expect(stories.relationships.book_collection).toEqual({ data: null })
  })

  it('GET /api/v1/book_collections?include=books links books on every collection, [] for an empty one', async () => {
    expectDocument(await t.get('/api/v1/book_collections?include=books'), {
      data: c.allCollections.map((col) => c.collection(col, true)),
      included: c.allBooks.filter((b) => b.collection !== null).map((b) => c.book(b)),
    })
  })

  it('GET /api/v1/authors?include=books links books on every author and includes every book once', async () => {
    const answer = await t.get('/api/v1/authors?include=books')
    expectDocument(answer, {
      data: c.allAuthors.map((a) => c.author(a, true)),
      included: c.allBooks.map((b) => c.book(b)),
    })
    expect(answer.json.data[2].relationships.books).toEqual({ data: [] })
  })

  it('answers included [] when the included relationships hold no records: a compound document all the same', async () => {
    expectDocument(await t.get('/api/v1/books?filter[book_collection]=null&include=book_collection'), {
      data: [c.book(c.books.ursulaStories, ['book_collection']), c.book(c.books.terryStories, ['book_collection'])],
      included: [],
    })
    expectDocument(await t.get(`/api/v1/authors?filter[name]=${encodeURIComponent('Nobody Yet')}&include=books`), {
      data: [c.author(c.authors.nobody, true)],
      included: [],
    })
    expectDocument(await t.get(`/api/v1/authors?filter[name]=${encodeURIComponent('No such author')}&include=books`), {
      data: [],
      included: [],
    })
  })

  it('answers included [] on a paged list and a list of related records when nothing is included', async () => {
    const nobody = c.authors.nobody.id
    expectDocument(await t.get(`/api/v1/authors/${nobody}/books?include=book_collection`), { data: [], included: [] })
    const page = await t.get('/api/v1/books?filter[book_collection]=null&include=book_collection&page[size]=1')
    expect(page.status).toBe(200)
    expect(page.json.included).toEqual([])
  })

  it('GET /api/v1/authors?include=books.book_collection links collections on the included books only', async () => {
    expectDocument(await t.get('/api/v1/authors?include=books.book_collection'), {
      data: c.allAuthors.map((a) => c.author(a, true)),
      included: [
        ...c.allBooks.map((b) => c.book(b, ['book_collection'])),
        c.collection(c.collections.hainish),
        c.collection(c.collections.discworld),
      ],
    })
  })

  it('never puts a primary record in included: books?include=author.books includes only the authors', async () => {
    expectDocument(await t.get('/api/v1/books?include=author.books'), {
      data: c.allBooks.map((b) => c.book(b, ['author'])),
      included: [c.author(c.authors.ursula, true), c.author(c.authors.terry, true)],
    })
  })

  it('includes the books reached through author.books that are not primary, once each', async () => {
    // Primary: the Hainish books (both by Ursula). Ursula's third book is reached through author.books.
    expectDocument(
      await t.get(`/api/v1/books?filter[book_collection]=${c.collections.hainish.id}&include=author.books`),
      {
        data: [c.book(c.books.leftHand, ['author']), c.book(c.books.dispossessed, ['author'])],
        included: [c.author(c.authors.ursula, true), c.book(c.books.ursulaStories)],
      },
    )
  })

  it('accepts a path together with its prefix and still includes each record once', async () => {
    expectDocument(
      await t.get(`/api/v1/books?filter[book_collection]=${c.collections.hainish.id}&include=author,author.books`),
      {
        data: [c.book(c.books.leftHand, ['author']), c.book(c.books.dispossessed, ['author'])],
        included: [c.author(c.authors.ursula, true), c.book(c.books.ursulaStories)],
      },
    )
  })
})

describe('include on a single-record GET', () => {
  it('include=author on a book includes only the author; the primary record keeps both linkages', async () => {
    const b = c.books.guards
    expectDocument(await t.get(`/api/v1/books/${b.id}?include=author`), {
      data: c.book(b, ['author', 'book_collection']),
      included: [c.author(c.authors.terry)],
    })
  })

  it('include=book_collection on a book includes only the collection', async () => {
    const b = c.books.guards
    expectDocument(await t.get(`/api/v1/books/${b.id}?include=book_collection`), {
      data: c.book(b, ['author', 'book_collection']),
      included: [c.collection(c.collections.discworld)],
    })
  })

  it('an empty include= includes nothing, answers included [] and keeps the linkage', async () => {
    expectDocument(await t.get(`/api/v1/books/${c.books.mort.id}?include=`), {
      data: c.book(c.books.mort, ['author', 'book_collection']),
      included: [],
    })
    expectDocument(await t.get(`/api/v1/authors/${c.authors.terry.id}?include=`), {
      data: c.author(c.authors.terry, true),
      included: [],
    })
    expectDocument(await t.get(`/api/v1/book_collections/${c.collections.hainish.id}?include=`), {
      data: c.collection(c.collections.hainish, true),
      included: [],
    })
  })

  it('include=books.book_collection on an author links the collection of each included book', async () => {
    expectDocument(await t.get(`/api/v1/authors/${c.authors.ursula.id}?include=books.book_collection`), {
      data: c.author(c.authors.ursula, true),
      included: [
        c.book(c.books.leftHand, ['book_collection']),
        c.book(c.books.dispossessed, ['book_collection']),
        c.book(c.books.ursulaStories, ['book_collection']),
        c.collection(c.collections.hainish),
      ],
    })
  })

  it('include=books.author on a collection links and includes the authors of its books', async () => {
    expectDocument(await t.get(`/api/v1/book_collections/${c.collections.discworld.id}?include=books.author`), {
      data: c.collection(c.collections.discworld, true),
      included: [
        c.book(c.books.guards, ['author']),
        c.book(c.books.mort, ['author']),
        c.book(c.books.smallGods, ['author']),
        c.author(c.authors.terry),
      ],
    })
  })

  it('include=books.author on an author links the author on its books but does not include the primary author', async () => {
    expectDocument(await t.get(`/api/v1/authors/${c.authors.ursula.id}?include=books.author`), {
      data: c.author(c.authors.ursula, true),
      included: [c.books.leftHand, c.books.dispossessed, c.books.ursulaStories].map((b) => c.book(b, ['author'])),
    })
  })

  it('include=author.books on a book includes the author with linkage and its other books, not the primary book', async () => {
    const b = c.books.leftHand
    expectDocument(await t.get(`/api/v1/books/${b.id}?include=author.books`), {
      data: c.book(b, ['author', 'book_collection']),
      included: [c.author(c.authors.ursula, true), c.book(c.books.dispossessed), c.book(c.books.ursulaStories)],
    })
  })

  it('include=book_collection on a book without a collection renders data null and answers included []', async () => {
    const b = c.books.terryStories
    expectDocument(await t.get(`/api/v1/books/${b.id}?include=book_collection`), {
      data: c.book(b, ['author', 'book_collection']),
      included: [],
    })
  })

  // JSON:API 1.1: a request that names include gets a compound document, "even if that included
  // key holds an empty array"; without include, the default include leaves it out as it always did.
  it('include=books on an author without books answers included [] (a to-many include, written as it streams)', async () => {
    expectDocument(await t.get(`/api/v1/authors/${c.authors.nobody.id}?include=books`), {
      data: c.author(c.authors.nobody, true),
      included: [],
    })
    expectDocument(await t.get(`/api/v1/authors/${c.authors.nobody.id}?include=books.book_collection`), {
      data: c.author(c.authors.nobody, true),
      included: [],
    })
  })

  it('a related record that is null answers included [] when the request names include, and data null alone without', async () => {
    const path = `/api/v1/books/${c.books.terryStories.id}/book_collection`
    const named = await t.get(`${path}?include=books`)
    expect(named.status).toBe(200)
    expect(named.json).toEqual({ data: null, included: [] })
    expect((await t.get(path)).json).toEqual({ data: null })
  })
})

describe('invalid include', () => {
  it.each([
    ['/api/v1/books?include=publisher'],
    ['/api/v1/books?include=authors'],
    ['/api/v1/books?include=author,publisher'],
    ['/api/v1/books?include=author.publisher'],
    ['/api/v1/books?include=author.books.nope'],
    ['/api/v1/books?include=author.'],
    ['/api/v1/authors?include=author'],
    ['/api/v1/authors?include=books.books'],
    ['/api/v1/book_collections?include=author'],
    ['/api/v1/book_collections?include=books.publisher'],
  ])('GET %s answers 400 naming include', async (path) => {
    expectOneError(await t.get(path), 400, { parameter: 'include' })
  })

  it('an unknown path on a single-record GET answers 400 naming include', async () => {
    expectOneError(await t.get(`/api/v1/books/${c.books.mort.id}?include=publisher`), 400, { parameter: 'include' })
    expectOneError(await t.get(`/api/v1/authors/${c.authors.terry.id}?include=books.nope`), 400, {
      parameter: 'include',
    })
  })

  it('an unknown parameter next to include is still 400 naming it', async () => {
    expectOneError(await t.get('/api/v1/books?include=author&foo=bar'), 400, { parameter: 'foo' })
  })
})
