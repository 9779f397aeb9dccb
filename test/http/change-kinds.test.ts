import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { atomic, changesAfter, described, latestChange } from '../support/change-feed'
import { type Answer, openTestApp, type TestApp } from '../support/harness'

// What a change is (FEED-SPEC, "What a change is"): one record created, updated or deleted; a book
// moved by any way there is, an update of that book alone; an atomic batch's changes together and in
// its order; a refused write nowhere. Each test remembers meta.latest, writes, and reads what follows.

let t: TestApp
let mark: string | null
let le: string
let tolkien: string
let earthsea: string
let middleEarth: string
let wizard: string
let tombs: string
let hobbit: string

beforeEach(async () => {
  t = await openTestApp()
  le = await t.create('authors', { name: 'Ursula K. Le Guin' })
  tolkien = await t.create('authors', { name: 'J.R.R. Tolkien' })
  earthsea = await t.create('book_collections', { name: 'Earthsea' })
  middleEarth = await t.create('book_collections', { name: 'Middle-earth' })
  wizard = await t.create('books', { name: 'A Wizard of Earthsea', author_id: le, book_collection_id: earthsea })
  tombs = await t.create('books', { name: 'The Tombs of Atuan', author_id: le, book_collection_id: earthsea })
  hobbit = await t.create('books', { name: 'The Hobbit', author_id: tolkien })
  mark = await latestChange(t)
})
afterEach(() => t.close())

/** The changes made since the test's mark, as `update books/3`. */
async function since(): Promise<string[]> {
  return (await changesAfter(t, mark)).map(described)
}

/** Sends a write, expects its status, and returns the changes it made (moving the mark past them). */
async function changesOf(write: Promise<Answer>, status: number): Promise<string[]> {
  const answer = await write
  expect({ status: answer.status, body: answer.text }).toMatchObject({ status })
  const changes = await since()
  mark = await latestChange(t)
  return changes
}

const patch = (type: string, id: string, attributes: Record<string, unknown>) =>
  t.request('PATCH', `/api/v1/${type}/${id}`, { body: { data: { type, id, attributes } } })
const linkage = (type: string, ...ids: string[]) => ({ data: ids.map((id) => ({ type, id })) })
const sorted = (list: string[]) => [...list].sort()

describe('a change', () => {
  it('is one create, update or delete of one record of any type, in the order they were made', async () => {
    const author = await t.create('authors', { name: 'Italo Calvino' })
    const collection = await t.create('book_collections', { name: 'Cities' })
    const book = await t.create('books', { name: 'Invisible Cities', author_id: author })
    expect((await patch('authors', author, { name: 'Calvino' })).status).toBe(200)
    expect((await patch('book_collections', collection, { name: 'Le città' })).status).toBe(200)
    expect((await patch('books', book, { name: 'Le città invisibili' })).status).toBe(200)
    for (const path of [`books/${book}`, `book_collections/${collection}`, `authors/${author}`]) {
      expect((await t.request('DELETE', `/api/v1/${path}`)).status).toBe(204)
    }
    expect(await since()).toEqual([
      `create authors/${author}`,
      `create book_collections/${collection}`,
      `create books/${book}`,
      `update authors/${author}`,
      `update book_collections/${collection}`,
      `update books/${book}`,
      `delete books/${book}`,
      `delete book_collections/${collection}`,
      `delete authors/${author}`,
    ])
  })

  it('of a created book with relationships is the create of the book alone', async () => {
    const book = await t.create('books', { name: 'The Farthest Shore', author_id: le, book_collection_id: earthsea })
    expect(await since()).toEqual([`create books/${book}`])
  })
})

describe('a book that moves to another author or collection is an update of that book alone', () => {
  it('moved by PATCH of its attributes author_id and book_collection_id', async () => {
    expect(await changesOf(patch('books', hobbit, { author_id: le }), 200)).toEqual([`update books/${hobbit}`])
    expect(await changesOf(patch('books', hobbit, { book_collection_id: middleEarth }), 200)).toEqual([
      `update books/${hobbit}`,
    ])
    expect(await changesOf(patch('books', wizard, { book_collection_id: null }), 200)).toEqual([
      `update books/${wizard}`,
    ])
  })

  it('moved by its relationship endpoints', async () => {
    const author = t.request('PATCH', `/api/v1/books/${hobbit}/relationships/author`, {
      body: { data: { type: 'authors', id: le } },
    })
    expect(await changesOf(author, 200)).toEqual([`update books/${hobbit}`])
    const collection = t.request('PATCH', `/api/v1/books/${wizard}/relationships/book_collection`, {
      body: { data: { type: 'book_collections', id: middleEarth } },
    })
    expect(await changesOf(collection, 200)).toEqual([`update books/${wizard}`])
    const none = t.request('PATCH', `/api/v1/books/${tombs}/relationships/book_collection`, { body: { data: null } })
    expect(await changesOf(none, 200)).toEqual([`update books/${tombs}`])
  })

  it("moved by POST to an author's books", async () => {
    const moved = t.request('POST', `/api/v1/authors/${tolkien}/relationships/books`, {
      body: linkage('books', wizard, tombs),
    })
    expect(sorted(await changesOf(moved, 200))).toEqual(sorted([`update books/${wizard}`, `update books/${tombs}`]))
  })

  it("moved by POST, DELETE and PATCH of a collection's books", async () => {
    const path = `/api/v1/book_collections/${middleEarth}/relationships/books`
    const added = t.request('POST', path, { body: linkage('books', hobbit, wizard) })
    expect(sorted(await changesOf(added, 200))).toEqual(sorted([`update books/${hobbit}`, `update books/${wizard}`]))
    const removed = t.request('DELETE', path, { body: linkage('books', hobbit) })
    expect(await changesOf(removed, 200)).toEqual([`update books/${hobbit}`])
    // Middle-earth holds the wizard: replaced by the hobbit, the one leaves and the other comes.
    const replaced = t.request('PATCH', path, { body: linkage('books', hobbit) })
    expect(sorted(await changesOf(replaced, 200))).toEqual(sorted([`update books/${hobbit}`, `update books/${wizard}`]))
    const emptied = t.request('PATCH', `/api/v1/book_collections/${earthsea}/relationships/books`, {
      body: linkage('books'),
    })
    expect(await changesOf(emptied, 200)).toEqual([`update books/${tombs}`])
  })

  it('moved by atomic operations, in the order of the operations', async () => {
    const batch = atomic(t, [
      {
        op: 'update',
        ref: { type: 'books', id: tombs, relationship: 'author' },
        data: { type: 'authors', id: tolkien },
      },
      {
        op: 'add',
        ref: { type: 'book_collections', id: middleEarth, relationship: 'books' },
        data: [{ type: 'books', id: hobbit }],
      },
      { op: 'update', data: { type: 'books', id: wizard, attributes: { book_collection_id: middleEarth } } },
      {
        op: 'remove',
        ref: { type: 'book_collections', id: middleEarth, relationship: 'books' },
        data: [{ type: 'books', id: hobbit }],
      },
    ])
    expect(await changesOf(batch, 200)).toEqual([
      `update books/${tombs}`,
      `update books/${hobbit}`,
      `update books/${wizard}`,
      `update books/${hobbit}`,
    ])
  })
})

describe('deleting a collection', () => {
  it('is its delete and an update of each book that was in it, together, before the next write', async () => {
    const deleted = await t.request('DELETE', `/api/v1/book_collections/${earthsea}`)
    expect(deleted.status).toBe(204)
    expect((await patch('books', hobbit, { name: 'There and Back Again' })).status).toBe(200)
    const changes = await since()
    expect(changes).toHaveLength(4)
    expect(sorted(changes.slice(0, 3))).toEqual(
      sorted([`delete book_collections/${earthsea}`, `update books/${wizard}`, `update books/${tombs}`]),
    )
    expect(changes[3]).toBe(`update books/${hobbit}`)
  })
})

describe('an atomic batch', () => {
  it('has its changes together and in its order, among writes sent at the same time', async () => {
    const batch = atomic(t, [
      { op: 'add', data: { type: 'authors', lid: 'g', attributes: { name: 'Gene Wolfe' } } },
      {
        op: 'add',
        data: {
          type: 'books',
          attributes: { name: 'The Shadow of the Torturer' },
          relationships: { author: { data: { type: 'authors', lid: 'g' } } },
        },
      },
      { op: 'update', data: { type: 'books', id: hobbit, attributes: { name: 'The Hobbit, revised' } } },
      { op: 'remove', ref: { type: 'books', id: tombs } },
      { op: 'update', data: { type: 'book_collections', id: earthsea, attributes: { name: 'The Earthsea Cycle' } } },
    ])
    const singles = [
      patch('authors', le, { name: 'Le Guin' }),
      patch('authors', tolkien, { name: 'Tolkien' }),
      patch('book_collections', middleEarth, { name: 'Arda' }),
      patch('books', wizard, { name: 'Wizard' }),
    ]
    const [answer, ...others] = await Promise.all([batch, ...singles])
    expect(answer.status).toBe(200)
    for (const other of others) expect(other.status).toBe(200)
    const [author, book] = answer.json['atomic:results'].map((result: { data?: { id: string } }) => result.data?.id)
    const inOrder = [
      `create authors/${author}`,
      `create books/${book}`,
      `update books/${hobbit}`,
      `delete books/${tombs}`,
      `update book_collections/${earthsea}`,
    ]
    const changes = await since()
    expect(changes).toHaveLength(9)
    const start = changes.indexOf(`create authors/${author}`)
    expect(changes.slice(start, start + 5)).toEqual(inOrder)
    expect(sorted([...changes.slice(0, start), ...changes.slice(start + 5)])).toEqual(
      sorted([
        `update authors/${le}`,
        `update authors/${tolkien}`,
        `update book_collections/${middleEarth}`,
        `update books/${wizard}`,
      ]),
    )
  })
})

describe('a refused write', () => {
  it('appears nowhere: 422, 409, 403, 404 and a failed atomic batch leave the feed as it was', async () => {
    const refused: [Promise<Answer>, number][] = [
      [t.post('/api/v1/books', { data: { type: 'books', attributes: { name: '', author_id: le } } }), 422],
      [patch('books', hobbit, { author_id: '999' }), 422],
      [t.request('DELETE', `/api/v1/authors/${le}`), 409],
      [t.request('DELETE', `/api/v1/authors/${le}/relationships/books`, { body: linkage('books', wizard) }), 403],
      [
        t.request('POST', `/api/v1/book_collections/${middleEarth}/relationships/books`, {
          body: linkage('books', hobbit, '999'),
        }),
        404,
      ],
      [
        atomic(t, [
          { op: 'update', data: { type: 'books', id: hobbit, attributes: { name: 'Never stored' } } },
          { op: 'add', data: { type: 'book_collections', attributes: { name: 'Never stored' } } },
          { op: 'remove', ref: { type: 'authors', id: tolkien } },
        ]),
        409,
      ],
    ]
    for (const [write, status] of refused) {
      const answer = await write
      expect({ status: answer.status, body: answer.text }).toMatchObject({ status })
    }
    expect(await since()).toEqual([])
    expect(await latestChange(t)).toBe(mark)
    expect((await patch('books', hobbit, { name: 'The Hobbit (1937)' })).status).toBe(200)
    expect(await since()).toEqual([`update books/${hobbit}`])
  })
})
