import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { type Catalogue, expectDocument, ids, type SeededBook, seedCatalogue } from '../support/catalogue'
import { expectOneError } from '../support/expectations'
import { openTestApp, type TestApp } from '../support/harness'

// `sort` and `filter[...]` on the lists (see test/support/catalogue.ts for the data; nothing here
// writes).

let t: TestApp
let c: Catalogue
beforeAll(async () => {
  t = await openTestApp()
  c = await seedCatalogue(t)
})
afterAll(() => t.close())

type BookKey = keyof Catalogue['books']
const bookIds = (...keys: BookKey[]) => keys.map((key) => c.books[key].id)
const idsOf = (records: readonly { id: string }[]) => records.map((r) => r.id)

describe('sort', () => {
  it('without sort, lists stay in id order, exactly as before', async () => {
    expectDocument(await t.get('/api/v1/books'), { data: c.allBooks.map((b) => c.book(b)) })
    expectDocument(await t.get('/api/v1/authors'), { data: c.allAuthors.map((a) => c.author(a)) })
    expectDocument(await t.get('/api/v1/book_collections'), { data: c.allCollections.map((col) => c.collection(col)) })
  })

  it('sort=name orders books by name, ties (two "Collected Stories") by id ascending; records are rendered as in a plain list', async () => {
    const answer = await t.get('/api/v1/books?sort=name')
    const order: BookKey[] = [
      'ursulaStories',
      'terryStories',
      'guards',
      'mort',
      'smallGods',
      'dispossessed',
      'leftHand',
    ]
    expectDocument(answer, { data: order.map((key) => c.book(c.books[key])) })
  })

  it('sort=-name orders books by name descending, ties by id descending too (the direction of the last key)', async () => {
    expect(ids(await t.get('/api/v1/books?sort=-name'))).toEqual(
      bookIds('leftHand', 'dispossessed', 'smallGods', 'mort', 'guards', 'terryStories', 'ursulaStories'),
    )
  })

  it('sort=-name,id breaks the tie by id ascending when asked', async () => {
    expect(ids(await t.get('/api/v1/books?sort=-name,id'))).toEqual(
      bookIds('leftHand', 'dispossessed', 'smallGods', 'mort', 'guards', 'ursulaStories', 'terryStories'),
    )
  })

  it('sort=name,-id breaks the tie by id descending', async () => {
    expect(ids(await t.get('/api/v1/books?sort=name,-id'))).toEqual(
      bookIds('terryStories', 'ursulaStories', 'guards', 'mort', 'smallGods', 'dispossessed', 'leftHand'),
    )
  })

  it('sort=-name,-id orders by name descending, then id descending', async () => {
    expect(ids(await t.get('/api/v1/books?sort=-name,-id'))).toEqual(
      bookIds('leftHand', 'dispossessed', 'smallGods', 'mort', 'guards', 'terryStories', 'ursulaStories'),
    )
  })

  it('sort=id and sort=-id order by id', async () => {
    expect(ids(await t.get('/api/v1/books?sort=id'))).toEqual(idsOf(c.allBooks))
    expect(ids(await t.get('/api/v1/books?sort=-id'))).toEqual(idsOf(c.allBooks).reverse())
    expect(ids(await t.get('/api/v1/authors?sort=-id'))).toEqual(idsOf(c.allAuthors).reverse())
    expect(ids(await t.get('/api/v1/book_collections?sort=-id'))).toEqual(idsOf(c.allCollections).reverse())
  })

  it('sort=id,name orders by id alone (the ids are unique)', async () => {
    expect(ids(await t.get('/api/v1/books?sort=id,name'))).toEqual(idsOf(c.allBooks))
  })

  it('sorts authors by name, both ways', async () => {
    const { ursula, terry, nobody } = c.authors
    expect(ids(await t.get('/api/v1/authors?sort=name'))).toEqual([nobody.id, terry.id, ursula.id])
    expect(ids(await t.get('/api/v1/authors?sort=-name'))).toEqual([ursula.id, terry.id, nobody.id])
  })

  it('sorts book collections by name, both ways', async () => {
    const { hainish, discworld, empty } = c.collections
    expectDocument(await t.get('/api/v1/book_collections?sort=name'), {
      data: [discworld, empty, hainish].map((col) => c.collection(col)),
    })
    expect(ids(await t.get('/api/v1/book_collections?sort=-name'))).toEqual([hainish.id, empty.id, discworld.id])
  })

  it('sorts the filtered list', async () => {
    expect(ids(await t.get(`/api/v1/books?filter[author]=${c.authors.ursula.id}&sort=name`))).toEqual(
      bookIds('ursulaStories', 'dispossessed', 'leftHand'),
    )
    expect(ids(await t.get(`/api/v1/books?author_id=${c.authors.terry.id}&sort=-name`))).toEqual(
      bookIds('smallGods', 'mort', 'guards', 'terryStories'),
    )
  })

  it.each([
    ['/api/v1/books?sort=title'],
    ['/api/v1/books?sort=author'],
    ['/api/v1/books?sort=Name'],
    ['/api/v1/books?sort=name,title'],
    ['/api/v1/books?sort='],
    ['/api/v1/books?sort=name,'],
    ['/api/v1/books?sort=,name'],
    ['/api/v1/books?sort=-'],
    ['/api/v1/books?sort=name&sort=id'],
    ['/api/v1/authors?sort=books'],
    ['/api/v1/book_collections?sort=title'],
  ])('GET %s answers 400 naming sort', async (path) => {
    expectOneError(await t.get(path), 400, { parameter: 'sort' })
  })

  it.each([
    ['books', () => c.books.mort.id],
    ['authors', () => c.authors.terry.id],
    ['book_collections', () => c.collections.discworld.id],
  ])('sort on GET /api/v1/%s/{id} answers 400 naming sort', async (type, id) => {
    expectOneError(await t.get(`/api/v1/${type}/${id()}?sort=name`), 400, { parameter: 'sort' })
    expectOneError(await t.get(`/api/v1/${type}/${id()}?sort=id`), 400, { parameter: 'sort' })
  })
})

describe('filter', () => {
  const expectBooks = async (path: string, books: readonly SeededBook[]) =>
    expectDocument(await t.get(path), { data: books.map((b) => c.book(b)) })

  it('filter[name] on authors matches the whole name exactly', async () => {
    const { terry } = c.authors
    expectDocument(await t.get(`/api/v1/authors?filter[name]=${encodeURIComponent(terry.name)}`), {
      data: [c.author(terry)],
    })
  })

  it('filter[name] is case-sensitive and does not match parts of a name', async () => {
    expectDocument(await t.get(`/api/v1/authors?filter[name]=${encodeURIComponent('terry pratchett')}`), { data: [] })
    expectDocument(await t.get('/api/v1/authors?filter[name]=Terry'), { data: [] })
  })

  it('filter[name] on book collections', async () => {
    const { discworld } = c.collections
    expectDocument(await t.get('/api/v1/book_collections?filter[name]=Discworld'), {
      data: [c.collection(discworld)],
    })
    expectDocument(await t.get('/api/v1/book_collections?filter[name]=discworld'), { data: [] })
  })

  it('filter[name] on books returns every book of that name, in id order', async () => {
    await expectBooks(`/api/v1/books?filter[name]=${encodeURIComponent('Collected Stories')}`, [
      c.books.ursulaStories,
      c.books.terryStories,
    ])
    await expectBooks(`/api/v1/books?filter[name]=${encodeURIComponent('Guards! Guards!')}`, [c.books.guards])
  })

  it('filter[author] with one id lists that author’s books', async () => {
    const { leftHand, dispossessed, ursulaStories } = c.books
    await expectBooks(`/api/v1/books?filter[author]=${c.authors.ursula.id}`, [leftHand, dispossessed, ursulaStories])
  })

  it('filter[author] with several ids means any of them', async () => {
    await expectBooks(`/api/v1/books?filter[author]=${c.authors.ursula.id},${c.authors.terry.id}`, c.allBooks)
    await expectBooks(`/api/v1/books?filter[author]=${c.authors.nobody.id},${c.authors.terry.id}`, [
      c.books.guards,
      c.books.mort,
      c.books.terryStories,
      c.books.smallGods,
    ])
  })

  it('filter[author] with an author without books, or an id of no author, answers an empty list', async () => {
    await expectBooks(`/api/v1/books?filter[author]=${c.authors.nobody.id}`, [])
    await expectBooks('/api/v1/books?filter[author]=987654', [])
  })

  it('filter[book_collection] with ids means any of them', async () => {
    const { hainish, discworld, empty } = c.collections
    await expectBooks(`/api/v1/books?filter[book_collection]=${hainish.id}`, [c.books.leftHand, c.books.dispossessed])
    await expectBooks(
      `/api/v1/books?filter[book_collection]=${discworld.id},${hainish.id}`,
      c.allBooks.filter((b) => b.collection !== null),
    )
    await expectBooks(`/api/v1/books?filter[book_collection]=${empty.id}`, [])
  })

  it('filter[book_collection]=null lists the books without a collection', async () => {
    await expectBooks('/api/v1/books?filter[book_collection]=null', [c.books.ursulaStories, c.books.terryStories])
  })

  it('filter[book_collection]=null,{id} lists the books without a collection or in that one', async () => {
    const { leftHand, dispossessed, ursulaStories, terryStories } = c.books
    const expected = [leftHand, dispossessed, ursulaStories, terryStories]
    await expectBooks(`/api/v1/books?filter[book_collection]=null,${c.collections.hainish.id}`, expected)
    await expectBooks(`/api/v1/books?filter[book_collection]=${c.collections.hainish.id},null`, expected)
  })

  it('several filters combine with AND', async () => {
    const { terry, ursula } = c.authors
    await expectBooks(`/api/v1/books?filter[author]=${terry.id}&filter[book_collection]=null`, [c.books.terryStories])
    await expectBooks(
      `/api/v1/books?filter[name]=${encodeURIComponent('Collected Stories')}&filter[author]=${ursula.id}`,
      [c.books.ursulaStories],
    )
    await expectBooks(
      `/api/v1/books?filter[name]=Mort&filter[author]=${terry.id}&filter[book_collection]=${c.collections.discworld.id}`,
      [c.books.mort],
    )
    await expectBooks(`/api/v1/books?filter[name]=Mort&filter[author]=${ursula.id}`, [])
  })

  it('?author_id= keeps working and combines with filter[...] by AND', async () => {
    const { terry, ursula } = c.authors
    await expectBooks(`/api/v1/books?author_id=${ursula.id}`, [
      c.books.leftHand,
      c.books.dispossessed,
      c.books.ursulaStories,
    ])
    await expectBooks(`/api/v1/books?author_id=${terry.id}&filter[book_collection]=${c.collections.discworld.id}`, [
      c.books.guards,
      c.books.mort,
      c.books.smallGods,
    ])
    await expectBooks(`/api/v1/books?author_id=${ursula.id}&filter[author]=${ursula.id},${terry.id}`, [
      c.books.leftHand,
      c.books.dispossessed,
      c.books.ursulaStories,
    ])
    await expectBooks(`/api/v1/books?author_id=${ursula.id}&filter[author]=${terry.id}`, [])
  })

  it('filters work with include: only the filtered records and their related records come back', async () => {
    expectDocument(await t.get(`/api/v1/books?filter[book_collection]=${c.collections.hainish.id}&include=author`), {
      data: [c.book(c.books.leftHand, ['author']), c.book(c.books.dispossessed, ['author'])],
      included: [c.author(c.authors.ursula)],
    })
  })

  it.each([
    ['/api/v1/books?filter[nope]=1', 'filter[nope]'],
    ['/api/v1/books?filter[id]=1', 'filter[id]'],
    ['/api/v1/books?filter[author_id]=1', 'filter[author_id]'],
    ['/api/v1/books?filter[collection]=1', 'filter[collection]'],
    ['/api/v1/authors?filter[author]=1', 'filter[author]'],
    ['/api/v1/authors?filter[books]=1', 'filter[books]'],
    ['/api/v1/book_collections?filter[book_collection]=1', 'filter[book_collection]'],
    ['/api/v1/book_collections?filter[author]=1', 'filter[author]'],
    ['/api/v1/books?filter=1', 'filter'],
  ])('GET %s answers 400 naming %s', async (path, parameter) => {
    expectOneError(await t.get(path), 400, { parameter })
  })

  it.each([['abc'], ['-1'], ['1.5'], ['null'], ['1,abc'], ['1,null']])(
    'GET /api/v1/books?filter[author]=%s answers 400 naming filter[author]',
    async (value) => {
      expectOneError(await t.get(`/api/v1/books?filter[author]=${value}`), 400, { parameter: 'filter[author]' })
    },
  )

  it.each([['abc'], ['-1'], ['1.5'], ['1,abc']])(
    'GET /api/v1/books?filter[book_collection]=%s answers 400 naming filter[book_collection]',
    async (value) => {
      expectOneError(await t.get(`/api/v1/books?filter[book_collection]=${value}`), 400, {
        parameter: 'filter[book_collection]',
      })
    },
  )

  it('a repeated filter answers 400 naming it', async () => {
    expectOneError(await t.get('/api/v1/books?filter[author]=1&filter[author]=2'), 400, {
      parameter: 'filter[author]',
    })
  })

  it.each([
    ['books', 'filter[author]=1', 'filter[author]', () => c.books.mort.id],
    ['books', 'filter[name]=Mort', 'filter[name]', () => c.books.mort.id],
    ['authors', 'filter[name]=x', 'filter[name]', () => c.authors.terry.id],
    ['book_collections', 'filter[name]=Discworld', 'filter[name]', () => c.collections.discworld.id],
  ])('GET /api/v1/%s/{id}?%s answers 400 naming %s', async (type, filter, parameter, id) => {
    expectOneError(await t.get(`/api/v1/${type}/${id()}?${filter}`), 400, { parameter })
  })
})
