import { afterAll, beforeAll, describe, it } from 'bun:test'
import { type Catalogue, expectDocument, notIncluded, seedCatalogue } from '../support/catalogue'
import { expectOneError } from '../support/expectations'
import { openTestApp, type TestApp } from '../support/harness'

// `fields[type]`: sparse fieldsets over attributes and relationships, per type, on primary and
// included records (see test/support/catalogue.ts for the data; nothing here writes).

let t: TestApp
let c: Catalogue
beforeAll(async () => {
  t = await openTestApp()
  c = await seedCatalogue(t)
})
afterAll(() => t.close())

/** A resource object with exactly these attributes and relationships. */
const sparse = (
  type: string,
  id: string,
  attributes: Record<string, unknown>,
  relationships: Record<string, unknown> = {},
) => ({ id, type, attributes, relationships })

describe('fields on lists', () => {
  it('fields[books]=name keeps the name and renders relationships as {}', async () => {
    expectDocument(await t.get('/api/v1/books?fields[books]=name'), {
      data: c.allBooks.map((b) => sparse('books', b.id, { name: b.name })),
    })
  })

  it('fields[books]=author keeps only the author relationship and renders attributes as {}', async () => {
    expectDocument(await t.get('/api/v1/books?fields[books]=author'), {
      data: c.allBooks.map((b) => sparse('books', b.id, {}, { author: notIncluded })),
    })
  })

  it('fields[books]=name,book_collection keeps both, in any order of the list', async () => {
    const expected = {
      data: c.allBooks.map((b) => sparse('books', b.id, { name: b.name }, { book_collection: notIncluded })),
    }
    expectDocument(await t.get('/api/v1/books?fields[books]=name,book_collection'), expected)
    expectDocument(await t.get('/api/v1/books?fields[books]=book_collection,name'), expected)
  })

  it('an empty fields[books]= leaves empty attributes and relationships', async () => {
    expectDocument(await t.get('/api/v1/books?fields[books]='), {
      data: c.allBooks.map((b) => sparse('books', b.id, {})),
    })
  })

  it('fields[authors]=books on the author list keeps only books', async () => {
    expectDocument(await t.get('/api/v1/authors?fields[authors]=books'), {
      data: c.allAuthors.map((a) => sparse('authors', a.id, {}, { books: notIncluded })),
    })
  })

  it('fields[book_collections]=name on the collection list keeps only the name', async () => {
    expectDocument(await t.get('/api/v1/book_collections?fields[book_collections]=name'), {
      data: c.allCollections.map((col) => sparse('book_collections', col.id, { name: col.name })),
    })
  })

  it('fields for a type that is not in the answer change nothing', async () => {
    expectDocument(await t.get('/api/v1/authors?fields[books]=name&fields[book_collections]=books'), {
      data: c.allAuthors.map((a) => c.author(a)),
    })
  })

  it('fields[books] with a listed relationship that is included keeps its linkage', async () => {
    expectDocument(await t.get('/api/v1/books?include=author&fields[books]=name,author'), {
      data: c.allBooks.map((b) =>
        sparse('books', b.id, { name: b.name }, { author: { data: { type: 'authors', id: b.author } } }),
      ),
      included: [c.author(c.authors.ursula), c.author(c.authors.terry)],
    })
  })

  it('fields apply to included records, per type', async () => {
    expectDocument(await t.get('/api/v1/books?include=author,book_collection&fields[authors]=name'), {
      data: c.allBooks.map((b) => c.book(b, ['author', 'book_collection'])),
      included: [
        sparse('authors', c.authors.ursula.id, { name: c.authors.ursula.name }),
        sparse('authors', c.authors.terry.id, { name: c.authors.terry.name }),
        c.collection(c.collections.hainish),
        c.collection(c.collections.discworld),
      ],
    })
  })

  it('fields on both the primary and the included type apply to each', async () => {
    const ursula = c.authors.ursula
    expectDocument(
      await t.get(
        `/api/v1/authors?filter[name]=${encodeURIComponent(ursula.name)}&include=books&fields[authors]=books&fields[books]=name`,
      ),
      {
        data: [sparse('authors', ursula.id, {}, c.author(ursula, true).relationships)],
        included: [c.books.leftHand, c.books.dispossessed, c.books.ursulaStories].map((b) =>
          sparse('books', b.id, { name: b.name }),
        ),
      },
    )
  })

  it('a relationship left out by fields does not stop its records being included', async () => {
    // JSON:API lets sparse fieldsets break full linkage: include and fields are independent.
    expectDocument(await t.get('/api/v1/books?include=author&fields[books]=name'), {
      data: c.allBooks.map((b) => sparse('books', b.id, { name: b.name })),
      included: [c.author(c.authors.ursula), c.author(c.authors.terry)],
    })
  })
})

describe('fields on a single-record GET', () => {
  it('fields[books]=name trims the primary book; the default include stays with full records', async () => {
    const b = c.books.leftHand
    expectDocument(await t.get(`/api/v1/books/${b.id}?fields[books]=name`), {
      data: sparse('books', b.id, { name: b.name }),
      included: [c.author(c.authors.ursula), c.collection(c.collections.hainish)],
    })
  })

  it('fields[books]=author keeps the author linkage only', async () => {
    const b = c.books.leftHand
    expectDocument(await t.get(`/api/v1/books/${b.id}?fields[books]=author`), {
      data: sparse('books', b.id, {}, { author: { data: { type: 'authors', id: b.author } } }),
      included: [c.author(c.authors.ursula), c.collection(c.collections.hainish)],
    })
  })

  it('fields of the included types trim the default included records', async () => {
    const b = c.books.mort
    expectDocument(await t.get(`/api/v1/books/${b.id}?fields[book_collections]=name&fields[authors]=`), {
      data: c.book(b, ['author', 'book_collection']),
      included: [
        sparse('authors', c.authors.terry.id, {}),
        sparse('book_collections', c.collections.discworld.id, { name: c.collections.discworld.name }),
      ],
    })
  })

  it('fields[authors]=name on an author keeps the name, and its books are still included', async () => {
    const a = c.authors.ursula
    expectDocument(await t.get(`/api/v1/authors/${a.id}?fields[authors]=name&fields[books]=author`), {
      data: sparse('authors', a.id, { name: a.name }),
      included: [c.books.leftHand, c.books.dispossessed, c.books.ursulaStories].map((b) =>
        sparse('books', b.id, {}, { author: notIncluded }),
      ),
    })
  })

  it('fields[book_collections]= on a collection with include= leaves an empty record and included []', async () => {
    const col = c.collections.hainish
    expectDocument(await t.get(`/api/v1/book_collections/${col.id}?fields[book_collections]=&include=`), {
      data: sparse('book_collections', col.id, {}),
      included: [],
    })
  })
})

describe('invalid fields', () => {
  it.each([
    ['/api/v1/books?fields[people]=name', 'fields[people]'],
    ['/api/v1/books?fields[book]=name', 'fields[book]'],
    ['/api/v1/authors?fields[author]=name', 'fields[author]'],
    ['/api/v1/books?fields[books]=title', 'fields[books]'],
    ['/api/v1/books?fields[books]=name,title', 'fields[books]'],
    ['/api/v1/books?fields[books]=books', 'fields[books]'],
    ['/api/v1/authors?fields[authors]=author', 'fields[authors]'],
    ['/api/v1/authors?fields[books]=nope', 'fields[books]'],
    ['/api/v1/book_collections?fields[book_collections]=Name', 'fields[book_collections]'],
    ['/api/v1/books?fields=name', 'fields'],
  ])('GET %s answers 400 naming %s', async (path, parameter) => {
    expectOneError(await t.get(path), 400, { parameter })
  })

  it('an unknown field or type on a single-record GET answers 400 naming the parameter as sent', async () => {
    expectOneError(await t.get(`/api/v1/books/${c.books.mort.id}?fields[books]=title`), 400, {
      parameter: 'fields[books]',
    })
    expectOneError(await t.get(`/api/v1/authors/${c.authors.terry.id}?fields[people]=name`), 400, {
      parameter: 'fields[people]',
    })
  })

  it('fields[books] given twice answers 400 naming it', async () => {
    expectOneError(await t.get('/api/v1/books?fields[books]=name&fields[books]=author'), 400, {
      parameter: 'fields[books]',
    })
  })

  it('a bad field next to a valid include still answers 400 with the error alone', async () => {
    expectOneError(await t.get('/api/v1/books?include=author&fields[books]=title'), 400, {
      parameter: 'fields[books]',
    })
  })
})
