import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { addAuthor, atomicRequest, etagOf, expectRefused, ref, rename } from '../support/atomic-requests'
import { changesNothing, expectOneError } from '../support/expectations'
import { type Library, seedLibrary } from '../support/fixtures'
import { openTestApp, type TestApp } from '../support/harness'

// If-Match and If-None-Match on POST /api/v1/operations (docs/caching.md, "Atomic operations"):
// they apply to each operation its own route would compare, with the state that route compares (a
// record named by id, the members of its to-many relationship), inside the request's transaction.
// With REQUIRE_IF_MATCH: operations-require-if-match.test.ts.

let t: TestApp
let lib: Library
const atomic = (operations: unknown[], headers: Record<string, string> = {}) => atomicRequest(t, operations, headers)
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

  it('answers the 404 of an operation naming a record that does not exist before the 412 of a later one', async () => {
    const answer = await changesNothing(t, () =>
      atomic([rename('books', '999', 'Nobody'), rename('books', lib.bookId, 'Stale')], { 'if-match': '"x"' }),
    )
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
      `The state of book ${lib.bookId}, changed by operation 1, matches If-None-Match, so nothing of this request was written (If-None-Match: * refuses a request with any operation on a record stored before it, named by id)`,
    )
    expect((await atomic([addAuthor('Added')], { 'if-none-match': '*' })).status).toBe(200)
  })

  it("compares what each operation's route compares: an author added by the request taking in a stored book runs with * or a stale If-Match and moves it; the book moved by its own relationship is refused 412", async () => {
    const books = { type: 'authors', lid: 'new', relationship: 'books' }
    const taken = { op: 'add', ref: books, data: [{ type: 'books', id: lib.bookId }] }
    const conditions: Record<string, string>[] = [{ 'if-none-match': '*' }, { 'if-match': '"definitely-stale"' }]
    for (const headers of conditions) {
      const answer = await atomic([addAuthor('Taker'), taken], headers)
      expect({ headers, status: answer.status }).toEqual({ headers, status: 200 })
      const taker = answer.json['atomic:results'][0].data.id
      expect((await t.stored('books'))[0]?.author_id).toBe(Number(taker))
    }
    const moved = { op: 'update', ...ref('books', lib.bookId, 'author'), data: { type: 'authors', lid: 'new' } }
    for (const [header, value] of [
      ['If-None-Match', '*'],
      ['If-Match', '"definitely-stale"'],
    ] as const) {
      const refused = await changesNothing(t, () => atomic([addAuthor('Taker'), moved], { [header]: value }))
      expectRefused(refused, 412, header, 1)
    }
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
