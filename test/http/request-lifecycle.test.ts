import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { openTestApp, type TestApp } from '../support/harness'

interface RequestLine {
  readonly msg: string
  readonly method: string
  readonly path: string
  readonly status: number
  readonly request_id: string
}

/** The request lines logged for one request id. */
function linesFor(t: TestApp, id: string): RequestLine[] {
  return t.logs
    .map((line) => JSON.parse(line) as RequestLine)
    .filter((line) => line.msg === 'request' && line.request_id === id)
}

/** The count of requests the metrics hold for a method, route and status. */
async function counted(t: TestApp, method: string, route: string, status: number): Promise<number> {
  const text = await (await t.app.handle(new Request('http://localhost/metrics'))).text()
  const series = `http_request_duration_seconds_count{method="${method}",route="${route}",status="${status}"}`
  const line = text.split('\n').find((l) => l.startsWith(series))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

describe('the request lifecycle', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await openTestApp({ logLevel: 'info' })
    await t.create('authors', { name: 'Ursula K. Le Guin' })
    for (let i = 0; i < 3; i++) {
      await t.create('books', { name: `Book ${i}` }, { author: { data: { type: 'authors', id: '1' } } })
    }
  })
  afterAll(() => t.close())

  const cases: [string, () => Promise<Response>, { method: string; route: string; status: number }][] = [
    [
      'an answer (200)',
      () => t.app.handle(new Request('http://localhost/api/v1/authors/1', { headers: { 'x-request-id': 'one-200' } })),
      { method: 'GET', route: '/api/v1/authors/:id', status: 200 },
    ],
    [
      'a failure in the handler (404)',
      () => t.app.handle(new Request('http://localhost/api/v1/authors/99', { headers: { 'x-request-id': 'one-404' } })),
      { method: 'GET', route: '/api/v1/authors/:id', status: 404 },
    ],
    [
      'a refusal before routing (406)',
      () =>
        t.app.handle(
          new Request('http://localhost/api/v1/authors', {
            headers: { 'x-request-id': 'one-406', accept: 'application/vnd.api+json; a=b' },
          }),
        ),
      { method: 'GET', route: '/api/v1/authors', status: 406 },
    ],
    [
      'a body that is not JSON (400)',
      () =>
        t.app.handle(
          new Request('http://localhost/api/v1/authors', {
            method: 'POST',
            headers: { 'x-request-id': 'one-400', 'content-type': 'application/vnd.api+json' },
            body: '{',
          }),
        ),
      { method: 'POST', route: '/api/v1/authors', status: 400 },
    ],
    [
      'a ranked search (on SQLite, read by a read worker)',
      () =>
        t.app.handle(
          new Request('http://localhost/api/v1/books?filter[search]=book', { headers: { 'x-request-id': 'one-list' } }),
        ),
      { method: 'GET', route: '/api/v1/books', status: 200 },
    ],
  ]

  for (const [name, send, { method, route, status }] of cases) {
    it(`logs ${name} once, with its id and status, and counts it once`, async () => {
      const before = await counted(t, method, route, status)
      const answer = await send()
      await answer.arrayBuffer()
      const id = answer.headers.get('x-request-id') as string
      expect(answer.status).toBe(status)
      expect(linesFor(t, id)).toEqual([expect.objectContaining({ method, status, request_id: id })])
      expect(await counted(t, method, route, status)).toBe(before + 1)
    })
  }
})

describe('the request log and probes', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await openTestApp({ logLevel: 'info' })
  })
  afterAll(() => t.close())

  it('logs a probe that succeeds (GET /health, GET /ready) only at debug, so that health checks do not fill the log', async () => {
    for (const path of ['/health', '/ready']) {
      const answer = await t.app.handle(
        new Request(`http://localhost${path}`, { headers: { 'x-request-id': `probe${path}` } }),
      )
      expect(answer.status).toBe(200)
      expect(linesFor(t, `probe${path}`)).toEqual([])
    }
  })

  it('logs a probe that fails at info', async () => {
    const answer = await t.app.handle(
      new Request('http://localhost/health', { method: 'POST', headers: { 'x-request-id': 'probe-405' } }),
    )
    expect(answer.status).toBe(405)
    expect(linesFor(t, 'probe-405')).toEqual([expect.objectContaining({ path: '/health', status: 405 })])
  })
})

describe('the request log at debug', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await openTestApp({ logLevel: 'debug' })
  })
  afterAll(() => t.close())

  it('logs a probe that succeeds', async () => {
    const answer = await t.app.handle(
      new Request('http://localhost/health', { headers: { 'x-request-id': 'probe-debug' } }),
    )
    expect(answer.status).toBe(200)
    expect(linesFor(t, 'probe-debug')).toEqual([expect.objectContaining({ path: '/health', status: 200 })])
  })
})
