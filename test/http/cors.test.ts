import { afterEach, describe, expect, it } from 'bun:test'
import { parseTokenFile, TokenSet } from '../../src/http/access/api-tokens'
import { type CorsOrigins, parseCorsOrigins } from '../../src/http/access/cors'
import { expectOneError } from '../support/expectations'
import { type Answer, openTestApp, type TestApp } from '../support/harness'
import { sampleValue, scrape } from '../support/prometheus'

const APP_ORIGIN = 'https://app.example'
const DEV_ORIGIN = 'http://localhost:5173'
const CORS_HEADERS = [
  'access-control-allow-origin',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-expose-headers',
  'access-control-max-age',
  'access-control-allow-credentials',
]
const EXPOSED = 'Location, ETag, X-Request-Id, RateLimit, RateLimit-Policy, Retry-After'

let app: TestApp | undefined

async function open(
  corsOrigins?: CorsOrigins,
  options: { tokens?: TokenSet; rateLimit?: number } = {},
): Promise<TestApp> {
  app = await openTestApp({
    app: {
      corsOrigins,
      tokens: options.tokens,
      rateLimit: options.rateLimit ? { perMinute: options.rateLimit } : undefined,
    },
  })
  return app
}

afterEach(async () => {
  await app?.close()
  app = undefined
})

function preflight(app: TestApp, origin: string, path = '/api/v1/authors'): Promise<Answer> {
  return app.send('OPTIONS', path, {
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type',
    },
  })
}

function corsHeadersOf(answer: Answer): Record<string, string> {
  return Object.fromEntries(
    CORS_HEADERS.filter((name) => answer.headers.has(name)).map((name) => [name, answer.headers.get(name) as string]),
  )
}

describe('without CORS_ORIGINS', () => {
  it('adds no CORS headers, even to a request with an Origin', async () => {
    const app = await open()
    const answer = await app.get('/api/v1/authors', { origin: APP_ORIGIN })
    expect(answer.status).toBe(200)
    expect(corsHeadersOf(answer)).toEqual({})
    expect(answer.headers.get('vary')).toBeNull()
  })

  it('answers OPTIONS as before: 405 with Allow', async () => {
    const answer = await preflight(await open(), APP_ORIGIN)
    expectOneError(answer, 405)
    expect(answer.headers.get('allow')).toBe('GET, POST')
    expect(corsHeadersOf(answer)).toEqual({})
  })
})

describe('CORS_ORIGINS listing origins', () => {
  it('answers a preflight from a listed origin 204 with the methods and headers the API takes', async () => {
    const answer = await preflight(await open([APP_ORIGIN, DEV_ORIGIN]), DEV_ORIGIN)
    expect(answer.status).toBe(204)
    expect(answer.text).toBe('')
    expect(answer.headers.get('access-control-allow-origin')).toBe(DEV_ORIGIN)
    expect(answer.headers.get('access-control-allow-methods')).toBe('GET, POST, PUT, PATCH, DELETE, OPTIONS')
    expect(answer.headers.get('access-control-allow-headers')).toBe(
      'Accept, Content-Type, Authorization, If-Match, If-None-Match, X-Request-Id',
    )
    expect(answer.headers.get('access-control-max-age')).toBe('600')
    expect(answer.headers.get('access-control-allow-credentials')).toBeNull()
    expect(answer.headers.get('vary')).toBe('Origin')
  })

  it('answers a preflight without asking for a token and without counting it against a rate limit', async () => {
    const tokens = new TokenSet(parseTokenFile('# none'))
    const app = await open([APP_ORIGIN], { tokens, rateLimit: 1 })
    for (let i = 0; i < 3; i++) {
      const answer = await preflight(app, APP_ORIGIN)
      expect(answer.status).toBe(204)
      expect(answer.headers.get('ratelimit')).toBeNull()
    }
    const real = await app.get('/api/v1/authors', { origin: APP_ORIGIN })
    expect(real.status).toBe(401)
    expect(real.headers.get('ratelimit')).toBe('"default";r=0;t=60')
  })

  it('gives an answer to a listed origin Access-Control-Allow-Origin and the exposed headers', async () => {
    const app = await open([APP_ORIGIN])
    const created = await app.post(
      '/api/v1/authors',
      { data: { type: 'author', attributes: { name: 'A' } } },
      { origin: APP_ORIGIN },
    )
    expect(created.status).toBe(201)
    expect(created.headers.get('access-control-allow-origin')).toBe(APP_ORIGIN)
    expect(created.headers.get('access-control-expose-headers')).toBe(EXPOSED)
    expect(created.headers.get('vary')).toBe('Origin')
    expect(created.headers.get('access-control-allow-methods')).toBeNull()
  })

  it('puts the CORS headers on error answers too, so that a browser can read them', async () => {
    const tokens = new TokenSet(parseTokenFile('# none'))
    const app = await open([APP_ORIGIN], { tokens })
    const refused = await app.get('/api/v1/authors', { origin: APP_ORIGIN })
    expectOneError(refused, 401, { header: 'Authorization' })
    expect(refused.headers.get('access-control-allow-origin')).toBe(APP_ORIGIN)
    expect(refused.headers.get('access-control-expose-headers')).toBe(EXPOSED)
  })

  it('gives an origin not in the list no CORS headers, on a preflight (204) or any other request', async () => {
    const app = await open([APP_ORIGIN])
    for (const origin of ['https://evil.example', 'https://app.example.evil', 'toString', 'null']) {
      const answer = await preflight(app, origin)
      expect(answer.status).toBe(204)
      expect(corsHeadersOf(answer)).toEqual({})
      const read = await app.get('/api/v1/authors', { origin })
      expect(read.status).toBe(200)
      expect(corsHeadersOf(read)).toEqual({})
      expect(read.headers.get('vary')).toBe('Origin')
    }
  })

  it('says Vary: Origin to a request without an Origin too, since the answer depends on it', async () => {
    const answer = await (await open([APP_ORIGIN])).get('/api/v1/authors')
    expect(answer.status).toBe(200)
    expect(corsHeadersOf(answer)).toEqual({})
    expect(answer.headers.get('vary')).toBe('Origin')
  })

  it('keeps Vary: Origin on a page of a list, whose answer varies with Accept too', async () => {
    const app = await open([APP_ORIGIN])
    await app.create('authors', { name: 'A' })
    const page = await app.get('/api/v1/authors?page[size]=1', { origin: APP_ORIGIN })
    expect(page.status).toBe(200)
    expect(page.headers.get('vary')).toBe('Origin, Accept')
    const withoutOrigin = await app.get('/api/v1/authors?page[size]=1')
    expect(withoutOrigin.headers.get('vary')).toBe('Origin, Accept')
  })

  it('logs a preflight and counts it in the metrics like any request, and leaves nothing in flight', async () => {
    app = await openTestApp({ logLevel: 'info', app: { corsOrigins: [APP_ORIGIN] } })
    for (const origin of [APP_ORIGIN, 'https://evil.example']) {
      expect((await preflight(app, origin, '/api/v1/books')).status).toBe(204)
    }
    const samples = await scrape(app)
    expect(sampleValue(samples, 'http_requests_in_flight')).toBe(1)
    const counted = samples.filter(
      (s) => s.name === 'http_request_duration_seconds_count' && s.labels.method === 'OPTIONS',
    )
    expect(counted.map((s) => [s.labels.status, s.value])).toEqual([['204', 2]])
    const logged = app.logs.map((line) => JSON.parse(line)).filter((line) => line.method === 'OPTIONS')
    expect(logged.map((line) => [line.path, line.status])).toEqual([
      ['/api/v1/books', 204],
      ['/api/v1/books', 204],
    ])
  })

  it('answers an OPTIONS that is not a preflight as before', async () => {
    const answer = await (await open([APP_ORIGIN])).send('OPTIONS', '/api/v1/authors', {
      headers: { origin: APP_ORIGIN },
    })
    expectOneError(answer, 405)
    expect(answer.headers.get('access-control-allow-origin')).toBe(APP_ORIGIN)
  })
})

describe('CORS_ORIGINS=*', () => {
  it('allows every origin with Access-Control-Allow-Origin: * and no Vary', async () => {
    const app = await open('*')
    const answer = await app.get('/api/v1/authors', { origin: 'https://anywhere.example' })
    expect(answer.headers.get('access-control-allow-origin')).toBe('*')
    expect(answer.headers.get('access-control-expose-headers')).toBe(EXPOSED)
    expect(answer.headers.get('vary')).toBeNull()
    const pre = await preflight(app, 'https://anywhere.example')
    expect(pre.status).toBe(204)
    expect(pre.headers.get('access-control-allow-origin')).toBe('*')
    expect(pre.headers.get('access-control-allow-headers')).toContain('Authorization')
  })
})

describe('parseCorsOrigins', () => {
  it('reads *, a list of origins with spaces, and nothing', () => {
    expect(parseCorsOrigins('*')).toBe('*')
    expect(parseCorsOrigins(` ${APP_ORIGIN} , ${DEV_ORIGIN},`)).toEqual([APP_ORIGIN, DEV_ORIGIN])
    expect(parseCorsOrigins('')).toBeNull()
    expect(parseCorsOrigins(' , ')).toBeNull()
  })

  it.each([
    ['a path', 'https://app.example/'],
    ['a host alone', 'app.example'],
    ['upper case', 'https://App.example'],
    ['a default port', 'https://app.example:443'],
    ['* beside an origin', `*, ${APP_ORIGIN}`],
    // What sandboxed frames, data: URLs and local files send: any page can make a request with it.
    ['null', 'null'],
    ['null in a list', `${APP_ORIGIN},null`],
  ])('refuses %s with a sentence', (_, value) => {
    expect(parseCorsOrigins(value)).toEqual({ error: expect.stringMatching(/^CORS_ORIGINS /) })
  })
})
