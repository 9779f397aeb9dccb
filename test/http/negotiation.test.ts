import { afterEach, beforeEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { changesNothing, expectOneError, expectRecordNotFound, RESPONSE_CONTENT_TYPE } from '../support/expectations'
import { type Answer, openTestApp, type TestApp } from '../support/harness'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

const ATOMIC = 'https://jsonapi.org/ext/atomic'
const authorDocument = (name: string) => ({ data: { type: 'author', attributes: { name } } })
const encoded = (document: unknown) => new TextEncoder().encode(JSON.stringify(document))

let app: TestApp
let authorId: string

beforeEach(async () => {
  app = await openTestApp()
  authorId = await app.create('authors', { name: 'Ursula K. Le Guin' })
})

afterEach(async () => {
  await app.close()
})

describe('Content-Type of a request body', () => {
  it.each([
    ['application/vnd.api+json'],
    ['application/json'],
    ['application/vnd.api+json; charset=utf-8'],
    ['application/json; charset=utf-8'],
    ['application/vnd.api+json; profile="https://example.com/profiles/timestamps"'],
  ])('POST with %s creates the record (201)', async (contentType) => {
    const answer = await app.post('/api/v1/authors', authorDocument('Octavia E. Butler'), {
      'content-type': contentType,
    })
    expect(answer.status).toBe(201)
    expect(answer.json.data.attributes).toEqual({ name: 'Octavia E. Butler' })
    expect(await app.stored('authors')).toHaveLength(2)
  })

  it.each([['PUT'], ['PATCH']])('%s with application/json updates the record (200)', async (method) => {
    const answer = await app.request(method, `/api/v1/authors/${authorId}`, {
      body: authorDocument('Renamed'),
      headers: { 'content-type': 'application/json' },
    })
    expect(answer.status).toBe(200)
    expect(await app.stored('authors')).toEqual([{ id: Number(authorId), name: 'Renamed' }])
  })

  const refused: [string, string][] = [
    ['another charset', 'application/vnd.api+json; charset=iso-8859-1'],
    ['an unknown parameter', 'application/vnd.api+json; foo=bar'],
    [
      'the atomic extension beside one the server lacks',
      `application/vnd.api+json; ext="${ATOMIC} https://example.com/ext/versions"`,
    ],
    ['any other extension', 'application/vnd.api+json; ext="https://example.com/ext/versions"'],
    ['text/plain', 'text/plain'],
    ['a form', 'application/x-www-form-urlencoded'],
  ]

  for (const method of ['POST', 'PUT', 'PATCH']) {
    const path = () => (method === 'POST' ? '/api/v1/authors' : `/api/v1/authors/${authorId}`)

    it.each(refused)(`${method} with %s answers 415 and changes nothing`, async (_, contentType) => {
      const answer = await changesNothing(app, () =>
        app.request(method, path(), { body: authorDocument('Changed'), headers: { 'content-type': contentType } }),
      )
      expectOneError(answer, 415, { header: 'Content-Type' })
    })

    it(`${method} without a Content-Type answers 415 and changes nothing`, async () => {
      const answer = await changesNothing(app, () =>
        app.send(method, path(), {
          headers: { accept: 'application/vnd.api+json' },
          body: encoded(authorDocument('X')),
        }),
      )
      expectOneError(answer, 415, { header: 'Content-Type' })
    })
  }
})

describe('Accept', () => {
  it('is optional: a request without it is answered with JSON:API', async () => {
    const answer = await app.send('GET', '/api/v1/authors')
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toBe(RESPONSE_CONTENT_TYPE)
    expect(answer.json.data).toHaveLength(1)
  })

  it.each([
    ['*/*'],
    ['application/json'],
    ['application/vnd.api+json'],
    ['application/vnd.api+json; profile="https://example.com/p"'],
    [`application/vnd.api+json; ext="${ATOMIC}", application/vnd.api+json`],
    ['application/vnd.api+json; foo=bar, application/json;q=0.5'],
    ['text/html, application/xhtml+xml, */*;q=0.8'],
  ])('GET with Accept %s answers 200 with JSON:API', async (accept) => {
    const answer = await app.get('/api/v1/authors', { accept })
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toBe(RESPONSE_CONTENT_TYPE)
  })

  it.each([
    ['only an extension the server lacks', 'application/vnd.api+json; ext="https://example.com/ext/versions"'],
    ['only an unknown parameter', 'application/vnd.api+json; foo=bar'],
    [
      'only unsupported parameters in every instance',
      'application/vnd.api+json; foo=bar, application/vnd.api+json; ext="https://example.com/ext/versions"',
    ],
  ])('GET with JSON:API listed with %s answers 406', async (_, accept) => {
    const answer = await app.get('/api/v1/authors', { accept })
    expectOneError(answer, 406, { header: 'Accept' })
  })

  it('refuses an unacceptable POST with 406 before storing anything', async () => {
    const answer = await changesNothing(app, () =>
      app.post('/api/v1/authors', authorDocument('Never stored'), { accept: 'application/vnd.api+json; foo=bar' }),
    )
    expectOneError(answer, 406, { header: 'Accept' })
  })
})

describe('response Content-Type', () => {
  const cases: [string, () => Promise<Answer>, number][] = [
    ['a list', () => app.get('/api/v1/authors'), 200],
    ['a filtered list', () => app.get(`/api/v1/books?author_id=${authorId}`), 200],
    ['a single record', () => app.get(`/api/v1/authors/${authorId}`), 200],
    [
      'a create',
      () =>
        app.post('/api/v1/book_collections', { data: { type: 'book_collection', attributes: { name: 'Hainish' } } }),
      201,
    ],
    [
      'an update',
      () => app.request('PATCH', `/api/v1/authors/${authorId}`, { body: authorDocument('U. K. Le Guin') }),
      200,
    ],
    ['a malformed body (400)', () => app.post('/api/v1/authors', '{not json'), 400],
    ['an unknown query parameter (400)', () => app.get('/api/v1/authors?foo=bar'), 400],
    [
      'a client-generated id (403)',
      () => app.post('/api/v1/authors', { data: { type: 'author', id: '7', attributes: { name: 'x' } } }),
      403,
    ],
    ['an unknown record (404)', () => app.get('/api/v1/authors/999'), 404],
    ['an unknown route (404)', () => app.get('/api/v1/publishers'), 404],
    ['a path outside the API (404)', () => app.get('/favicon.ico'), 404],
    ['the index (GET /)', () => app.get('/'), 200],
    ['a wrong method (405)', () => app.request('DELETE', '/api/v1/authors'), 405],
    [
      'an unacceptable Accept (406)',
      () => app.get('/api/v1/authors', { accept: 'application/vnd.api+json; foo=bar' }),
      406,
    ],
    [
      'a type mismatch (409)',
      () => app.post('/api/v1/authors', { data: { type: 'books', attributes: { name: 'x' } } }),
      409,
    ],
    [
      'an author who still has books (409)',
      async () => {
        await app.create('books', { name: 'The Dispossessed', author_id: Number(authorId) })
        return app.request('DELETE', `/api/v1/authors/${authorId}`)
      },
      409,
    ],
    [
      'an unsupported media type (415)',
      () => app.post('/api/v1/authors', 'name=x', { 'content-type': 'text/plain' }),
      415,
    ],
    ['a validation failure (422)', () => app.post('/api/v1/authors', authorDocument('')), 422],
  ]

  it.each(cases)('is exactly application/vnd.api+json; charset=utf-8 for %s', async (_, act, status) => {
    const answer = await act()
    expect(answer.status).toBe(status)
    expect(answer.text).not.toBe('')
    expect(answer.headers.get('content-type')).toBe(RESPONSE_CONTENT_TYPE)
  })

  it('is exactly application/vnd.api+json; charset=utf-8 for a 413', async () => {
    const small = await openTestApp({ maxBodyBytes: 100 })
    try {
      const answer = await small.post('/api/v1/authors', authorDocument('x'.repeat(200)))
      expect(answer.status).toBe(413)
      expect(answer.headers.get('content-type')).toBe(RESPONSE_CONTENT_TYPE)
    } finally {
      await small.close()
    }
  })

  it('is exactly application/vnd.api+json; charset=utf-8 for a list streamed in batches', async () => {
    const body = JSON.stringify(authorDocument('x'))
    for (let i = 0; i < 1001; i++) await app.post('/api/v1/authors', body)
    const answer = await app.get('/api/v1/authors')
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toBe(RESPONSE_CONTENT_TYPE)
    expect(answer.json.data).toHaveLength(1002)
  })

  it('is exactly application/vnd.api+json; charset=utf-8 for a 404 on PUT, PATCH and DELETE', async () => {
    for (const method of ['PUT', 'PATCH', 'DELETE']) {
      const body = method === 'DELETE' ? undefined : authorDocument('x')
      expectRecordNotFound(await app.request(method, '/api/v1/authors/999', { body }))
    }
  })

  it('does not apply to a 204, which has no body', async () => {
    const id = await app.create('book_collections', { name: 'Earthsea' })
    const answer = await app.request('DELETE', `/api/v1/book_collections/${id}`)
    expect(answer.status).toBe(204)
    expect(answer.text).toBe('')
    expect(await app.stored('book_collections')).toEqual([])
  })
})

describe('X-Request-Id', () => {
  const plain = /^[A-Za-z0-9._:@/+=-]{1,128}$/

  it('is generated when the client sends none, and differs between requests', async () => {
    const first = await app.get('/api/v1/authors')
    const second = await app.get('/api/v1/authors')
    const firstId = first.headers.get('x-request-id')
    const secondId = second.headers.get('x-request-id')
    expect(firstId).toMatch(plain)
    expect(secondId).toMatch(plain)
    expect(firstId).not.toBe(secondId)
  })

  it.each([
    ['a list', () => app.get('/api/v1/authors', { 'x-request-id': 'req-42.abc' })],
    ['an unknown record', () => app.get('/api/v1/authors/999', { 'x-request-id': 'req-42.abc' })],
    ['an unknown route', () => app.get('/api/v1/nowhere', { 'x-request-id': 'req-42.abc' })],
    [
      'a 406',
      () => app.get('/api/v1/authors', { 'x-request-id': 'req-42.abc', accept: 'application/vnd.api+json; a=b' }),
    ],
    ['a 415', () => app.post('/api/v1/authors', 'x', { 'x-request-id': 'req-42.abc', 'content-type': 'text/plain' })],
    ['a 422', () => app.post('/api/v1/authors', authorDocument(' '), { 'x-request-id': 'req-42.abc' })],
    ['a create', () => app.post('/api/v1/authors', authorDocument('Joanna Russ'), { 'x-request-id': 'req-42.abc' })],
  ])('echoes a plain id the client sends, on %s', async (_, act) => {
    const answer = await act()
    expect(answer.headers.get('x-request-id')).toBe('req-42.abc')
  })

  it('echoes a plain id on a 204 without a body', async () => {
    const id = await app.create('book_collections', { name: 'Earthsea' })
    const answer = await app.request('DELETE', `/api/v1/book_collections/${id}`, {
      headers: { 'x-request-id': 'del-1' },
    })
    expect(answer.status).toBe(204)
    expect(answer.headers.get('x-request-id')).toBe('del-1')
  })

  it.each([
    ['one with spaces', 'has some spaces'],
    ['one of 200 characters', 'a'.repeat(200)],
    ['one with quotes and angle brackets', '"<script>"'],
    ['one with a JSON fragment', '","level":"error'],
  ])('replaces an unusable id, %s, with a generated one', async (_, sent) => {
    const answer = await app.get('/api/v1/authors', { 'x-request-id': sent })
    const id = answer.headers.get('x-request-id')
    expect(id).not.toBe(sent)
    expect(id).toMatch(plain)
  })
})
