import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { atomic, described, idAt, waitForChanges } from '../support/change-feed'
import { type Answer, openTestApp, type TestApp } from '../support/harness'

// What a change is (FEED-SPEC, "What a change is"): one record created, updated or deleted; a book
// moved by any way there is, an update of that book alone; an atomic batch's changes together and in
// its order; a refused write nowhere. Each test remembers where the feed is, writes, and reads what
// follows: exactly the changes it expects, once that many can be read (waitForChanges).

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
  mark = idAt(await waitForChanges(t, null, 7), -1)
})
afterEach(() => t.close())

/** The changes after the mark once `count` can be read, as `update books/3`; the mark moves past them. */
async function next(count: number): Promise<string[]> {
  const changes = await waitForChanges(t, mark, count)
  if (changes.length > 0) mark = idAt(changes, -1)
  return changes.map(described)
}

/** The next changes are exactly `expected`: in this order, or (for one statement's rows) in any. */
async function expectChanges(expected: string[], order: 'in order' | 'in any order' = 'in order'): Promise<void> {
  const changes = await next(expected.length)
  if (order === 'in order') expect(changes).toEqual(expected)
  else expect(sorted(changes)).toEqual(sorted(expected))
}

/** Sends a write and expects its status. */
async function write(sent: Promise<Answer>, status = 200): Promise<void> {
  const answer = await sent
  expect({ status: answer.status, body: answer.text }).toMatchObject({ status })
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
    await write(patch('authors', author, { name: 'Calvino' }))
    await write(patch('book_collections', collection, { name: 'Le città' }))
    await write(patch('books', book, { name: 'Le città invisibili' }))
    for (const path of [`books/${book}`, `book_collections/${collection}`, `authors/${author}`]) {
      await write(t.request('DELETE', `/api/v1/${path}`), 204)
    }
    await expectChanges([
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
    await expectChanges([`create books/${book}`])
  })
})

describe('a book that moves to another author or collection is an update of that book alone', () => {
  it('moved by PATCH of its attributes author_id and book_collection_id', async () => {
    await write(patch('books', hobbit, { author_id: le }))
    await expectChanges([`update books/${hobbit}`])
    await write(patch('books', hobbit, { book_collection_id: middleEarth }))
    await expectChanges([`update books/${hobbit}`])
    await write(patch('books', wizard, { book_collection_id: null }))
    await expectChanges([`update books/${wizard}`])
  })

  it('moved by its relationship endpoints', async () => {
    const relationship = (book: string, name: string, data: unknown) =>
      t.request('PATCH', `/api/v1/books/${book}/relationships/${name}`, { body: { data } })
    await write(relationship(hobbit, 'author', { type: 'authors', id: le }))
    await expectChanges([`update books/${hobbit}`])
    await write(relationship(wizard, 'book_collection', { type: 'book_collections', id: middleEarth }))
    await expectChanges([`update books/${wizard}`])
    await write(relationship(tombs, 'book_collection', null))
    await expectChanges([`update books/${tombs}`])
  })

  it("moved by POST to an author's books", async () => {
    await write(
      t.request('POST', `/api/v1/authors/${tolkien}/relationships/books`, { body: linkage('books', wizard, tombs) }),
    )
    await expectChanges([`update books/${wizard}`, `update books/${tombs}`], 'in any order')
  })

  it("moved by POST, DELETE and PATCH of a collection's books", async () => {
    const path = `/api/v1/book_collections/${middleEarth}/relationships/books`
    await write(t.request('POST', path, { body: linkage('books', hobbit, wizard) }))
    await expectChanges([`update books/${hobbit}`, `update books/${wizard}`], 'in any order')
    await write(t.request('DELETE', path, { body: linkage('books', hobbit) }))
    await expectChanges([`update books/${hobbit}`])
    // Middle-earth holds the wizard: replaced by the hobbit, the one leaves and the other comes.
    await write(t.request('PATCH', path, { body: linkage('books', hobbit) }))
    await expectChanges([`update books/${hobbit}`, `update books/${wizard}`], 'in any order')
    await write(
      t.request('PATCH', `/api/v1/book_collections/${earthsea}/relationships/books`, { body: linkage('books') }),
    )
    await expectChanges([`update books/${tombs}`])
  })

  it('moved by atomic operations, in the order of the operations', async () => {
    const ofCollection = { type: 'book_collections', id: middleEarth, relationship: 'books' }
    await write(
      atomic(t, [
        {
          op: 'update',
          ref: { type: 'books', id: tombs, relationship: 'author' },
          data: { type: 'authors', id: tolkien },
        },
        { op: 'add', ref: ofCollection, data: [{ type: 'books', id: hobbit }] },
        { op: 'update', data: { type: 'books', id: wizard, attributes: { book_collection_id: middleEarth } } },
        { op: 'remove', ref: ofCollection, data: [{ type: 'books', id: hobbit }] },
      ]),
    )
    await expectChanges([
      `update books/${tombs}`,
      `update books/${hobbit}`,
      `update books/${wizard}`,
      `update books/${hobbit}`,
    ])
  })
})

describe('deleting a collection', () => {
  it('is its delete and an update of each book that was in it, together, before the next write', async () => {
    await write(t.request('DELETE', `/api/v1/book_collections/${earthsea}`), 204)
    await write(patch('books', hobbit, { name: 'There and Back Again' }))
    const changes = await next(4)
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
    const changes = await next(9)
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
  it('appears nowhere: 422, 409, 403, 404 and a failed atomic batch; the next write follows what came before', async () => {
    await write(t.post('/api/v1/books', { data: { type: 'books', attributes: { name: '', author_id: le } } }), 422)
    await write(patch('books', hobbit, { author_id: '999' }), 422)
    await write(t.request('DELETE', `/api/v1/authors/${le}`), 409)
    await write(
      t.request('DELETE', `/api/v1/authors/${le}/relationships/books`, { body: linkage('books', wizard) }),
      403,
    )
    const collection = `/api/v1/book_collections/${middleEarth}/relationships/books`
    await write(t.request('POST', collection, { body: linkage('books', hobbit, '999') }), 404)
    const failed = atomic(t, [
      { op: 'update', data: { type: 'books', id: hobbit, attributes: { name: 'Never stored' } } },
      { op: 'add', data: { type: 'book_collections', attributes: { name: 'Never stored' } } },
      { op: 'remove', ref: { type: 'authors', id: tolkien } },
    ])
    await write(failed, 409)
    // A write after them all: once it can be read, anything they left would be read before it.
    await write(patch('books', hobbit, { name: 'The Hobbit (1937)' }))
    await expectChanges([`update books/${hobbit}`])
  })
})
