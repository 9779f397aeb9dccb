import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { changesNothing, expectErrorResponse, expectOneError } from '../support/expectations'
import { type Library, seedLibrary } from '../support/fixtures'
import { type Answer, openTestApp, type TestApp } from '../support/harness'

// If-Match and If-None-Match on POST /api/v1/operations (docs/caching.md): they apply to every
// record (or to-many relationship) stored before the request that its operations change, each
// compared as the resource routes compare one, inside the request's transaction.

const ATOMIC = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'

function etagOf(answer: Answer): string {
  const tag = answer.headers.get('etag')
  if (tag === null) throw new Error(`no ETag on a ${answer.status} answer: ${answer.text}`)
  return tag
}

const rename = (type: string, id: string, name: string) => ({ op: 'update', data: { type, id, attributes: { name } } })
const addAuthor = (name: string) => ({ op: 'add', data: { type: 'authors', lid: 'new', attributes: { name } } })
const ref = (type: string, id: string, relationship?: string) => ({ ref: { type, id, relationship } })

/** A 412 or 428 about one record of an atomic request: the header, and the operation in meta. */
function expectRefused(answer: Answer, status: number, header: string, operation: number): void {
  expectErrorResponse(answer, status)
  expect(answer.json.errors).toEqual([
    {
      status: String(status),
      title: status === 412 ? 'Precondition Failed' : 'Precondition Required',
      detail: expect.stringMatching(/\S/),
      source: { header },
      meta: { operation: `/atomic:operations/${operation}` },
    },
  ])
}

let t: TestApp
let lib: Library
const atomic = (operations: unknown[], headers: Record<string, string> = {}) =>
  t.request('POST', '/api/v1/operations', {
    body: { 'atomic:operations': operations },
    headers: { 'content-type': ATOMIC, accept: ATOMIC, ...headers },
  })
const bookTag = async (id = lib.bookId) => etagOf(await t.get(`/api/v1/books/${id}`))

describe('POST /api/v1/operations with If-Match', () => {
  beforeEach(async () => {
    t = await openTestApp()
    lib = await seedLibrary(t)
  })
  afterEach(() => t.close())

  it('refuses a tag that is no tag of the book with 412 and writes nothing, the operations before it included', async () => {
    const answer = await changesNothing(t, () =>
      atomic([addAuthor('Never stored'), rename('books', lib.bookId, 'Renamed')], { 'if-match': '"definitely-stale"' }),
    )
    expectRefused(answer, 412, 'If-Match', 1)
    expect(answer.json.errors[0].detail).toBe(
      `No ETag in If-Match is the current one of book ${lib.bookId}, changed by operation 1: it has changed since its ETag was taken, or none of its ETags was sent, so nothing of this request was written. GET it again and send its ETag with those of the other records the request changes`,
    )
    expect((await t.stored('books'))[0]?.name).toBe('The Left Hand of Darkness')
  })

  it('refuses a tag taken before the book changed with 412, and runs with its current tag', async () => {
    const stale = await bookTag()
    expect((await atomic([rename('books', lib.bookId, 'First')])).status).toBe(200)
    expectRefused(
      await changesNothing(t, () => atomic([rename('books', lib.bookId, 'Second')], { 'if-match': stale })),
      412,
      'If-Match',
      0,
    )
    const current = await atomic([rename('books', lib.bookId, 'Second')], { 'if-match': await bookTag() })
    expect(current.status).toBe(200)
    expect((await t.stored('books'))[0]?.name).toBe('Second')
  })

  it('takes a tag from any representation of the record (include, fields) and from a list of several', async () => {
    const tag = etagOf(await t.get(`/api/v1/books/${lib.bookId}?include=author&fields[books]=name`))
    const answer = await atomic([rename('books', lib.bookId, 'Tagged')], { 'if-match': `"other", ${tag}` })
    expect(answer.status).toBe(200)
  })

  it('compares every stored record the request changes, each with its own tag among those sent', async () => {
    const other = await t.create('books', { name: 'The Dispossessed', author_id: lib.authorId })
    const tags = [await bookTag(), await bookTag(other), etagOf(await t.get(`/api/v1/authors/${lib.authorId}`))]
    const changes = [
      rename('books', lib.bookId, 'One'),
      rename('books', other, 'Two'),
      rename('authors', lib.authorId, 'Three'),
    ]
    // The second book's tag left out: it is the one named, whatever the order of the tags.
    const partial = await changesNothing(t, () => atomic(changes, { 'if-match': `${tags[2]}, ${tags[0]}` }))
    expectRefused(partial, 412, 'If-Match', 1)
    expect(partial.json.errors[0].detail).toStartWith(`No ETag in If-Match is the current one of book ${other},`)
    expect((await atomic(changes, { 'if-match': tags.join(', ') })).status).toBe(200)
    expect((await t.stored('books')).map((book) => book.name)).toEqual(['One', 'Two'])
    expect((await t.stored('authors'))[0]?.name).toBe('Three')
  })

  it('compares the state before the request: a record it changes twice passes with the tag of before', async () => {
    const tag = await bookTag()
    const answer = await atomic([rename('books', lib.bookId, 'Once'), rename('books', lib.bookId, 'Twice')], {
      'if-match': tag,
    })
    expect(answer.status).toBe(200)
    expect((await t.stored('books'))[0]?.name).toBe('Twice')
  })

  it('compares a to-many relationship with the tag of its members, as its own route does', async () => {
    const path = `/api/v1/book_collections/${lib.collectionId}/relationships/books`
    const emptied = { op: 'update', ...ref('book_collections', lib.collectionId, 'books'), data: [] }
    // The collection's own tag does not cover which books are its.
    const collectionTag = etagOf(await t.get(`/api/v1/book_collections/${lib.collectionId}`))
    const refused = await changesNothing(t, () => atomic([emptied], { 'if-match': collectionTag }))
    expectRefused(refused, 412, 'If-Match', 0)
    expect(refused.json.errors[0].detail).toStartWith(
      `No ETag in If-Match is the current one of the books of book collection ${lib.collectionId},`,
    )
    expect((await atomic([emptied], { 'if-match': etagOf(await t.get(path)) })).status).toBe(200)
    expect((await t.stored('books'))[0]?.book_collection_id).toBeNull()
  })

  it('compares a to-one relationship operation and a removal with the record tag', async () => {
    const stale = await bookTag()
    const cleared = { op: 'update', ...ref('books', lib.bookId, 'book_collection'), data: null }
    expect((await atomic([cleared], { 'if-match': stale })).status).toBe(200)
    const removal = { op: 'remove', ...ref('books', lib.bookId) }
    expectRefused(await changesNothing(t, () => atomic([removal], { 'if-match': stale })), 412, 'If-Match', 0)
    expect((await atomic([removal], { 'if-match': await bookTag() })).status).toBe(200)
    expect(await t.stored('books')).toEqual([])
  })

  it('leaves a batch that only adds records, or changes records it added, to run whatever If-Match says', async () => {
    const answer = await atomic(
      [addAuthor('Added'), { op: 'update', data: { type: 'authors', lid: 'new', attributes: { name: 'Renamed' } } }],
      { 'if-match': '"definitely-stale"' },
    )
    expect(answer.status).toBe(200)
    expect((await t.stored('authors')).map((author) => author.name)).toEqual(['Ursula K. Le Guin', 'Renamed'])
  })

  it('answers 404 for a record that does not exist, whatever If-Match says', async () => {
    const answer = await changesNothing(t, () => atomic([rename('books', '999', 'Nobody')], { 'if-match': '"x"' }))
    expectOneError(answer, 404, { pointer: '/atomic:operations/0' })
  })

  it('lets one of two requests with the same tag through and answers the other 412: compared inside the write', async () => {
    const tag = await bookTag()
    const answers = await Promise.all(
      ['Alice', 'Bob'].map((name) => atomic([rename('books', lib.bookId, name)], { 'if-match': tag })),
    )
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 412])
    const winner = answers.find((answer) => answer.status === 200)
    expect((await t.stored('books'))[0]?.name).toBe(winner?.json['atomic:results'][0].data.attributes.name)
  })
})

describe('POST /api/v1/operations with If-None-Match', () => {
  beforeEach(async () => {
    t = await openTestApp()
    lib = await seedLibrary(t)
  })
  afterEach(() => t.close())

  it('refuses with * a request that changes any stored record (412), and runs a batch that only adds', async () => {
    const answer = await changesNothing(t, () =>
      atomic([addAuthor('Added'), rename('books', lib.bookId, 'Changed')], { 'if-none-match': '*' }),
    )
    expectRefused(answer, 412, 'If-None-Match', 1)
    expect(answer.json.errors[0].detail).toBe(
      `The state of book ${lib.bookId}, changed by operation 1, matches If-None-Match, so nothing of this request was written (If-None-Match: * refuses a request that changes any stored record)`,
    )
    expect((await atomic([addAuthor('Added')], { 'if-none-match': '*' })).status).toBe(200)
  })

  it("refuses a request when a record's current tag is listed, and runs it when only older ones are", async () => {
    const old = await bookTag()
    expect((await atomic([rename('books', lib.bookId, 'Newer')])).status).toBe(200)
    const current = await bookTag()
    const refused = await changesNothing(t, () =>
      atomic([rename('books', lib.bookId, 'No')], { 'if-none-match': `"other", ${current}` }),
    )
    expectRefused(refused, 412, 'If-None-Match', 0)
    expect((await atomic([rename('books', lib.bookId, 'Yes')], { 'if-none-match': old })).status).toBe(200)
  })
})

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
