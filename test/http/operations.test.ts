import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { changesNothing } from '../support/expectations'
import { openTestApp, type TestApp } from '../support/harness'

const ATOMIC = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'

let t: TestApp
beforeEach(async () => {
  t = await openTestApp({ maxOperations: 5 })
})
afterEach(() => t.close())

/** POST /api/v1/operations with the atomic media type, unless headers say otherwise. */
function operations(list: unknown, headers: Record<string, string> = {}) {
  return t.request('POST', '/api/v1/operations', {
    body: { 'atomic:operations': list },
    headers: { 'content-type': ATOMIC, accept: ATOMIC, ...headers },
  })
}

const addAuthor = (name: string, lid = 'a') => ({ op: 'add', data: { type: 'authors', lid, attributes: { name } } })
const addBook = (name: string, author: Record<string, string>) => ({
  op: 'add',
  data: { type: 'books', attributes: { name }, relationships: { author: { data: { type: 'authors', ...author } } } },
})

describe('POST /api/v1/operations', () => {
  it('creates an author and two books that name it by lid, in one request, results in order', async () => {
    const answer = await operations([
      addAuthor('Ursula K. Le Guin'),
      addBook('A Wizard of Earthsea', { lid: 'a' }),
      addBook('The Tombs of Atuan', { lid: 'a' }),
    ])
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toBe(`${ATOMIC}; charset=utf-8`)
    const [author, first, second] = answer.json['atomic:results']
    expect(author.data).toMatchObject({ type: 'authors', attributes: { name: 'Ursula K. Le Guin' } })
    expect(first.data).toMatchObject({ type: 'books', attributes: { name: 'A Wizard of Earthsea' } })
    expect(second.data.attributes.name).toBe('The Tombs of Atuan')
    const books = (await t.get(`/api/v1/authors/${author.data.id}/books`)).json.data
    expect(books.map((b: { id: string }) => b.id)).toEqual([first.data.id, second.data.id])
  })

  it('stores nothing when a later operation fails, and points the error at it', async () => {
    await t.create('authors', { name: 'Existing' })
    const answer = await changesNothing(t, () =>
      operations([addAuthor('Kept?'), addBook('Orphan', { id: '999' }), addBook('Never', { lid: 'a' })]),
    )
    expect(answer.status).toBe(422)
    expect(answer.json.errors).toEqual([
      {
        title: 'Unprocessable Entity',
        detail: 'Author must exist',
        source: { parameter: 'author', pointer: '/atomic:operations/1/data/attributes/author' },
      },
    ])
  })

  it('refuses a batch whose operation fails validation before touching anything', async () => {
    const answer = await changesNothing(t, () =>
      operations([
        addAuthor('Fine'),
        addBook('Fine too', { lid: 'a' }),
        { op: 'add', data: { type: 'authors', attributes: { name: ' ' } } },
      ]),
    )
    expect(answer.status).toBe(422)
    expect(answer.json.errors[0]).toMatchObject({
      detail: "Name can't be blank",
      source: { parameter: 'name', pointer: '/atomic:operations/2/data/attributes/name' },
    })
  })

  it('updates by ref or by data.id, and removes by ref', async () => {
    const author = await t.create('authors', { name: 'Old' })
    const book = await t.create('books', { name: 'Gone', author_id: author })
    const answer = await operations([
      {
        op: 'update',
        ref: { type: 'authors', id: author },
        data: { type: 'authors', id: author, attributes: { name: 'New' } },
      },
      { op: 'update', data: { type: 'authors', id: author, attributes: { name: 'Newer' } } },
      { op: 'remove', ref: { type: 'books', id: book } },
    ])
    expect(answer.status).toBe(200)
    expect(answer.json['atomic:results'][1].data.attributes.name).toBe('Newer')
    expect(answer.json['atomic:results'][2]).toEqual({})
    expect(await t.stored('authors')).toEqual([{ id: Number(author), name: 'Newer' }])
    expect(await t.stored('books')).toEqual([])
  })

  it('changes relationships: a to-one by lid, a to-many by add', async () => {
    const author = await t.create('authors', { name: 'First' })
    const book = await t.create('books', { name: 'Moving', author_id: author })
    const collection = await t.create('book_collections', { name: 'Shelf' })
    const answer = await operations([
      addAuthor('Second', 'second'),
      {
        op: 'update',
        ref: { type: 'books', id: book, relationship: 'author' },
        data: { type: 'authors', lid: 'second' },
      },
      {
        op: 'add',
        ref: { type: 'book_collections', id: collection, relationship: 'books' },
        data: [{ type: 'books', id: book }],
      },
    ])
    expect(answer.status).toBe(200)
    const second = answer.json['atomic:results'][0].data.id
    expect(await t.stored('books')).toEqual([
      { id: Number(book), name: 'Moving', author_id: Number(second), book_collection_id: Number(collection) },
    ])
  })

  it('answers 404, 409 and 403 for an operation that cannot be done, and stores nothing', async () => {
    const author = await t.create('authors', { name: 'Busy' })
    await t.create('books', { name: 'Keeps them busy', author_id: author })
    const cases: [unknown, number, string][] = [
      [{ op: 'remove', ref: { type: 'authors', id: '999' } }, 404, '/atomic:operations/1'],
      [{ op: 'remove', ref: { type: 'authors', id: author } }, 409, '/atomic:operations/1'],
      [
        { op: 'remove', ref: { type: 'authors', id: author, relationship: 'books' }, data: [] },
        403,
        '/atomic:operations/1/op',
      ],
      [
        { op: 'update', data: { type: 'books', lid: 'nobody', attributes: { name: 'x' } } },
        400,
        '/atomic:operations/1',
      ],
    ]
    for (const [operation, status, pointer] of cases) {
      const answer = await changesNothing(t, () => operations([addAuthor('Not stored'), operation]))
      expect(answer.status).toBe(status)
      expect(answer.json.errors[0].source.pointer).toBe(pointer)
    }
  })

  it('refuses malformed documents and operations with 400', async () => {
    const cases: [unknown, string][] = [
      [[], '/atomic:operations'],
      ['not a list', '/atomic:operations'],
      [[{ op: 'upsert', data: { type: 'authors' } }], '/atomic:operations/0/op'],
      [[{ op: 'add', data: { type: 'people', attributes: {} } }], '/atomic:operations/0/data/type'],
      [
        [{ op: 'add', href: '/api/v1/authors', data: { type: 'authors', attributes: { name: 'x' } } }],
        '/atomic:operations/0/href',
      ],
      [[{ op: 'remove' }], '/atomic:operations/0/ref'],
    ]
    for (const [list, pointer] of cases) {
      const answer = await changesNothing(t, () => operations(list))
      expect(answer.status).toBe(400)
      expect(answer.json.errors[0].source.pointer).toBe(pointer)
    }
  })

  it('answers 400, not a server error, for a type, relationship or id that is an array nested 100,000 deep', async () => {
    const book = await t.create('books', { name: 'B', author_id: await t.create('authors', { name: 'A' }) })
    // Built as text: the document would be too deep for JSON.stringify.
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`
    const cases: [string, string][] = [
      [`{"op":"add","data":{"type":${deep},"attributes":{"name":"x"}}}`, '/atomic:operations/0/data/type'],
      [`{"op":"remove","ref":{"type":${deep},"id":"1"}}`, '/atomic:operations/0/ref/type'],
      [
        `{"op":"update","ref":{"type":"books","id":"${book}","relationship":${deep}},"data":null}`,
        '/atomic:operations/0/ref/relationship',
      ],
      [`{"op":"remove","ref":{"type":"books","id":${deep}}}`, '/atomic:operations/0/ref'],
      [
        `{"op":"update","ref":{"type":"books","id":${deep}},"data":{"type":"books","attributes":{"name":"x"}}}`,
        '/atomic:operations/0/ref',
      ],
      [
        `{"op":"update","ref":{"type":"books","id":"${book}","relationship":"author"},"data":{"type":"authors","id":${deep}}}`,
        '/atomic:operations/0/data',
      ],
    ]
    for (const [operation, pointer] of cases) {
      const answer = await changesNothing(t, () =>
        t.send('POST', '/api/v1/operations', {
          body: `{"atomic:operations":[${operation}]}`,
          headers: { 'content-type': ATOMIC, accept: ATOMIC },
        }),
      )
      expect([answer.status, answer.json.errors[0].source.pointer]).toEqual([400, pointer])
    }
  })

  it('refuses an author named both by id and by lid with 409, and a lid used twice with 400', async () => {
    const existing = await t.create('authors', { name: 'Existing' })
    const both = {
      op: 'add',
      data: {
        type: 'books',
        attributes: { name: 'Torn', author_id: existing },
        relationships: { author: { data: { type: 'authors', lid: 'a' } } },
      },
    }
    const conflict = await changesNothing(t, () => operations([addAuthor('New'), both]))
    expect(conflict.status).toBe(409)
    expect(conflict.json.errors[0].source.pointer).toBe('/atomic:operations/1/data/relationships/author')
    const twice = await changesNothing(t, () => operations([addAuthor('One', 'x'), addAuthor('Two', 'x')]))
    expect(twice.status).toBe(400)
    expect(twice.json.errors[0].source.pointer).toBe('/atomic:operations/1/data/lid')
  })

  it('refuses a ref or data that names no record at all, and a document that also has data', async () => {
    for (const operation of [
      { op: 'remove', ref: { type: 'authors' } },
      { op: 'update', data: { type: 'authors', attributes: { name: 'x' } } },
    ]) {
      const answer = await changesNothing(t, () => operations([operation]))
      expect(answer.status).toBe(400)
      expect(answer.json.errors[0].detail).toBe('A resource identifier needs an id or a lid')
    }
    const withData = await changesNothing(t, () =>
      t.request('POST', '/api/v1/operations', {
        body: { 'atomic:operations': [addAuthor('x')], data: {} },
        headers: { 'content-type': ATOMIC, accept: ATOMIC },
      }),
    )
    expect(withData.status).toBe(400)
    expect(withData.json.errors[0].source.pointer).toBe('/data')
  })

  it('answers {} for a relationship operation, and data for a record operation', async () => {
    const author = await t.create('authors', { name: 'A' })
    const book = await t.create('books', { name: 'B', author_id: author })
    const answer = await operations([
      { op: 'update', ref: { type: 'books', id: book, relationship: 'book_collection' }, data: null },
      { op: 'update', data: { type: 'books', id: book, attributes: { name: 'C' } } },
    ])
    expect(answer.json['atomic:results'][0]).toEqual({})
    expect(answer.json['atomic:results'][1].data.attributes).toEqual({ name: 'C' })
  })

  it('takes at most the configured number of operations', async () => {
    const six = Array.from({ length: 6 }, (_, i) => addAuthor(`Author ${i}`, `a${i}`))
    const answer = await changesNothing(t, () => operations(six))
    expect(answer.status).toBe(400)
    expect(answer.json.errors[0].detail).toContain('at most 5 operations')
    expect((await operations(six.slice(0, 5))).status).toBe(200)
  })

  it('needs the atomic extension in Content-Type (415) and, where Accept names JSON:API, in Accept (406)', async () => {
    const list = [addAuthor('Negotiated')]
    for (const type of [
      'application/vnd.api+json',
      'application/json',
      'application/vnd.api+json; ext="https://example.com/x"',
    ]) {
      expect((await changesNothing(t, () => operations(list, { 'content-type': type }))).status).toBe(415)
    }
    expect((await changesNothing(t, () => operations(list, { accept: 'application/vnd.api+json' }))).status).toBe(406)
    expect((await operations(list, { accept: '*/*' })).status).toBe(200)
  })
})
