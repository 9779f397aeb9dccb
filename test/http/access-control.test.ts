import { afterEach, describe, expect, it } from 'bun:test'
import { parseTokenFile, TokenSet } from '../../src/http/access/api-tokens'
import { changesNothing, expectOneError } from '../support/expectations'
import { JSON_API, openTestApp, type TestApp } from '../support/harness'

const READER = 'cat_reader-token-0123456789abcdefghijklmnopqrstuv'
const WRITER = 'cat_writer-token-0123456789abcdefghijklmnopqrstuv'
const AUTHORIZATION = { header: 'Authorization' }

const sha256 = (token: string) => new Bun.CryptoHasher('sha256').update(token).digest('hex')
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const authorDocument = (name: string) => ({ data: { type: 'author', attributes: { name } } })

/** The tokens of a file that lists READER as `reader` (read) and WRITER as `writer` (write). */
function tokenSet(): TokenSet {
  return new TokenSet(
    parseTokenFile(`# the test's tokens\nreader read ${sha256(READER)}\nwriter write ${sha256(WRITER)}\n`),
  )
}

let app: TestApp | undefined

async function open(options: { publicRead?: boolean; tokens?: TokenSet; logLevel?: 'info' } = {}): Promise<TestApp> {
  app = await openTestApp({
    logLevel: options.logLevel,
    app: { tokens: options.tokens ?? tokenSet(), publicRead: options.publicRead },
  })
  return app
}

afterEach(async () => {
  await app?.close()
  app = undefined
})

describe('a read with API tokens set', () => {
  it('answers 401 with WWW-Authenticate: Bearer and a JSON:API error without a token', async () => {
    const answer = await (await open()).get('/api/v1/authors')
    expectOneError(answer, 401, AUTHORIZATION)
    expect(answer.headers.get('www-authenticate')).toBe('Bearer')
  })

  it('answers 200 with a read token, and with a write token', async () => {
    const app = await open()
    for (const token of [READER, WRITER]) {
      const answer = await app.get('/api/v1/authors', bearer(token))
      expect(answer.status).toBe(200)
      expect(answer.json.data).toEqual([])
    }
  })

  it('answers 401 with error="invalid_token" to a token not in the file', async () => {
    const answer = await (await open()).get('/api/v1/authors', bearer(`${READER}x`))
    expectOneError(answer, 401, AUTHORIZATION)
    expect(answer.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"')
  })

  it('answers 401 to the hash of a token sent in its place', async () => {
    expectOneError(await (await open()).get('/api/v1/authors', bearer(sha256(READER))), 401, AUTHORIZATION)
  })

  it.each([
    ['another scheme', `Basic ${btoa('reader:secret')}`],
    ['Bearer without a token', 'Bearer'],
    ['Bearer and spaces', 'Bearer   '],
    ['an empty header', ''],
    ['the token alone', READER],
    ['two tokens', `Bearer ${READER} ${WRITER}`],
  ])('answers 401 with a JSON:API error to a malformed Authorization header: %s', async (_, header) => {
    const answer = await (await open()).send('GET', '/api/v1/authors', {
      headers: { accept: JSON_API, authorization: header },
    })
    expectOneError(answer, 401, AUTHORIZATION)
    expect(answer.headers.get('www-authenticate')).toStartWith('Bearer')
  })

  it('takes the scheme in any case (bearer, BEARER)', async () => {
    const app = await open()
    for (const scheme of ['bearer', 'BEARER']) {
      expect((await app.get('/api/v1/authors', { authorization: `${scheme} ${READER}` })).status).toBe(200)
    }
  })

  it('answers 401 to an unknown path without a token, so that routes are not revealed', async () => {
    expectOneError(await (await open()).get('/api/v1/nothing-here'), 401, AUTHORIZATION)
  })

  it('answers 401 before the Accept check (406)', async () => {
    const answer = await (await open()).send('GET', '/api/v1/authors', { headers: { accept: `${JSON_API}; foo=bar` } })
    expectOneError(answer, 401, AUTHORIZATION)
  })
})

describe('a write with API tokens set', () => {
  it('creates the record (201) with a write token', async () => {
    const app = await open()
    const answer = await app.post('/api/v1/authors', authorDocument('Ursula K. Le Guin'), bearer(WRITER))
    expect(answer.status).toBe(201)
    expect(await app.stored('authors')).toEqual([{ id: Number(answer.json.data.id), name: 'Ursula K. Le Guin' }])
  })

  it('answers 403 with error="insufficient_scope" to a read token and changes nothing', async () => {
    const app = await open()
    const answer = await changesNothing(app, () =>
      app.post('/api/v1/authors', authorDocument('Octavia E. Butler'), bearer(READER)),
    )
    expectOneError(answer, 403, AUTHORIZATION)
    expect(answer.headers.get('www-authenticate')).toBe('Bearer error="insufficient_scope", scope="write"')
  })

  it('answers 401 without a token and changes nothing, on every write method', async () => {
    const app = await open()
    const id = (await app.post('/api/v1/authors', authorDocument('Ursula K. Le Guin'), bearer(WRITER))).json.data.id
    for (const [method, path] of [
      ['POST', '/api/v1/authors'],
      ['PUT', `/api/v1/authors/${id}`],
      ['PATCH', `/api/v1/authors/${id}`],
      ['DELETE', `/api/v1/authors/${id}`],
    ] as const) {
      const answer = await changesNothing(app, () =>
        app.request(method, path, { body: method === 'DELETE' ? undefined : authorDocument('Renamed') }),
      )
      expectOneError(answer, 401, AUTHORIZATION)
      expect(answer.headers.get('www-authenticate')).toBe('Bearer')
    }
  })

  it('answers 403 to a read token on DELETE and on the atomic operations endpoint', async () => {
    const app = await open()
    const id = (await app.post('/api/v1/authors', authorDocument('Ursula K. Le Guin'), bearer(WRITER))).json.data.id
    expectOneError(
      await app.request('DELETE', `/api/v1/authors/${id}`, { headers: bearer(READER) }),
      403,
      AUTHORIZATION,
    )
    const operations = {
      'atomic:operations': [{ op: 'add', data: { type: 'authors', attributes: { name: 'Octavia E. Butler' } } }],
    }
    const ext = `${JSON_API}; ext="https://jsonapi.org/ext/atomic"`
    const refused = await changesNothing(app, () =>
      app.post('/api/v1/operations', operations, { ...bearer(READER), 'content-type': ext, accept: ext }),
    )
    expectOneError(refused, 403, AUTHORIZATION)
    const done = await app.post('/api/v1/operations', operations, {
      ...bearer(WRITER),
      'content-type': ext,
      accept: ext,
    })
    expect(done.status).toBe(200)
  })

  it('answers 401 before the Content-Type check (415)', async () => {
    const answer = await (await open()).send('POST', '/api/v1/authors', {
      headers: { 'content-type': 'text/plain' },
      body: 'not a document',
    })
    expectOneError(answer, 401, AUTHORIZATION)
  })

  it('answers 401 before reading the body: a body that never ends does not hold the answer back', async () => {
    const endless = new ReadableStream<Uint8Array>({
      pull: () => new Promise(() => {}),
    })
    const answer = await (await open()).send('POST', '/api/v1/authors', {
      headers: { 'content-type': JSON_API },
      body: endless,
    })
    expectOneError(answer, 401, AUTHORIZATION)
  })

  it('answers 401 to a token not in the file, not 403', async () => {
    const answer = await (await open()).post('/api/v1/authors', authorDocument('X'), bearer('cat_not-a-known-token'))
    expectOneError(answer, 401, AUTHORIZATION)
  })
})

describe('PUBLIC_READ with API tokens set', () => {
  it('answers reads without a token', async () => {
    expect((await (await open({ publicRead: true })).get('/api/v1/authors')).status).toBe(200)
  })

  it('still needs a write token for writes, and changes nothing without one', async () => {
    const app = await open({ publicRead: true })
    const answer = await changesNothing(app, () => app.post('/api/v1/authors', authorDocument('X')))
    expectOneError(answer, 401, AUTHORIZATION)
    expectOneError(await app.post('/api/v1/authors', authorDocument('X'), bearer(READER)), 403, AUTHORIZATION)
  })

  it('still answers 401 to a token that is sent but not valid', async () => {
    expectOneError(
      await (await open({ publicRead: true })).get('/api/v1/authors', bearer('cat_wrong')),
      401,
      AUTHORIZATION,
    )
  })
})

describe('public paths with API tokens set', () => {
  it('serves the docs page, its viewer and icon, and the OpenAPI document without a token', async () => {
    const app = await open()
    for (const path of ['/docs', '/docs/', '/docs/scalar.js?v=1', '/docs/favicon.svg'])
      expect((await app.send('GET', path)).status).toBe(200)
    const spec = await app.send('GET', '/api/v1/openapi.json')
    expect(spec.status).toBe(200)
    expect(spec.json.openapi).toStartWith('3.')
  })

  it('declares the token scheme in the OpenAPI document: a token for reads, the write scope for writes', async () => {
    const spec = (await (await open()).send('GET', '/api/v1/openapi.json')).json
    expect(spec.components.securitySchemes.apiToken).toMatchObject({ type: 'http', scheme: 'bearer' })
    expect(spec.paths['/api/v1/authors'].get.security).toEqual([{ apiToken: [] }])
    expect(spec.paths['/api/v1/authors'].post.security).toEqual([{ apiToken: ['write'] }])
  })

  it('documents reads as open to anyone, or to a token, with PUBLIC_READ', async () => {
    const spec = (await (await open({ publicRead: true })).send('GET', '/api/v1/openapi.json')).json
    expect(spec.paths['/api/v1/authors'].get.security).toEqual([{}, { apiToken: [] }])
    expect(spec.paths['/api/v1/authors'].post.security).toEqual([{ apiToken: ['write'] }])
  })

  it('answers /health and /ready without a token', async () => {
    const app = await open()
    expect((await app.send('GET', '/health')).status).toBe(200)
    expect((await app.send('GET', '/ready')).status).toBe(200)
  })

  it('keeps /metrics a read: 401 without a token, 200 with a read token', async () => {
    const app = await open()
    expectOneError(await app.send('GET', '/metrics'), 401, AUTHORIZATION)
    const scraped = await app.send('GET', '/metrics', { headers: bearer(READER) })
    expect(scraped.status).toBe(200)
    expect(scraped.text).toContain('http_requests_in_flight')
  })
})

describe('an empty token file', () => {
  it('refuses every request that needs a token', async () => {
    const app = await open({ tokens: new TokenSet(parseTokenFile('# nobody yet\n')) })
    expectOneError(await app.get('/api/v1/authors'), 401, AUTHORIZATION)
    expectOneError(await app.get('/api/v1/authors', bearer(READER)), 401, AUTHORIZATION)
  })
})

describe('tokens replaced while the service runs (what SIGHUP does)', () => {
  it('accepts the new tokens and refuses the removed ones at once', async () => {
    const tokens = tokenSet()
    const app = await open({ tokens })
    expect((await app.get('/api/v1/authors', bearer(READER))).status).toBe(200)
    const NEWCOMER = 'cat_newcomer-token-0123456789abcdefghijklmnopq'
    tokens.replace(parseTokenFile(`newcomer read ${sha256(NEWCOMER)}`))
    expect((await app.get('/api/v1/authors', bearer(NEWCOMER))).status).toBe(200)
    expectOneError(await app.get('/api/v1/authors', bearer(READER)), 401, AUTHORIZATION)
  })
})

describe('without API tokens', () => {
  it('is open: reads and writes need no token, and an Authorization header is ignored', async () => {
    app = await openTestApp()
    expect((await app.get('/api/v1/authors')).status).toBe(200)
    expect((await app.post('/api/v1/authors', authorDocument('A'))).status).toBe(201)
    expect((await app.post('/api/v1/authors', authorDocument('B'), { authorization: 'Basic eA==' })).status).toBe(201)
  })
})

describe('the request log with API tokens set', () => {
  it("names the token and gives the query string, and never holds the token's text or hash", async () => {
    const app = await open({ logLevel: 'info' })
    await app.get('/api/v1/authors?page[size]=5&sort=-name', bearer(READER))
    await app.post('/api/v1/authors', authorDocument('X'), bearer(WRITER))
    await app.get('/api/v1/authors', bearer('cat_wrong-token'))
    await Bun.sleep(10)
    const lines = app.logs.map((line) => JSON.parse(line)).filter((line) => line.msg === 'request')
    expect(lines).toHaveLength(3)
    expect(lines[0]).toMatchObject({
      method: 'GET',
      path: '/api/v1/authors',
      query: 'page[size]=5&sort=-name',
      status: 200,
      token: 'reader',
    })
    expect(lines[1]).toMatchObject({ method: 'POST', status: 201, token: 'writer' })
    expect(lines[1].query).toBeUndefined()
    expect(lines[2]).toMatchObject({ status: 401 })
    expect(lines[2].token).toBeUndefined()
    const all = app.logs.join('\n')
    for (const secret of [READER, WRITER, 'cat_wrong-token', sha256(READER), sha256(WRITER)]) {
      expect(all).not.toContain(secret)
    }
  })
})
