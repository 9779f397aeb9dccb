import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import {
  changesNothing,
  expectOneError,
  expectRecordNotFound,
  expectUnprocessable,
  snapshot,
} from '../support/expectations'
import { seedLibrary } from '../support/fixtures'
import { type Answer, openTestApp, type TestApp } from '../support/harness'

let app: TestApp
let authorId: string
let collectionId: string
let bookId: string

beforeEach(async () => {
  app = await openTestApp()
  ;({ authorId, collectionId, bookId } = await seedLibrary(app))
})

afterEach(async () => {
  await app.close()
})

/** A valid write document for each type, so that only the part under test is wrong. */
function validDocument(type: string): { data: Record<string, unknown> } {
  if (type === 'books') {
    return { data: { type: 'book', attributes: { name: 'Changed', author_id: Number(authorId) } } }
  }
  return { data: { type: type.slice(0, -1), attributes: { name: 'Changed' } } }
}

/** The writes a malformed body is sent to: a create and both kinds of update. */
const writes: [string, string, () => string][] = [
  ['POST', 'authors', () => '/api/v1/authors'],
  ['PUT', 'authors', () => `/api/v1/authors/${authorId}`],
  ['PATCH', 'books', () => `/api/v1/books/${bookId}`],
]

const JSON_API = 'application/vnd.api+json'

describe.each(writes)('%s /api/v1/%s with a body that is not JSON', (method, _type, path) => {
  const send = (body: RequestInit['body']) => app.send(method, path(), { headers: { 'content-type': JSON_API }, body })

  it('rejects text that is not JSON with 400 and changes nothing', async () => {
    expectOneError(await changesNothing(app, () => send('{"data": {"type": ')), 400, { pointer: '' })
  })

  it('rejects bytes that are not UTF-8 with 400 and changes nothing', async () => {
    const bytes = new Uint8Array([
      ...new TextEncoder().encode('{"data":{"type":"author","attributes":{"name":"'),
      0xc3,
      0x28,
      ...new TextEncoder().encode('"}}}'),
    ])
    expectOneError(await changesNothing(app, () => send(bytes)), 400, { pointer: '' })
  })

  it('rejects a lone 0xFF byte with 400 and changes nothing', async () => {
    expectOneError(await changesNothing(app, () => send(new Uint8Array([0xff]))), 400, { pointer: '' })
  })

  it('rejects an empty body with 400 and changes nothing', async () => {
    expectOneError(await changesNothing(app, () => send('')), 400, { pointer: '' })
  })

  it('rejects a body of white space with 400 and changes nothing', async () => {
    expectOneError(await changesNothing(app, () => send(' \n\t ')), 400, { pointer: '' })
  })

  it('rejects JSON nested 100 000 deep with 400, not a server error', async () => {
    expectOneError(await changesNothing(app, () => send(`${'['.repeat(100_000)}${']'.repeat(100_000)}`)), 400, {
      pointer: '',
    })
  })
})

describe.each(writes)('%s /api/v1/%s with JSON that is not a JSON:API document', (method, type, path) => {
  const send = (body: unknown) => changesNothing(app, () => app.request(method, path(), { body }))
  const data = () => validDocument(type).data

  it.each([
    ['null', 'null'],
    ['an array', '[]'],
    ['a number', '5'],
    ['a string', '"x"'],
    ['true', 'true'],
  ])('rejects %s as the whole body with 400 pointing at the document', async (_, body) => {
    expectOneError(await send(body), 400, { pointer: '' })
  })

  it.each([
    ['no data member', () => ({ meta: { note: 'no data' } })],
    ['data an array', () => ({ data: [data()] })],
    ['data null', () => ({ data: null })],
    ['data a string', () => ({ data: 'author' })],
  ])('rejects a document with %s with 400 pointing at /data', async (_, document) => {
    expectOneError(await send(document()), 400, { pointer: '/data' })
  })

  it.each([
    ['missing', undefined],
    ['a number', 5],
    ['null', null],
    ['an object', { name: 'author' }],
  ])('rejects data.type %s with 400 pointing at /data/type', async (_, value) => {
    const document = { data: { ...data(), type: value } }
    expectOneError(await send(document), 400, { pointer: '/data/type' })
  })

  it.each([
    ['an array', ['name']],
    ['a string', 'name=x'],
    ['null', null],
  ])('rejects data.attributes as %s with 400 pointing at /data/attributes', async (_, value) => {
    expectOneError(await send({ data: { ...data(), attributes: value } }), 400, { pointer: '/data/attributes' })
  })

  it('rejects data.relationships as a string with 400 pointing at /data/relationships', async () => {
    expectOneError(await send({ data: { ...data(), relationships: 'author' } }), 400, {
      pointer: '/data/relationships',
    })
  })
})

describe('data.type', () => {
  it.each([
    ['authors', 'books'],
    ['authors', 'person'],
    ['authors', 'Author'],
    ['book_collections', 'book'],
    ['book_collections', 'collection'],
    ['books', 'authors'],
    ['books', 'toString'],
  ])('POST /api/v1/%s rejects type "%s" with 409 and stores nothing', async (type, wrong) => {
    const document = validDocument(type)
    document.data.type = wrong
    const answer = await changesNothing(app, () => app.post(`/api/v1/${type}`, document))
    expectOneError(answer, 409, { pointer: '/data/type' })
  })

  it.each([['PUT'], ['PATCH']])(
    '%s /api/v1/authors/:id rejects type "books" with 409 and changes nothing',
    async (method) => {
      const answer = await changesNothing(app, () =>
        app.request(method, `/api/v1/authors/${authorId}`, {
          body: { data: { type: 'books', attributes: { name: 'X' } } },
        }),
      )
      expectOneError(answer, 409, { pointer: '/data/type' })
    },
  )

  it.each([
    ['authors', 'author'],
    ['authors', 'authors'],
    ['book_collections', 'book_collection'],
    ['book_collections', 'book_collections'],
    ['books', 'book'],
    ['books', 'books'],
  ])('POST /api/v1/%s accepts type "%s" (singular and plural)', async (type, name) => {
    const document = validDocument(type)
    document.data.type = name
    const answer = await app.post(`/api/v1/${type}`, document)
    expect(answer.status).toBe(201)
    expect(answer.json.data.type).toBe(type)
  })

  it.each([
    ['authors', 'authors'],
    ['book_collections', 'book_collection'],
    ['books', 'books'],
  ])('PATCH /api/v1/%s/:id accepts type "%s"', async (type, name) => {
    const ids: Record<string, string> = { authors: authorId, book_collections: collectionId, books: bookId }
    const answer = await app.request('PATCH', `/api/v1/${type}/${ids[type]}`, {
      body: { data: { type: name, attributes: { name: 'Renamed' } } },
    })
    expect(answer.status).toBe(200)
    expect(answer.json.data.attributes.name).toBe('Renamed')
  })
})

describe('data.id', () => {
  it.each([
    ['authors', '42'],
    ['authors', 42],
    ['book_collections', '42'],
    ['books', 42],
  ])('POST /api/v1/%s with a client-generated id %p answers 403 and stores nothing', async (type, id) => {
    const document = validDocument(type)
    document.data.id = id
    const answer = await changesNothing(app, () => app.post(`/api/v1/${type}`, document))
    expectOneError(answer, 403, { pointer: '/data/id' })
  })

  it.each([
    ['PUT', 'a different number', () => Number(authorId) + 1],
    ['PATCH', 'a different string', () => String(Number(authorId) + 1)],
    ['PUT', 'a word', () => 'abc'],
    ['PATCH', 'a huge number', () => 1e300],
  ])('%s /api/v1/authors/:id with data.id %s answers 409 and changes nothing', async (method, _, id) => {
    const answer = await changesNothing(app, () =>
      app.request(method, `/api/v1/authors/${authorId}`, {
        body: { data: { type: 'author', id: id(), attributes: { name: 'Changed' } } },
      }),
    )
    expectOneError(answer, 409, { pointer: '/data/id' })
  })

  it('PUT /api/v1/books/:id with data.id naming another existing book answers 409 and changes nothing', async () => {
    const other = await app.create('books', { name: 'The Dispossessed', author_id: Number(authorId) })
    const answer = await changesNothing(app, () =>
      app.request('PUT', `/api/v1/books/${bookId}`, {
        body: { data: { type: 'book', id: other, attributes: { name: 'X' } } },
      }),
    )
    expectOneError(answer, 409, { pointer: '/data/id' })
  })

  it.each([
    ['PUT', 'number'],
    ['PUT', 'string'],
    ['PATCH', 'number'],
    ['PATCH', 'string'],
  ])('%s /api/v1/authors/:id accepts a matching data.id given as a %s', async (method, kind) => {
    const id = kind === 'number' ? Number(authorId) : authorId
    const answer = await app.request(method, `/api/v1/authors/${authorId}`, {
      body: { data: { type: 'author', id, attributes: { name: 'Renamed' } } },
    })
    expect(answer.status).toBe(200)
    expect(await app.stored('authors')).toEqual([{ id: Number(authorId), name: 'Renamed' }])
  })
})

describe('a body over the size limit (maxBodyBytes 1000)', () => {
  let small: TestApp

  beforeEach(async () => {
    small = await openTestApp({ maxBodyBytes: 1000 })
  })

  afterEach(async () => {
    await small.close()
  })

  /** An author document of exactly `bytes` bytes. */
  const documentOf = (bytes: number) => {
    const empty = JSON.stringify({ data: { type: 'author', attributes: { name: '' } } })
    return JSON.stringify({ data: { type: 'author', attributes: { name: 'x'.repeat(bytes - empty.length) } } })
  }

  it('accepts a body of exactly the limit', async () => {
    const body = documentOf(1000)
    expect(new TextEncoder().encode(body).byteLength).toBe(1000)
    expect((await small.post('/api/v1/authors', body)).status).toBe(201)
  })

  it('rejects a body one byte over the limit with 413 and stores nothing', async () => {
    const answer = await changesNothing(small, () => small.post('/api/v1/authors', documentOf(1001)))
    expectOneError(answer, 413)
  })

  it('rejects a body far over the limit with 413 and changes nothing on PATCH', async () => {
    const id = await small.create('authors', { name: 'Octavia E. Butler' })
    const answer = await changesNothing(small, () =>
      small.request('PATCH', `/api/v1/authors/${id}`, { body: documentOf(50_000) }),
    )
    expectOneError(answer, 413)
  })

  it('rejects a Content-Length over the limit with 413 whatever the body', async () => {
    const answer = await changesNothing(small, () =>
      small.post('/api/v1/authors', documentOf(100), { 'content-length': '5000' }),
    )
    expectOneError(answer, 413)
  })

  it('rejects a streamed body without Content-Length with 413 once it passes the limit', async () => {
    const raw = await openTestApp({ maxBodyBytes: 1000 })
    try {
      const chunk = new TextEncoder().encode(' '.repeat(300))
      let sent = 0
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent === 0)
            controller.enqueue(new TextEncoder().encode('{"data":{"type":"author","attributes":{"name":"'))
          if (sent++ < 20) controller.enqueue(chunk)
          else {
            controller.enqueue(new TextEncoder().encode('"}}}'))
            controller.close()
          }
        },
      })
      const answer = await changesNothing(raw, () =>
        raw.send('POST', '/api/v1/authors', { headers: { 'content-type': JSON_API }, body }),
      )
      expectOneError(answer, 413)
    } finally {
      await raw.close()
    }
  })

  it('accepts a streamed body without Content-Length within the limit', async () => {
    const raw = await openTestApp({ maxBodyBytes: 1000 })
    try {
      const parts = ['{"data":{"type":"author",', '"attributes":{"name":"Streamed"}}}']
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          for (const part of parts) controller.enqueue(new TextEncoder().encode(part))
          controller.close()
        },
      })
      const answer = await raw.send('POST', '/api/v1/authors', { headers: { 'content-type': JSON_API }, body })
      expect(answer.status).toBe(201)
      expect(await raw.stored('authors')).toEqual([{ id: 1, name: 'Streamed' }])
    } finally {
      await raw.close()
    }
  })
})

describe('query parameters', () => {
  it.each([
    ['/api/v1/authors?foo=bar', 'foo'],
    ['/api/v1/book_collections?name=x', 'name'],
    ['/api/v1/books?authorId=1', 'authorId'],
    ['/api/v1/authors?author_id=1', 'author_id'],
    ['/api/v1/books?author_id=1&foo=bar', 'foo'],
  ])('GET %s answers 400 naming the parameter %s', async (path, parameter) => {
    expectOneError(await app.get(path), 400, { parameter })
  })

  it.each([
    ['authors', () => authorId],
    ['book_collections', () => collectionId],
    ['books', () => bookId],
  ])('GET /api/v1/%s/:id with an unknown parameter answers 400 naming it', async (type, id) => {
    expectOneError(await app.get(`/api/v1/${type}/${id()}?foo=bar`), 400, { parameter: 'foo' })
  })

  it('GET /api/v1/books with author_id repeated answers 400 naming author_id', async () => {
    expectOneError(await app.get(`/api/v1/books?author_id=${authorId}&author_id=${authorId}`), 400, {
      parameter: 'author_id',
    })
  })

  it.each([['abc'], ['-1'], ['1.5'], [''], ['0'], ['99999999999999999999']])(
    'GET /api/v1/books?author_id=%s answers 400 naming author_id',
    async (value) => {
      expectOneError(await app.get(`/api/v1/books?author_id=${value}`), 400, { parameter: 'author_id' })
    },
  )

  it('POST /api/v1/authors with an unknown parameter answers 400 naming it and stores nothing', async () => {
    const answer = await changesNothing(app, () => app.post('/api/v1/authors?foo=bar', validDocument('authors')))
    expectOneError(answer, 400, { parameter: 'foo' })
  })

  it('PATCH /api/v1/authors/:id with an unknown parameter answers 400 naming it and changes nothing', async () => {
    const answer = await changesNothing(app, () =>
      app.request('PATCH', `/api/v1/authors/${authorId}?foo=bar`, { body: validDocument('authors') }),
    )
    expectOneError(answer, 400, { parameter: 'foo' })
  })

  it('DELETE /api/v1/book_collections/:id with an unknown parameter answers 400 naming it and deletes nothing', async () => {
    const answer = await changesNothing(app, () =>
      app.request('DELETE', `/api/v1/book_collections/${collectionId}?foo=1`),
    )
    expectOneError(answer, 400, { parameter: 'foo' })
  })
})

describe('unknown routes', () => {
  it.each([
    ['GET', '/api/v1/publishers'],
    ['GET', '/api/v2/authors'],
    ['GET', '/api'],
    ['GET', '/api/v1/authors/1/extra/segments'],
    ['POST', '/api/v1/publishers'],
    ['DELETE', '/api/v1'],
  ])('%s %s answers 404 with one error object', async (method, path) => {
    const answer = await changesNothing(app, () =>
      app.request(method, path, method === 'POST' ? { body: validDocument('authors') } : {}),
    )
    expectOneError(answer, 404)
  })
})

describe('a method the path does not answer', () => {
  const allowed = (answer: Answer) =>
    (answer.headers.get('allow') ?? '')
      .split(',')
      .map((m) => m.trim())
      .sort()

  it.each([
    ['DELETE', '/api/v1/authors'],
    ['PUT', '/api/v1/book_collections'],
    ['PATCH', '/api/v1/books'],
  ])('%s %s answers 405 with Allow: GET, POST and changes nothing', async (method, path) => {
    const answer = await changesNothing(app, () => app.request(method, path, { body: validDocument('authors') }))
    expectOneError(answer, 405)
    expect(allowed(answer)).toEqual(['GET', 'POST'])
  })

  it.each([['/api/v1/authors/1'], ['/api/v1/books/1'], ['/api/v1/books/999']])(
    'POST %s answers 405 with Allow: GET, PUT, PATCH, DELETE and changes nothing',
    async (path) => {
      const answer = await changesNothing(app, () => app.post(path, validDocument('authors')))
      expectOneError(answer, 405)
      expect(allowed(answer)).toEqual(['DELETE', 'GET', 'PATCH', 'PUT'])
    },
  )
})

describe('ids that name no record', () => {
  const badIds = ['abc', '-1', '1.5', '01', '99999999999999999999', '0', '1e0', '0x1', '%20']
  const types: [string][] = [['authors'], ['book_collections'], ['books']]

  describe.each(types)('on /api/v1/%s/:id', (type) => {
    it.each(badIds.map((id) => [id]))('GET, PUT, PATCH and DELETE of id %s answer 404 {"errors":[]}', async (id) => {
      const path = `/api/v1/${type}/${id}`
      expectRecordNotFound(await app.get(path))
      for (const method of ['PUT', 'PATCH']) {
        expectRecordNotFound(await changesNothing(app, () => app.request(method, path, { body: validDocument(type) })))
      }
      expectRecordNotFound(await changesNothing(app, () => app.request('DELETE', path)))
    })

    it('GET, PUT, PATCH and DELETE of a well-formed unknown id answer 404 {"errors":[]}', async () => {
      const path = `/api/v1/${type}/999`
      expectRecordNotFound(await app.get(path))
      for (const method of ['PUT', 'PATCH']) {
        expectRecordNotFound(await changesNothing(app, () => app.request(method, path, { body: validDocument(type) })))
      }
      expectRecordNotFound(await changesNothing(app, () => app.request('DELETE', path)))
    })

    it('PATCH of an unknown id answers 404 even when the body would fail validation', async () => {
      const answer = await changesNothing(app, () =>
        app.request('PATCH', `/api/v1/${type}/999`, { body: { data: { type, attributes: { name: '' } } } }),
      )
      expectRecordNotFound(answer)
    })
  })

  it('DELETE of a record already deleted answers 404 {"errors":[]}', async () => {
    expect((await app.request('DELETE', `/api/v1/books/${bookId}`)).status).toBe(204)
    expectRecordNotFound(await changesNothing(app, () => app.request('DELETE', `/api/v1/books/${bookId}`)))
    expectRecordNotFound(await app.get(`/api/v1/books/${bookId}`))
  })
})

describe('relationships in a book document', () => {
  const bookWith = (relationships: unknown, attributes: Record<string, unknown> = {}) => ({
    data: { type: 'book', attributes: { name: 'The Dispossessed', ...attributes }, relationships },
  })
  const targets: [string, () => string][] = [
    ['POST', () => '/api/v1/books'],
    ['PATCH', () => `/api/v1/books/${bookId}`],
    ['PUT', () => `/api/v1/books/${bookId}`],
  ]

  describe.each(targets)('%s', (method, path) => {
    const send = (body: unknown) => changesNothing(app, () => app.request(method, path(), { body }))

    it.each([
      ['a number', 5],
      ['a string', 'authors/1'],
      ['null', null],
      ['an array', [{ type: 'authors', id: '1' }]],
    ])('rejects relationships.author as %s with 400 pointing at it', async (_, value) => {
      expectOneError(await send(bookWith({ author: value })), 400, { pointer: '/data/relationships/author' })
    })

    it('rejects relationships.author without data with 400 pointing at its data', async () => {
      expectOneError(await send(bookWith({ author: { links: { related: '/x' } } })), 400, {
        pointer: '/data/relationships/author/data',
      })
    })

    it.each([
      ['author', () => [{ type: 'authors', id: authorId }]],
      ['book_collection', () => []],
    ])('rejects an array as the data of to-one %s with 400', async (name, data) => {
      expectOneError(await send(bookWith({ [name]: { data: data() } })), 400, {
        pointer: `/data/relationships/${name}/data`,
      })
    })

    it.each([
      ['without an id', () => ({ type: 'authors' })],
      ['without a type', () => ({ id: authorId })],
      ['with a boolean id', () => ({ type: 'authors', id: true })],
    ])('rejects author linkage %s with 400', async (_, linkage) => {
      expectOneError(await send(bookWith({ author: { data: linkage() } })), 400, {
        pointer: '/data/relationships/author/data',
      })
    })

    it.each([
      ['author', 'books', () => bookId],
      ['author', 'book_collections', () => collectionId],
      ['book_collection', 'authors', () => authorId],
      ['book_collection', 'people', () => collectionId],
    ])('rejects %s linkage of type %s with 409', async (name, type, id) => {
      const answer = await send(bookWith({ [name]: { data: { type, id: id() } } }))
      expectOneError(answer, 409, { pointer: `/data/relationships/${name}/data/type` })
    })

    it('rejects author_id and relationships.author naming different authors with 409', async () => {
      const other = await app.create('authors', { name: 'Octavia E. Butler' })
      const answer = await send(
        bookWith({ author: { data: { type: 'authors', id: other } } }, { author_id: Number(authorId) }),
      )
      expectOneError(answer, 409, { pointer: '/data/attributes/author_id' })
    })

    it('rejects book_collection_id and relationships.book_collection naming different collections with 409', async () => {
      const other = await app.create('book_collections', { name: 'Earthsea' })
      const answer = await send(
        bookWith(
          {
            author: { data: { type: 'authors', id: authorId } },
            book_collection: { data: { type: 'book_collections', id: other } },
          },
          { book_collection_id: Number(collectionId) },
        ),
      )
      expectOneError(answer, 409, { pointer: '/data/attributes/book_collection_id' })
    })

    it('rejects book_collection_id given while relationships.book_collection is null with 409', async () => {
      const answer = await send(
        bookWith(
          { author: { data: { type: 'authors', id: authorId } }, book_collection: { data: null } },
          { book_collection_id: Number(collectionId) },
        ),
      )
      expectOneError(answer, 409, { pointer: '/data/attributes/book_collection_id' })
    })

    it('accepts author_id and relationships.author naming the same author, as a number and a string', async () => {
      const answer = await app.request(method, path(), {
        body: bookWith({ author: { data: { type: 'author', id: authorId } } }, { author_id: Number(authorId) }),
      })
      expect(answer.status).toBe(method === 'POST' ? 201 : 200)
    })
  })

  it('rejects an unknown relationship with 422 and stores nothing', async () => {
    const answer = await changesNothing(app, () =>
      app.post('/api/v1/books', bookWith({ publisher: { data: null } }, { author_id: Number(authorId) })),
    )
    expectUnprocessable(answer, [
      {
        title: 'Unprocessable Entity',
        detail: 'Publisher is not a known relationship',
        source: { parameter: 'publisher', pointer: 'data/relationships/publisher' },
      },
    ])
  })

  // Names that every plain object inherits must not pass for relationships the type has.
  it.each([
    ['POST', 'constructor', () => ({ data: { type: 'authors', id: authorId } })],
    ['POST', '__proto__', () => ({ data: null })],
    ['PATCH', 'toString', () => ({ data: null })],
  ])('%s rejects a relationship named %s like any unknown relationship, with 422', async (method, name, object) => {
    const path = method === 'POST' ? '/api/v1/books' : `/api/v1/books/${bookId}`
    // Written by hand: JSON.stringify would drop a __proto__ key.
    const body = `{"data":{"type":"book","attributes":{"name":"The Dispossessed","author_id":${authorId}},"relationships":{${JSON.stringify(name)}:${JSON.stringify(object())}}}}`
    const answer = await changesNothing(app, () => app.request(method, path, { body }))
    expect(answer.status).toBe(422)
    expect(answer.json.errors).toEqual([
      {
        title: 'Unprocessable Entity',
        detail: expect.stringMatching(/ is not a known relationship$/),
        source: { parameter: name, pointer: `data/relationships/${name}` },
      },
    ])
  })
})

describe('a to-many books relationship in an author or collection document', () => {
  const withBooks = (type: string) => ({
    data: {
      type,
      attributes: { name: 'Changed' },
      relationships: { books: { data: [{ type: 'books', id: bookId }] } },
    },
  })

  it.each([
    ['POST', 'authors', () => '/api/v1/authors'],
    ['PATCH', 'authors', () => `/api/v1/authors/${authorId}`],
    ['PUT', 'authors', () => `/api/v1/authors/${authorId}`],
    ['POST', 'book_collections', () => '/api/v1/book_collections'],
    ['PATCH', 'book_collections', () => `/api/v1/book_collections/${collectionId}`],
  ])('%s /api/v1/%s answers 403 and changes nothing', async (method, type, path) => {
    const answer = await changesNothing(app, () => app.request(method, path(), { body: withBooks(type) }))
    expectOneError(answer, 403, { pointer: '/data/relationships/books' })
  })

  it('answers 403 for an empty books list too, and leaves the books where they are', async () => {
    const before = await snapshot(app)
    const answer = await app.request('PATCH', `/api/v1/book_collections/${collectionId}`, {
      body: { data: { type: 'book_collections', relationships: { books: { data: [] } } } },
    })
    expectOneError(answer, 403, { pointer: '/data/relationships/books' })
    expect(await snapshot(app)).toEqual(before)
  })
})
