import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'bun:test'
import { createApp } from '../../src/http/app'
import { createLogger } from '../../src/logger'
import { resources } from '../../src/resources/registry'
import type { Store } from '../../src/store/store'
import { insertCatalogue } from '../support/bulk'
import { changesNothing, expectOneError, expectRecordNotFound } from '../support/expectations'
import { type Library, seedLibrary } from '../support/fixtures'
import { type Answer, JSON_API, openTestApp, type TestApp } from '../support/harness'

// ETags, If-None-Match and If-Match (RFC 9110 §8.8.3, §13), as docs/caching.md describes them.

const ATOMIC = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'

/** `"..."`, not `W/"..."`. */
const STRONG = /^"[^"]+"$/
const WEAK = /^W\/"[^"]+"$/

function etagOf(answer: Answer): string {
  const tag = answer.headers.get('etag')
  if (tag === null) throw new Error(`no ETag on a ${answer.status} answer: ${answer.text}`)
  return tag
}

function renameBook(t: TestApp, id: string, name: string, headers: Record<string, string> = {}, method = 'PATCH') {
  return t.request(method, `/api/v1/books/${id}`, {
    body: { data: { type: 'books', id, attributes: { name } } },
    headers,
  })
}

function expectNotModified(answer: Answer, tag: string): void {
  expect(answer.status).toBe(304)
  expect(answer.text).toBe('')
  expect(answer.headers.get('etag')).toBe(tag)
  expect(answer.headers.get('cache-control')).toBe('no-cache')
  expect(answer.headers.get('content-type')).toBeNull()
}

let t: TestApp
let lib: Library
beforeEach(async () => {
  t = await openTestApp()
  lib = await seedLibrary(t)
})
afterEach(() => t.close())

describe('GET /api/v1/books/:id', () => {
  it('answers with a strong ETag, the same for the same bytes', async () => {
    const first = await t.get(`/api/v1/books/${lib.bookId}`)
    const second = await t.get(`/api/v1/books/${lib.bookId}`)
    expect(first.status).toBe(200)
    expect(etagOf(first)).toMatch(STRONG)
    expect(second.text).toBe(first.text)
    expect(etagOf(second)).toBe(etagOf(first))
  })

  it('answers with another ETag once the book has changed', async () => {
    const before = await t.get(`/api/v1/books/${lib.bookId}`)
    expect((await renameBook(t, lib.bookId, 'Changed')).status).toBe(200)
    const after = await t.get(`/api/v1/books/${lib.bookId}`)
    expect(after.json.data.attributes.name).toBe('Changed')
    expect(etagOf(after)).not.toBe(etagOf(before))
  })

  it('gives each representation of the book its own ETag (fields, include)', async () => {
    const tags = new Set<string>()
    for (const query of ['', '?fields[books]=name', '?include=author', '?include=book_collection']) {
      tags.add(etagOf(await t.get(`/api/v1/books/${lib.bookId}${query}`)))
    }
    expect(tags.size).toBe(4)
  })

  it('says no-cache, so that a cache checks the ETag before each use', async () => {
    expect((await t.get(`/api/v1/books/${lib.bookId}`)).headers.get('cache-control')).toBe('no-cache')
  })

  it('answers 304 with the ETag and no body to a matching If-None-Match', async () => {
    const tag = etagOf(await t.get(`/api/v1/books/${lib.bookId}`))
    expectNotModified(await t.get(`/api/v1/books/${lib.bookId}`, { 'if-none-match': tag }), tag)
  })

  it('answers 304 to If-None-Match: *, to a list of tags holding the ETag, and to its weak form', async () => {
    const path = `/api/v1/books/${lib.bookId}`
    const tag = etagOf(await t.get(path))
    expectNotModified(await t.get(path, { 'if-none-match': '*' }), tag)
    expectNotModified(await t.get(path, { 'if-none-match': `"other", ${tag} , "more"` }), tag)
    expectNotModified(await t.get(path, { 'if-none-match': `W/${tag}` }), tag)
  })

  it('answers 200 to the ETag of an earlier state', async () => {
    const path = `/api/v1/books/${lib.bookId}`
    const old = etagOf(await t.get(path))
    await renameBook(t, lib.bookId, 'Changed')
    const answer = await t.get(path, { 'if-none-match': old })
    expect(answer.status).toBe(200)
    expect(answer.json.data.attributes.name).toBe('Changed')
  })

  it.each(['garbage', '"unterminated', 'W/', '""', ',,,', `"${'x'.repeat(4000)}"`])(
    'answers 200 to a malformed or unknown If-None-Match %p',
    async (value) => {
      const answer = await t.get(`/api/v1/books/${lib.bookId}`, { 'if-none-match': value })
      expect(answer.status).toBe(200)
      expect(answer.json.data.id).toBe(lib.bookId)
    },
  )

  it('answers HEAD with the same ETag, and 304 to a matching If-None-Match', async () => {
    const path = `/api/v1/books/${lib.bookId}`
    const tag = etagOf(await t.get(path))
    const head = await t.request('HEAD', path)
    expect(head.status).toBe(200)
    expect(etagOf(head)).toBe(tag)
    expectNotModified(await t.request('HEAD', path, { headers: { 'if-none-match': tag } }), tag)
  })

  it('answers 404 to If-None-Match: * for a book that does not exist', async () => {
    expectRecordNotFound(await t.get('/api/v1/books/999', { 'if-none-match': '*' }))
  })
})

describe('GET of lists and relationships', () => {
  it('tags a page of books by its bytes, and answers 304 until a book changes', async () => {
    await t.create('books', { name: 'Second', author_id: Number(lib.authorId) })
    const path = '/api/v1/books?page[size]=10'
    const tag = etagOf(await t.get(path))
    expect(tag).toMatch(STRONG)
    expectNotModified(await t.get(path, { 'if-none-match': tag }), tag)
    await renameBook(t, lib.bookId, 'Changed')
    const after = await t.get(path, { 'if-none-match': tag })
    expect(after.status).toBe(200)
    expect(etagOf(after)).not.toBe(tag)
  })

  it('tags a short unpaginated list (read whole, in one query) by its bytes, and answers 304 until a book changes', async () => {
    await t.create('books', { name: 'Second', author_id: Number(lib.authorId) })
    for (const path of [`/api/v1/books?author_id=${lib.authorId}`, '/api/v1/books?sort=-name&include=author']) {
      const first = await t.get(path)
      expect(first.json.data).toHaveLength(2)
      const tag = etagOf(first)
      expect(tag).toMatch(STRONG)
      expectNotModified(await t.get(path, { 'if-none-match': tag }), tag)
    }
    await renameBook(t, lib.bookId, 'Changed')
    const path = `/api/v1/books?author_id=${lib.authorId}`
    const tag = etagOf(await t.get(path))
    await renameBook(t, lib.bookId, 'Changed again')
    const after = await t.get(path, { 'if-none-match': tag })
    expect(after.status).toBe(200)
    expect(etagOf(after)).not.toBe(tag)
  })

  it('tags the related resource and relationship endpoints, and answers 304 to their tags', async () => {
    for (const path of [
      `/api/v1/books/${lib.bookId}/author`,
      `/api/v1/books/${lib.bookId}/relationships/author`,
      `/api/v1/authors/${lib.authorId}/books`,
      `/api/v1/authors/${lib.authorId}/relationships/books`,
    ]) {
      const tag = etagOf(await t.get(path))
      expectNotModified(await t.get(path, { 'if-none-match': tag }), tag)
    }
  })
})

describe('PATCH, PUT and DELETE /api/v1/books/:id with If-Match', () => {
  it('PATCH with the current ETag writes, and answers with the ETag of what it wrote', async () => {
    const tag = etagOf(await t.get(`/api/v1/books/${lib.bookId}`))
    const first = await renameBook(t, lib.bookId, 'First', { 'if-match': tag })
    expect(first.status).toBe(200)
    expect(first.json.data.attributes.name).toBe('First')
    // The answer's tag guards the next write: no GET needed in between.
    const second = await renameBook(t, lib.bookId, 'Second', { 'if-match': etagOf(first) })
    expect(second.status).toBe(200)
    expect((await t.stored('books'))[0]?.name).toBe('Second')
  })

  it('POST answers the created book with an ETag that guards its first edit', async () => {
    const created = await t.post('/api/v1/books', {
      data: { type: 'books', attributes: { name: 'Fresh', author_id: Number(lib.authorId) } },
    })
    expect(created.status).toBe(201)
    const tag = etagOf(created)
    expect(tag).toMatch(STRONG)
    expect((await renameBook(t, created.json.data.id, 'Edited', { 'if-match': tag })).status).toBe(200)
    expectOneError(await renameBook(t, created.json.data.id, 'Again', { 'if-match': tag }), 412, {
      header: 'If-Match',
    })
  })

  it('PATCH with a stale ETag answers 412 and changes nothing', async () => {
    const stale = etagOf(await t.get(`/api/v1/books/${lib.bookId}`))
    await renameBook(t, lib.bookId, 'Someone else')
    const answer = await changesNothing(t, () => renameBook(t, lib.bookId, 'Mine', { 'if-match': stale }))
    expectOneError(answer, 412, { header: 'If-Match' })
    expect(answer.json.errors[0].detail).toBe(
      'Book 1 has changed since the ETag in If-Match was taken, so nothing was written; GET it again and retry with the new ETag',
    )
    expect((await t.stored('books'))[0]?.name).toBe('Someone else')
  })

  it('PUT with a stale ETag answers 412; with the current one it writes, and answers without an ETag', async () => {
    const tag = etagOf(await t.get(`/api/v1/books/${lib.bookId}`))
    const written = await renameBook(t, lib.bookId, 'Put', { 'if-match': tag }, 'PUT')
    expect(written.status).toBe(200)
    // RFC 9110 §9.3.4: a PUT that did not store its body as sent carries no validator.
    expect(written.headers.get('etag')).toBeNull()
    const answer = await changesNothing(t, () => renameBook(t, lib.bookId, 'Again', { 'if-match': tag }, 'PUT'))
    expectOneError(answer, 412, { header: 'If-Match' })
  })

  it('DELETE with a stale ETag answers 412 and the book stays; with the current one it deletes', async () => {
    const stale = etagOf(await t.get(`/api/v1/books/${lib.bookId}`))
    await renameBook(t, lib.bookId, 'Changed')
    const path = `/api/v1/books/${lib.bookId}`
    const refused = await changesNothing(t, () => t.request('DELETE', path, { headers: { 'if-match': stale } }))
    expectOneError(refused, 412, { header: 'If-Match' })
    const current = etagOf(await t.get(path))
    expect((await t.request('DELETE', path, { headers: { 'if-match': current } })).status).toBe(204)
    expect(await t.stored('books')).toEqual([])
  })

  it('accepts the ETag of any representation of the stored book', async () => {
    for (const query of ['?fields[books]=name', '?include=author,book_collection', '/relationships/author']) {
      const tag = etagOf(await t.get(`/api/v1/books/${lib.bookId}${query}`))
      expect((await renameBook(t, lib.bookId, `From ${query}`, { 'if-match': tag })).status).toBe(200)
    }
  })

  it('accepts a list of tags holding the current one', async () => {
    const tag = etagOf(await t.get(`/api/v1/books/${lib.bookId}`))
    expect((await renameBook(t, lib.bookId, 'Listed', { 'if-match': `"a.b", ${tag}` })).status).toBe(200)
  })

  it('If-Match: * writes to whatever is stored; a book that does not exist is still 404', async () => {
    await renameBook(t, lib.bookId, 'Changed')
    expect((await renameBook(t, lib.bookId, 'Star', { 'if-match': '*' })).status).toBe(200)
    expectRecordNotFound(await renameBook(t, '999', 'Nobody', { 'if-match': '*' }))
    expectRecordNotFound(await t.request('DELETE', '/api/v1/books/999', { headers: { 'if-match': '"a.b"' } }))
  })

  it("refuses a list's ETag: it does not stand for the book", async () => {
    const listTag = etagOf(await t.get('/api/v1/books'))
    const answer = await changesNothing(t, () => renameBook(t, lib.bookId, 'Mine', { 'if-match': listTag }))
    expectOneError(answer, 412, { header: 'If-Match' })
  })

  it('refuses the weak form of the current ETag: If-Match compares strongly', async () => {
    const tag = etagOf(await t.get(`/api/v1/books/${lib.bookId}`))
    const answer = await changesNothing(t, () => renameBook(t, lib.bookId, 'Mine', { 'if-match': `W/${tag}` }))
    expectOneError(answer, 412, { header: 'If-Match' })
  })

  it.each(['"stale"', 'garbage', '', '"unterminated', 'W/', ',', '"a.b".."c"'])(
    'refuses If-Match %p with 412, changing nothing',
    async (value) => {
      const answer = await changesNothing(t, () => renameBook(t, lib.bookId, 'Mine', { 'if-match': value }))
      expectOneError(answer, 412, { header: 'If-Match' })
    },
  )

  it('refuses a write whose If-None-Match is * or the current ETag, with 412', async () => {
    const tag = etagOf(await t.get(`/api/v1/books/${lib.bookId}`))
    for (const value of ['*', tag]) {
      const answer = await changesNothing(t, () => renameBook(t, lib.bookId, 'Mine', { 'if-none-match': value }))
      expectOneError(answer, 412, { header: 'If-None-Match' })
    }
    expect((await renameBook(t, lib.bookId, 'Mine', { 'if-none-match': '"other.tag"' })).status).toBe(200)
  })

  it('gives the second of two editors holding the same ETag a 412, and keeps the first one’s change', async () => {
    const tag = etagOf(await t.get(`/api/v1/books/${lib.bookId}`))
    expect((await renameBook(t, lib.bookId, 'Editor one', { 'if-match': tag })).status).toBe(200)
    expectOneError(await renameBook(t, lib.bookId, 'Editor two', { 'if-match': tag }), 412, { header: 'If-Match' })
    expect((await t.stored('books'))[0]?.name).toBe('Editor one')
  })

  it('of two editors racing with the same ETag, lets exactly one write and gives the other a 412', async () => {
    const tag = etagOf(await t.get(`/api/v1/books/${lib.bookId}`))
    // Sent at once: both reach the store before either is written, so only a check inside the write tells them apart.
    const answers = await Promise.all(
      ['Racer one', 'Racer two'].map((name) => renameBook(t, lib.bookId, name, { 'if-match': tag })),
    )
    expect(answers.map((a) => a.status).sort()).toEqual([200, 412])
    const winner = answers.find((a) => a.status === 200) as Answer
    expect((await t.stored('books'))[0]?.name).toBe(winner.json.data.attributes.name)
  })

  it('writes without If-Match as before when the service does not require it', async () => {
    expect((await renameBook(t, lib.bookId, 'Unconditional')).status).toBe(200)
  })
})

describe('relationship writes with If-Match', () => {
  const authorLinkage = (id: string) => ({ data: { type: 'authors', id } })

  it("guards a to-one relationship with the book's ETag", async () => {
    const other = await t.create('authors', { name: 'Other' })
    const path = `/api/v1/books/${lib.bookId}/relationships/author`
    const tag = etagOf(await t.get(`/api/v1/books/${lib.bookId}`))
    const written = await t.request('PATCH', path, { body: authorLinkage(other), headers: { 'if-match': tag } })
    expect(written.status).toBe(200)
    expect(etagOf(written)).toMatch(STRONG)
    const refused = await changesNothing(t, () =>
      t.request('PATCH', path, { body: authorLinkage(lib.authorId), headers: { 'if-match': tag } }),
    )
    expectOneError(refused, 412, { header: 'If-Match' })
  })

  it('guards a to-many relationship with its own ETag, for PATCH, POST and DELETE', async () => {
    const second = await t.create('books', { name: 'Second', author_id: Number(lib.authorId) })
    const other = await t.create('book_collections', { name: 'Other' })
    const path = `/api/v1/book_collections/${other}/relationships/books`
    const books = (...ids: string[]) => ({ data: ids.map((id) => ({ type: 'books', id })) })
    const stale = etagOf(await t.get(path))
    const added = await t.request('POST', path, { body: books(second), headers: { 'if-match': stale } })
    expect(added.status).toBe(200)
    for (const method of ['PATCH', 'POST', 'DELETE']) {
      const refused = await changesNothing(t, () =>
        t.request(method, path, { body: books(lib.bookId), headers: { 'if-match': stale } }),
      )
      expectOneError(refused, 412, { header: 'If-Match' })
      expect(refused.json.errors[0].detail).toBe(
        'The books of book collection 2 have changed since the ETag in If-Match was taken, so nothing was written; GET them again and retry with the new ETag',
      )
    }
    const current = etagOf(await t.get(path))
    expect(etagOf(added)).toBe(current)
    const replaced = await t.request('PATCH', path, { body: books(lib.bookId), headers: { 'if-match': current } })
    expect(replaced.status).toBe(200)
    expect(replaced.json.data).toEqual([{ type: 'books', id: lib.bookId }])
  })

  it('refuses a write with If-None-Match: * with 412, its detail agreeing with what it names: a book matches, the books of an author match', async () => {
    const noneMatch = { 'if-none-match': '*' }
    const record = await changesNothing(t, () => renameBook(t, lib.bookId, 'Mine', noneMatch))
    expect(record.json.errors[0].detail).toStartWith(`Book ${lib.bookId} matches If-None-Match, so nothing was written`)
    const path = `/api/v1/authors/${lib.authorId}/relationships/books`
    const members = await changesNothing(t, () =>
      t.request('POST', path, { body: { data: [{ type: 'books', id: lib.bookId }] }, headers: noneMatch }),
    )
    expectOneError(members, 412, { header: 'If-None-Match' })
    expect(members.json.errors[0].detail).toBe(
      `The books of author ${lib.authorId} match If-None-Match, so nothing was written (If-None-Match: * refuses any write to a record that exists)`,
    )
  })

  it("does not take the owner's ETag for a to-many relationship: its members are not part of it", async () => {
    const tag = etagOf(await t.get(`/api/v1/book_collections/${lib.collectionId}`))
    const answer = await changesNothing(t, () =>
      t.request('PATCH', `/api/v1/book_collections/${lib.collectionId}/relationships/books`, {
        body: { data: [] },
        headers: { 'if-match': tag },
      }),
    )
    expectOneError(answer, 412, { header: 'If-Match' })
  })
})

describe('REQUIRE_IF_MATCH=true', () => {
  let strict: TestApp
  let ids: Library
  beforeEach(async () => {
    strict = await openTestApp({ app: { requireIfMatch: true } })
    ids = await seedLibrary(strict)
  })
  afterEach(() => strict.close())

  const body = (id: string) => ({ data: { type: 'books', id, attributes: { name: 'Unguarded' } } })

  it('answers 428 to PATCH, PUT and DELETE of a record without If-Match, changing nothing', async () => {
    for (const method of ['PATCH', 'PUT', 'DELETE']) {
      const answer = await changesNothing(strict, () =>
        strict.request(method, `/api/v1/books/${ids.bookId}`, method === 'DELETE' ? {} : { body: body(ids.bookId) }),
      )
      expectOneError(answer, 428, { header: 'If-Match' })
      expect(answer.json.errors[0].detail).toBe(
        'This service requires If-Match on writes that change stored records (PATCH, PUT, DELETE, and POST to a relationship): send the ETag of your last GET of this record or relationship (or * to write whatever is stored)',
      )
    }
  })

  it('answers 428 to PATCH and DELETE of a relationship without If-Match', async () => {
    const toOne = `/api/v1/books/${ids.bookId}/relationships/book_collection`
    const toMany = `/api/v1/book_collections/${ids.collectionId}/relationships/books`
    for (const [method, path, sent] of [
      ['PATCH', toOne, { data: null }],
      ['PATCH', toMany, { data: [] }],
      ['DELETE', toMany, { data: [{ type: 'books', id: ids.bookId }] }],
    ] as const) {
      const answer = await changesNothing(strict, () => strict.request(method, path, { body: sent }))
      expectOneError(answer, 428, { header: 'If-Match' })
    }
  })

  const REQUIRED =
    'This service requires If-Match on writes that change stored records (PATCH, PUT, DELETE, and POST to a relationship): send the ETag of your last GET of this record or relationship (or * to write whatever is stored)'
  const members = (...books: string[]) => ({ data: books.map((id) => ({ type: 'books', id })) })

  it('lets POST create a record without If-Match', async () => {
    const created = await strict.request('POST', '/api/v1/book_collections', {
      body: { data: { type: 'book_collections', attributes: { name: 'New shelf' } } },
    })
    expect(created.status).toBe(201)
  })

  it('answers 428 to POST, PATCH and DELETE of a to-many relationship without If-Match, moving no book', async () => {
    const shelf = await strict.create('book_collections', { name: 'New shelf' })
    const second = await strict.create('authors', { name: 'Second author' })
    for (const [method, path] of [
      ['POST', `/api/v1/book_collections/${shelf}/relationships/books`],
      ['PATCH', `/api/v1/book_collections/${shelf}/relationships/books`],
      ['DELETE', `/api/v1/book_collections/${ids.collectionId}/relationships/books`],
      // The case: a book taken from its author by adding it to another's books.
      ['POST', `/api/v1/authors/${second}/relationships/books`],
    ] as const) {
      const answer = await changesNothing(strict, () => strict.request(method, path, { body: members(ids.bookId) }))
      expectOneError(answer, 428, { header: 'If-Match' })
      expect([method, path, answer.json.errors[0].detail]).toEqual([method, path, REQUIRED])
    }
  })

  it("answers 412 to a to-many write whose If-Match is not the relationship's current tag, moving no book", async () => {
    const second = await strict.create('authors', { name: 'Second author' })
    const path = `/api/v1/authors/${second}/relationships/books`
    const stale = etagOf(await strict.get(path))
    const other = await strict.create('books', { name: 'Joins first', author_id: Number(second) })
    const bookTag = etagOf(await strict.get(`/api/v1/books/${ids.bookId}`))
    // The tag before a member joined, and the moved book's own tag: neither is the relationship's now.
    for (const tag of [stale, bookTag]) {
      const answer = await changesNothing(strict, () =>
        strict.request('POST', path, { body: members(ids.bookId), headers: { 'if-match': tag } }),
      )
      expectOneError(answer, 412, { header: 'If-Match' })
    }
    const shelf = `/api/v1/book_collections/${ids.collectionId}/relationships/books`
    const shelfTag = etagOf(await strict.get(shelf))
    expect((await strict.request('POST', shelf, { body: members(other), headers: { 'if-match': '*' } })).status).toBe(
      200,
    )
    for (const method of ['PATCH', 'DELETE']) {
      const answer = await changesNothing(strict, () =>
        strict.request(method, shelf, { body: members(ids.bookId), headers: { 'if-match': shelfTag } }),
      )
      expectOneError(answer, 412, { header: 'If-Match' })
    }
  })

  it("lets a to-many relationship's current tag (GET's, or the last write's) keep or let go of its members", async () => {
    const shelfPath = `/api/v1/book_collections/${ids.collectionId}/relationships/books`
    const other = await strict.create('books', { name: 'Second book', author_id: Number(ids.authorId) })
    const joined = await strict.request('POST', shelfPath, { body: members(other), headers: { 'if-match': '*' } })
    expect(joined.status).toBe(200)
    const kept = await strict.request('PATCH', shelfPath, {
      body: members(other),
      headers: { 'if-match': etagOf(joined) },
    })
    expect(kept.status).toBe(200)
    const removed = await strict.request('DELETE', shelfPath, {
      body: members(other),
      headers: { 'if-match': etagOf(kept) },
    })
    expect(removed.status).toBe(200)
    expect((await strict.stored('books')).find((book) => String(book.id) === other)?.book_collection_id).toBeNull()
  })

  it("answers 428 to a to-many write that takes a record in with the relationship's tag alone: the tag does not cover that record", async () => {
    const second = await strict.create('authors', { name: 'Second author' })
    const path = `/api/v1/authors/${second}/relationships/books`
    // The case: a book taken from its author, here with the new author's current tag.
    const authorTag = etagOf(await strict.get(path))
    const moved = await changesNothing(strict, () =>
      strict.request('POST', path, { body: members(ids.bookId), headers: { 'if-match': authorTag } }),
    )
    expectOneError(moved, 428, { header: 'If-Match' })
    expect(moved.json.errors[0].detail).toBe(
      `This service requires If-Match on writes that change stored records, and the ETag of the books of author ${second} covers its members only: book ${ids.bookId} would join from elsewhere, changing its own relationship. Send If-Match: * to write whatever is stored, or PATCH it with its ETag`,
    )
    const shelf = await strict.create('book_collections', { name: 'New shelf' })
    const shelfPath = `/api/v1/book_collections/${shelf}/relationships/books`
    const shelfTag = etagOf(await strict.get(shelfPath))
    for (const method of ['POST', 'PATCH']) {
      const answer = await changesNothing(strict, () =>
        strict.request(method, shelfPath, { body: members(ids.bookId), headers: { 'if-match': shelfTag } }),
      )
      expectOneError(answer, 428, { header: 'If-Match' })
    }
    // With *, or with the book's own tag on its own relationship, it joins.
    expect(
      (await strict.request('POST', path, { body: members(ids.bookId), headers: { 'if-match': '*' } })).status,
    ).toBe(200)
    expect((await strict.stored('books'))[0]?.author_id).toBe(Number(second))
    const bookTag = etagOf(await strict.get(`/api/v1/books/${ids.bookId}`))
    const set = await strict.request('PATCH', `/api/v1/books/${ids.bookId}/relationships/book_collection`, {
      body: { data: { type: 'book_collections', id: shelf } },
      headers: { 'if-match': bookTag },
    })
    expect(set.status).toBe(200)
  })

  it('writes with If-Match, * included', async () => {
    const tag = etagOf(await strict.get(`/api/v1/books/${ids.bookId}`))
    expect((await renameBook(strict, ids.bookId, 'Guarded', { 'if-match': tag })).status).toBe(200)
    expect((await renameBook(strict, ids.bookId, 'Any', { 'if-match': '*' })).status).toBe(200)
    const deleted = await strict.request('DELETE', `/api/v1/books/${ids.bookId}`, { headers: { 'if-match': '*' } })
    expect(deleted.status).toBe(204)
  })
})

describe('REQUIRE_IF_MATCH off (the default)', () => {
  it('writes to-many relationships and atomic updates without If-Match', async () => {
    const second = await t.create('authors', { name: 'Second author' })
    const moved = await t.request('POST', `/api/v1/authors/${second}/relationships/books`, {
      body: { data: [{ type: 'books', id: lib.bookId }] },
    })
    expect(moved.status).toBe(200)
    const path = `/api/v1/book_collections/${lib.collectionId}/relationships/books`
    expect((await t.request('DELETE', path, { body: { data: [{ type: 'books', id: lib.bookId }] } })).status).toBe(200)
    expect((await t.request('PATCH', path, { body: { data: [{ type: 'books', id: lib.bookId }] } })).status).toBe(200)
    const atomic = await t.request('POST', '/api/v1/operations', {
      body: {
        'atomic:operations': [{ op: 'update', data: { type: 'books', id: lib.bookId, attributes: { name: 'Free' } } }],
      },
      headers: { 'content-type': ATOMIC, accept: ATOMIC },
    })
    expect(atomic.status).toBe(200)
    expect(await t.stored('books')).toEqual([
      { id: Number(lib.bookId), name: 'Free', author_id: Number(second), book_collection_id: Number(lib.collectionId) },
    ])
  })
})

// Answers over 64 KB are streamed: their bytes are not known when the headers go, so they carry a
// weak tag made from the store's version read before them (docs/caching.md).
describe('streamed answers (over 64 KB)', () => {
  let big: TestApp
  beforeAll(async () => {
    big = await openTestApp({ readWorkers: 1 })
    await insertCatalogue(big, {
      authors: ['Prolific', 'Other'],
      collections: [],
      books: 2000,
      authorOf: (i) => (i % 10 === 9 ? 2 : 1),
      collectionOf: () => null,
    })
  })
  afterAll(() => big.close())

  async function streamedTag(path: string): Promise<string> {
    const answer = await big.get(path)
    expect(answer.status).toBe(200)
    expect(answer.text.length).toBeGreaterThan(64 * 1024)
    return etagOf(answer)
  }

  it('carry a weak ETag, and answer 304 to it while nothing is written', async () => {
    for (const path of ['/api/v1/books', '/api/v1/books?sort=-name', '/api/v1/authors/1', '/api/v1/authors/1/books']) {
      const tag = await streamedTag(path)
      expect(tag).toMatch(WEAK)
      expect(await streamedTag(path)).toBe(tag)
      expectNotModified(await big.get(path, { 'if-none-match': tag }), tag)
    }
  })

  it('answer 304 to a current weak tag before reading anything', async () => {
    // The real store, counting its reads; no read workers, so that every read passes through it.
    const store = await big.openStore()
    const reads: string[] = []
    const counted = new Proxy(store, {
      get(target, key) {
        const value = Reflect.get(target, key)
        if (typeof value !== 'function') return value
        return (...args: unknown[]) => {
          if (key !== 'version') reads.push(String(key))
          return value.apply(target, args)
        }
      },
    }) as Store
    const app = createApp({ store: counted, logger: createLogger('silent') })
    const get = (headers: Record<string, string> = {}) =>
      app.handle(new Request('http://localhost/api/v1/books', { headers: { accept: JSON_API, ...headers } }))
    try {
      const first = await get()
      const tag = first.headers.get('etag') as string
      expect(tag).toMatch(WEAK)
      expect((await first.text()).length).toBeGreaterThan(64 * 1024)
      reads.length = 0
      const again = await get({ 'if-none-match': tag })
      expect(again.status).toBe(304)
      expect(reads).toEqual([])
    } finally {
      await store.close()
    }
  })

  it("answer 304 to a tag another worker or instance gave: the tag is the database's, not the process's", async () => {
    // A second app on its own store of the same database, as another worker of --workers or another
    // instance on one PostgreSQL would be.
    const store = await big.openStore()
    const other = createApp({ store, logger: createLogger('silent') })
    const getOther = (path: string, headers: Record<string, string> = {}) =>
      other.handle(new Request(`http://localhost${path}`, { headers: { accept: JSON_API, ...headers } }))
    try {
      for (const path of ['/api/v1/books', '/api/v1/authors/1']) {
        const tag = await streamedTag(path)
        const there = await getOther(path, { 'if-none-match': tag })
        expect(there.status).toBe(304)
        expect(there.headers.get('etag')).toBe(tag)
        // And the other way round. (Its body is not read: cancelled, so that it holds no long-answer slot.)
        const answer = await getOther(path)
        await answer.body?.cancel()
        const its = answer.headers.get('etag') as string
        expect(its).toBe(tag)
        expectNotModified(await big.get(path, { 'if-none-match': its }), its)
      }
      // A write through either changes the tag both give.
      const tag = await streamedTag('/api/v1/books')
      await store.update(resources.get('books'), 9, { attributes: { name: 'Changed there' }, toOne: {} })
      expect((await big.get('/api/v1/books', { 'if-none-match': tag })).status).toBe(200)
      expect((await getOther('/api/v1/books', { 'if-none-match': tag })).status).toBe(200)
    } finally {
      await store.close()
    }
  })

  it('carry a tag of their own URL, which another list does not answer 304 to', async () => {
    const tag = await streamedTag('/api/v1/books')
    const other = await big.get('/api/v1/books?sort=name', { 'if-none-match': tag })
    expect(other.status).toBe(200)
    expect(etagOf(other)).not.toBe(tag)
  })

  it('get a new tag once anything is written through the API', async () => {
    const tag = await streamedTag('/api/v1/books')
    expect((await renameBook(big, '5', 'Renamed')).status).toBe(200)
    const answer = await big.get('/api/v1/books', { 'if-none-match': tag })
    expect(answer.status).toBe(200)
    expect(answer.json.data[4].attributes.name).toBe('Renamed')
    expect(etagOf(answer)).not.toBe(tag)
  })

  it('get a new tag once another process writes to the database', async () => {
    const tag = await streamedTag('/api/v1/books')
    const other = await big.openStore()
    try {
      await other.update(resources.get('books'), 7, { attributes: { name: 'Written elsewhere' }, toOne: {} })
    } finally {
      await other.close()
    }
    const answer = await big.get('/api/v1/books', { 'if-none-match': tag })
    expect(answer.status).toBe(200)
    expect(answer.json.data[6].attributes.name).toBe('Written elsewhere')
  })

  it('never satisfy If-Match: a weak tag does not stand for one state of the record', async () => {
    const tag = await streamedTag('/api/v1/authors/1')
    const answer = await changesNothing(big, () =>
      big.request('PATCH', '/api/v1/authors/1', {
        body: { data: { type: 'authors', id: '1', attributes: { name: 'Renamed' } } },
        headers: { 'if-match': tag },
      }),
    )
    expectOneError(answer, 412, { header: 'If-Match' })
    // A small representation of the same author has a strong tag that does.
    const small = etagOf(await big.get('/api/v1/authors/1?include=&fields[authors]=name'))
    expect(small).toMatch(STRONG)
    const written = await big.request('PATCH', '/api/v1/authors/1', {
      body: { data: { type: 'authors', id: '1', attributes: { name: 'Renamed' } } },
      headers: { 'if-match': small },
    })
    expect(written.status).toBe(200)
  })
})

describe('a page over 64 KB', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await openTestApp({ readWorkers: 1 })
    const author = await t.create('authors', { name: 'Verbose' })
    for (let i = 0; i < 100; i++) {
      await t.create(
        'books',
        { name: `${i} ${'a long title '.repeat(70)}` },
        {
          author: { data: { type: 'authors', id: author } },
        },
      )
    }
  })
  afterAll(() => t.close())

  it('is streamed with a weak tag when MAX_PAGE_SIZE allows more than 1,000 records', async () => {
    const large = await openTestApp({ readWorkers: 1, maxPageSize: 5000 })
    try {
      await insertCatalogue(large, {
        authors: ['Prolific'],
        collections: [],
        books: 1200,
        authorOf: () => 1,
        collectionOf: () => null,
      })
      const answer = await large.get('/api/v1/books?page[size]=1200')
      expect(answer.status).toBe(200)
      expect(answer.json.data).toHaveLength(1200)
      const tag = etagOf(answer)
      expect(tag).toMatch(WEAK)
      expectNotModified(await large.get('/api/v1/books?page[size]=1200', { 'if-none-match': tag }), tag)
    } finally {
      await large.close()
    }
  })

  it('is answered whole with a strong tag of its bytes, since its size is bounded, and answers 304 to it', async () => {
    for (const path of ['/api/v1/books?page[size]=100', '/api/v1/books?page[size]=100&include=author&sort=-name']) {
      const answer = await t.get(path)
      expect(answer.status).toBe(200)
      expect(answer.text.length).toBeGreaterThan(64 * 1024)
      expect(answer.json.data).toHaveLength(100)
      const tag = etagOf(answer)
      expect(tag).toMatch(STRONG)
      expectNotModified(await t.get(path, { 'if-none-match': tag }), tag)
    }
  })
})
