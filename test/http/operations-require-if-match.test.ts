import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { atomicRequest, etagOf, expectRefused, ref, rename } from '../support/atomic-requests'
import { changesNothing, expectOneError } from '../support/expectations'
import { type Library, seedLibrary } from '../support/fixtures'
import { openTestApp, type TestApp } from '../support/harness'

// REQUIRE_IF_MATCH=true on POST /api/v1/operations (docs/caching.md, "REQUIRE_IF_MATCH"): a request
// that changes a record stored before it needs If-Match, which covers each record it changes, and
// each stored record a to-many operation takes in from elsewhere.

let t: TestApp
let lib: Library
const atomic = (operations: unknown[], headers: Record<string, string> = {}) => atomicRequest(t, operations, headers)
const bookTag = async (id = lib.bookId) => etagOf(await t.get(`/api/v1/books/${id}`))

describe('REQUIRE_IF_MATCH=true: POST /api/v1/operations', () => {
  beforeEach(async () => {
    t = await openTestApp({ app: { requireIfMatch: true } })
    lib = await seedLibrary(t)
  })
  afterEach(() => t.close())

  const shelf = { op: 'add', data: { type: 'book_collections', lid: 'shelf', attributes: { name: 'Shelf' } } }
  const membersTag = async (type: string, id: string) =>
    etagOf(await t.get(`/api/v1/${type}/${id}/relationships/books`))
  /** Each operation that changes a stored record, and the tag that covers it. */
  const cases: [string, () => unknown, () => Promise<string>][] = [
    ['an update of a book', () => rename('books', lib.bookId, 'Guarded'), () => bookTag()],
    ['a removal of a book', () => ({ op: 'remove', ...ref('books', lib.bookId) }), () => bookTag()],
    [
      "a change of a book's to-one",
      () => ({ op: 'update', ...ref('books', lib.bookId, 'book_collection'), data: null }),
      () => bookTag(),
    ],
    [
      "an add to an author's books (its own book: no book joins)",
      () => ({ op: 'add', ...ref('authors', lib.authorId, 'books'), data: [{ type: 'books', id: lib.bookId }] }),
      () => membersTag('authors', lib.authorId),
    ],
    [
      "a replace of a collection's books",
      () => ({ op: 'update', ...ref('book_collections', lib.collectionId, 'books'), data: [] }),
      () => membersTag('book_collections', lib.collectionId),
    ],
    [
      'a collection added by the request taking a stored book from its collection',
      () => ({
        op: 'add',
        ref: { type: 'book_collections', lid: 'shelf', relationship: 'books' },
        data: [{ type: 'books', id: lib.bookId }],
      }),
      () => bookTag(),
    ],
  ]

  for (const [what, change, tag] of cases) {
    it(`answers 428 to ${what} without If-Match, pointing at it, and stores nothing`, async () => {
      const answer = await changesNothing(t, () => atomic([shelf, change()]))
      expectOneError(answer, 428, { pointer: '/atomic:operations/1' })
      expect(answer.json.errors[0].detail).toBe(
        'This service requires If-Match on writes that change stored records, and operation 1 changes one stored before this request: send in If-Match the ETag of each record (or to-many relationship) the request changes, as your last GET of it gave it, or If-Match: * to write whatever is stored',
      )
    })

    it(`runs ${what} with the tag that covers it`, async () => {
      expect((await atomic([shelf, change()], { 'if-match': await tag() })).status).toBe(200)
    })
  }

  it('answers 412 to a tag that does not cover a record the request changes, and stores nothing', async () => {
    const authorTag = etagOf(await t.get(`/api/v1/authors/${lib.authorId}`))
    const answer = await changesNothing(t, () =>
      atomic([shelf, rename('books', lib.bookId, 'Guarded')], { 'if-match': authorTag }),
    )
    expectRefused(answer, 412, 'If-Match', 1)
  })

  it("answers 428 to a book taken in from elsewhere that only the relationship's tag covers, as its route does", async () => {
    const second = await t.create('authors', { name: 'Second author' })
    const moved = { op: 'add', ...ref('authors', second, 'books'), data: [{ type: 'books', id: lib.bookId }] }
    const relationshipTag = await membersTag('authors', second)
    const answer = await changesNothing(t, () => atomic([moved], { 'if-match': relationshipTag }))
    expectRefused(answer, 428, 'If-Match', 0)
    expect(answer.json.errors[0].detail).toBe(
      `This service requires If-Match on writes that change stored records, and no ETag in If-Match is the current one of book ${lib.bookId}, which operation 0 would take in from elsewhere, changing its own relationship; nothing of this request was written. Send its ETag with the others (GET it again if it has changed), or If-Match: * to write whatever is stored`,
    )
    const both = `${await membersTag('authors', second)}, ${await bookTag()}`
    expect((await atomic([moved], { 'if-match': both })).status).toBe(200)
    expect((await t.stored('books'))[0]?.author_id).toBe(Number(second))
  })

  it('answers 404 to an add to the books of an author that does not exist, whatever If-Match says, as its route does', async () => {
    const joining = { data: [{ type: 'books', id: lib.bookId }] }
    const route = await changesNothing(t, () =>
      t.request('POST', '/api/v1/authors/99/relationships/books', { body: joining, headers: { 'if-match': '"x.y"' } }),
    )
    expect(route.status).toBe(404)
    const added = { op: 'add', ...ref('authors', '99', 'books'), ...joining }
    for (const tag of ['"x.y"', `"x.y", ${await bookTag()}`]) {
      const answer = await changesNothing(t, () => atomic([added], { 'if-match': tag }))
      expectOneError(answer, 404, { pointer: '/atomic:operations/0' })
    }
  })

  it('runs adds, and changes to records the request added, without If-Match', async () => {
    const answer = await atomic([
      { op: 'add', data: { type: 'authors', lid: 'a', attributes: { name: 'New author' } } },
      { op: 'add', data: { type: 'book_collections', lid: 'c', attributes: { name: 'New shelf' } } },
      {
        op: 'add',
        data: {
          type: 'books',
          lid: 'b',
          attributes: { name: 'New book' },
          relationships: { author: { data: { type: 'authors', lid: 'a' } } },
        },
      },
      { op: 'update', data: { type: 'authors', lid: 'a', attributes: { name: 'Renamed author' } } },
      {
        op: 'add',
        ref: { type: 'book_collections', lid: 'c', relationship: 'books' },
        data: [{ type: 'books', lid: 'b' }],
      },
    ])
    expect(answer.status).toBe(200)
    expect((await t.stored('authors')).map((a) => a.name)).toEqual(['Ursula K. Le Guin', 'Renamed author'])
  })

  it('runs operations that change stored records with If-Match: *', async () => {
    const answer = await atomic([rename('books', lib.bookId, 'Unguarded')], { 'if-match': '*' })
    expect(answer.status).toBe(200)
    expect((await t.stored('books'))[0]?.name).toBe('Unguarded')
  })
})
