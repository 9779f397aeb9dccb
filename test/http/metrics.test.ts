import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { parseTokenFile, TokenSet } from '../../src/http/access/api-tokens'
import { ONE_CORE_LIST_MAX, SHORT_LIST } from '../../src/http/read-threads/read-place'
import { LIST_BATCH } from '../../src/http/streaming/list-reader'
import { insertCatalogue } from '../support/bulk'
import { JSON_API, openTestApp, type TestApp } from '../support/harness'
import { find, metricsText, parseSamples, type Sample, sampleValue, scrape } from '../support/prometheus'

const count = 'http_request_duration_seconds_count'

/** Requests counted for this method, route template and status. */
function requests(samples: readonly Sample[], method: string, route: string, status: number): number {
  return sampleValue(samples, count, { method, route, status: String(status) })
}

describe('GET /metrics', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await openTestApp()
  })
  afterAll(async () => {
    await t.close()
  })

  it('answers the Prometheus text format to the Accept header a Prometheus scraper sends', async () => {
    const answer = await t.send('GET', '/metrics', {
      headers: { accept: 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1' },
    })
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
    expect(parseSamples(answer.text).length).toBeGreaterThan(0)
  })

  it('answers curl, which sends Accept: */*, and a client that sends no Accept', async () => {
    expect((await t.send('GET', '/metrics', { headers: { accept: '*/*' } })).status).toBe(200)
    expect((await t.send('GET', '/metrics')).status).toBe(200)
  })

  it('answers 200 to an Accept header that the API refuses with 406', async () => {
    const accept = `${JSON_API}; ext="https://example.com/unknown"`
    expect((await t.send('GET', '/api/v1/authors', { headers: { accept } })).status).toBe(406)
    expect((await t.send('GET', '/metrics', { headers: { accept } })).status).toBe(200)
  })

  it('answers 405 with Allow: GET to another method', async () => {
    const answer = await t.send('POST', '/metrics')
    expect(answer.status).toBe(405)
    expect(answer.headers.get('allow')).toBe('GET')
  })

  it('names the version of the service and of Bun', async () => {
    const [info] = find(await scrape(t), 'catalogue_build_info')
    expect(info?.labels).toEqual({ version: expect.stringMatching(/^\d+\.\d+\.\d+/), bun: Bun.version })
    expect(info?.value).toBe(1)
  })

  it('has the process metrics: CPU, memory, open files', async () => {
    const samples = await scrape(t)
    for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'process_open_fds']) {
      expect(sampleValue(samples, name)).toBeGreaterThan(0)
    }
  })

  it('leaves out the default metrics that mean nothing under Bun', async () => {
    const names = new Set((await scrape(t)).map((sample) => sample.name))
    expect(names.has('nodejs_active_handles_total')).toBe(false)
    expect(names.has('nodejs_heap_space_size_used_bytes')).toBe(false)
    expect(names.has('nodejs_version_info')).toBe(false)
  })
})

describe('http_request_duration_seconds', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await openTestApp()
  })
  afterAll(async () => {
    await t.close()
  })

  it('counts requests by method, route template and status', async () => {
    expect((await t.get('/api/v1/authors/1')).status).toBe(404)
    const id = await t.create('authors', { name: 'Counted' })
    expect((await t.get(`/api/v1/authors/${id}`)).status).toBe(200)
    expect((await t.get(`/api/v1/authors/${id}`)).status).toBe(200)
    expect((await t.get(`/api/v1/authors/${id}/books`)).status).toBe(200)
    const samples = await scrape(t)
    expect(requests(samples, 'GET', '/api/v1/authors/:id', 200)).toBe(2)
    expect(requests(samples, 'GET', '/api/v1/authors/:id', 404)).toBe(1)
    expect(requests(samples, 'POST', '/api/v1/authors', 201)).toBe(1)
    expect(requests(samples, 'GET', '/api/v1/authors/:id/books', 200)).toBe(1)
    // The paths as sent are never labels.
    expect(find(samples, count, { route: `/api/v1/authors/${id}` })).toEqual([])
  })

  it('counts the scrapes and the probes too, by their paths', async () => {
    await t.send('GET', '/health')
    const samples = await scrape(t)
    expect(requests(samples, 'GET', '/health', 200)).toBe(1)
    expect(requests(samples, 'GET', '/metrics', 200)).toBeGreaterThan(0)
  })

  it('has the histogram buckets, cumulative, up to +Inf which equals the count', async () => {
    const samples = await scrape(t)
    const labels = { method: 'GET', route: '/api/v1/authors/:id', status: '200' }
    const buckets = find(samples, 'http_request_duration_seconds_bucket', labels)
    expect(buckets.map((bucket) => bucket.labels.le)).toEqual([
      '0.0005',
      '0.001',
      '0.0025',
      '0.005',
      '0.01',
      '0.025',
      '0.05',
      '0.1',
      '0.25',
      '0.5',
      '1',
      '2.5',
      '5',
      '10',
      '+Inf',
    ])
    const values = buckets.map((bucket) => bucket.value)
    expect(values).toEqual([...values].sort((a, b) => a - b))
    expect(values.at(-1)).toBe(sampleValue(samples, count, labels))
    expect(sampleValue(samples, 'http_request_duration_seconds_sum', labels)).toBeGreaterThan(0)
  })

  it('collapses every path that no route matches into the one route label "unmatched"', async () => {
    const sent: string[] = []
    for (let i = 0; i < 50; i++) {
      const path = `/${crypto.randomUUID()}/${i}`
      sent.push(path)
      expect((await t.get(path)).status).toBe(404)
    }
    const text = await metricsText(t)
    for (const path of sent) expect(text).not.toContain(path)
    const samples = parseSamples(text)
    expect(requests(samples, 'GET', 'unmatched', 404)).toBe(50)
    // Every route label is a template the app declares, or "unmatched".
    const templates = new Set(t.app.routes.map((route) => route.path))
    const routes = new Set(find(samples, count).map((sample) => sample.labels.route as string))
    for (const route of routes) expect(route === 'unmatched' || templates.has(route)).toBe(true)
    expect(routes.size).toBeLessThanOrEqual(templates.size + 1)
  })

  it('labels a method no route answers at a known path as "unmatched" too', async () => {
    expect((await t.request('DELETE', '/api/v1/authors')).status).toBe(405)
    expect(requests(await scrape(t), 'DELETE', 'unmatched', 405)).toBe(1)
  })

  it('labels a 406, refused before routing, with the route it was sent to', async () => {
    const accept = `${JSON_API}; ext="https://example.com/unknown"`
    expect((await t.send('GET', '/api/v1/authors', { headers: { accept } })).status).toBe(406)
    expect((await t.send('GET', '/api/v1/authors/12', { headers: { accept } })).status).toBe(406)
    const samples = await scrape(t)
    expect(requests(samples, 'GET', '/api/v1/authors', 406)).toBe(1)
    expect(requests(samples, 'GET', '/api/v1/authors/:id', 406)).toBe(1)
    expect(requests(samples, 'GET', 'unmatched', 406)).toBe(0)
  })

  it('labels a method outside the usual ones "other", whatever its name', async () => {
    await t.send('PROPFIND', '/api/v1/authors')
    await t.send('MKCOL', '/api/v1/authors')
    const samples = await scrape(t)
    const methods = new Set(find(samples, count).map((sample) => sample.labels.method))
    expect(methods.has('other')).toBe(true)
    expect(methods.has('PROPFIND')).toBe(false)
    expect(methods.has('MKCOL')).toBe(false)
  })
})

describe('http_request_duration_seconds with API tokens and a rate limit', () => {
  const READER = 'cat_reader-token-0123456789abcdefghijklmnopqrstuv'
  const SCRAPER = 'cat_scraper-token-0123456789abcdefghijklmnopqrstu'
  const sha256 = (token: string) => new Bun.CryptoHasher('sha256').update(token).digest('hex')
  let t: TestApp
  beforeAll(async () => {
    const file = `reader read ${sha256(READER)}\nscraper read ${sha256(SCRAPER)}\n`
    // Four requests a minute per token, and per address for those without one.
    t = await openTestApp({ app: { tokens: new TokenSet(parseTokenFile(file)), rateLimit: { perMinute: 4 } } })
  })
  afterAll(async () => {
    await t.close()
  })

  it('counts a 401, a 403 and a 429, refused before routing, under the route they were sent to', async () => {
    const reader = { authorization: `Bearer ${READER}` }
    const book = { data: { type: 'books', attributes: { name: 'Refused' } } }
    // Four without a token (the address's four).
    expect((await t.get('/api/v1/books')).status).toBe(401)
    expect((await t.get('/api/v1/books/3', { authorization: 'Bearer not-a-token' })).status).toBe(401)
    expect((await t.post('/api/v1/books', book)).status).toBe(401)
    // A path no route serves stays unmatched, refused or not.
    expect((await t.get('/api/v1/nothing-here')).status).toBe(401)
    // Five with the read token: the fifth is over its limit.
    expect((await t.post('/api/v1/books', book, reader)).status).toBe(403)
    for (let i = 0; i < 3; i++) expect((await t.get('/api/v1/books/3', reader)).status).toBe(404)
    expect((await t.get('/api/v1/books', reader)).status).toBe(429)
    const scrape = new Request('http://localhost/metrics', { headers: { authorization: `Bearer ${SCRAPER}` } })
    const samples = parseSamples(await (await t.app.handle(scrape)).text())
    expect(requests(samples, 'GET', '/api/v1/books', 401)).toBe(1)
    expect(requests(samples, 'GET', '/api/v1/books/:id', 401)).toBe(1)
    expect(requests(samples, 'POST', '/api/v1/books', 401)).toBe(1)
    expect(requests(samples, 'POST', '/api/v1/books', 403)).toBe(1)
    expect(requests(samples, 'GET', '/api/v1/books', 429)).toBe(1)
    expect(requests(samples, 'GET', 'unmatched', 401)).toBe(1)
  })
})

describe('http_requests_in_flight', () => {
  for (const readWorkers of [1, 0]) {
    describe(readWorkers === 0 ? 'a list read on the main thread' : 'a list read by a read worker', () => {
      let t: TestApp
      const inFlight = async () => sampleValue(await scrape(t), 'http_requests_in_flight')
      const list = () => t.app.handle(new Request('http://localhost/api/v1/books', { headers: { accept: JSON_API } }))

      beforeAll(async () => {
        // Read workers read SQLite files: with them the test is about SQLite; without, about either backend.
        t = await openTestApp(readWorkers > 0 ? { backend: 'sqlite', readWorkers } : { readWorkers })
        // About 200 KB of books: a list that is streamed, not answered whole.
        await insertCatalogue(t, {
          authors: ['Streamed'],
          collections: [],
          books: 3000,
          authorOf: () => 1,
          collectionOf: () => null,
        })
      })
      afterAll(async () => {
        await t.close()
      })

      it('is 1, the scrape itself, when no other request is in flight', async () => {
        await t.get('/api/v1/authors/1')
        await t.get('/nowhere')
        expect(await inFlight()).toBe(1)
      })

      it('counts a streamed list until its body has been read whole, then not', async () => {
        const response = await list()
        expect(response.status).toBe(200)
        expect(await inFlight()).toBe(2)
        const document = JSON.parse(await response.text())
        expect(document.data).toHaveLength(3000)
        expect(await inFlight()).toBe(1)
      })

      it('counts a streamed list that the client cancels until it is cancelled', async () => {
        const response = await list()
        const reader = (response.body as ReadableStream<Uint8Array>).getReader()
        expect((await reader.read()).done).toBe(false)
        expect(await inFlight()).toBe(2)
        await reader.cancel()
        expect(await inFlight()).toBe(1)
      })

      it('times a streamed list to the end of its body, once', async () => {
        const before = requests(await scrape(t), 'GET', '/api/v1/books', 200)
        const response = await list()
        expect(requests(await scrape(t), 'GET', '/api/v1/books', 200)).toBe(before)
        await response.text()
        expect(requests(await scrape(t), 'GET', '/api/v1/books', 200)).toBe(before + 1)
      })
    })
  }
})

describe('catalogue_database_seconds_total', () => {
  let t: TestApp
  /** With a read worker, for the reads that grow with the data. */
  let offloading: TestApp
  beforeAll(async () => {
    t = await openTestApp({ readWorkers: 0 })
    offloading = await openTestApp({ backend: 'sqlite', readWorkers: 1 })
  })
  afterAll(async () => {
    await t.close()
    await offloading.close()
  })

  const seconds = 'catalogue_database_seconds_total'
  const calls = 'catalogue_database_calls_total'

  it('grows with every store call, by operation', async () => {
    const before = await scrape(t)
    const id = await t.create('authors', { name: 'Timed' })
    expect((await t.get(`/api/v1/authors/${id}`)).status).toBe(200)
    const after = await scrape(t)
    for (const operation of ['create', 'find', 'members', 'version']) {
      expect(sampleValue(after, calls, { operation })).toBe(sampleValue(before, calls, { operation }) + 1)
      expect(sampleValue(after, seconds, { operation })).toBeGreaterThan(sampleValue(before, seconds, { operation }))
    }
  })

  it('counts the round trips to the read workers as read_worker', async () => {
    const before = await scrape(offloading)
    // A search ranks every hit: a worker reads it, however few there are.
    expect((await offloading.get('/api/v1/authors?filter[search]=timed')).status).toBe(200)
    const after = await scrape(offloading)
    const operation = { operation: 'read_worker' }
    expect(sampleValue(after, calls, operation)).toBeGreaterThan(sampleValue(before, calls, operation))
    expect(sampleValue(after, seconds, operation)).toBeGreaterThan(sampleValue(before, seconds, operation))
  })

  it('labels the time by the store calls made, named as in the Store interface', async () => {
    const operations = new Set(find(await scrape(t), calls).map((sample) => sample.labels.operation))
    // An author's answer can grow with their books: the version is read first, to tag it if streamed.
    expect([...operations].sort()).toEqual(['create', 'find', 'members', 'version'])
  })
})

describe('where a list is read, with a read worker', () => {
  let t: TestApp
  const calls = (samples: Sample[], operation: string) =>
    sampleValue(samples, 'catalogue_database_calls_total', { operation })
  beforeAll(async () => {
    t = await openTestApp({ backend: 'sqlite', readWorkers: 1 })
    // Author 1 has one book more than a batch; author 2 has three; author 3 one more than a short list.
    await insertCatalogue(t, {
      authors: ['Long list', 'Short list', 'Middle list'],
      collections: [],
      books: LIST_BATCH + 4 + SHORT_LIST + 1,
      authorOf: (i) => (i <= LIST_BATCH ? 1 : i <= LIST_BATCH + 3 ? 2 : 3),
      collectionOf: () => null,
    })
  })
  afterAll(async () => {
    await t.close()
  })

  it('reads an unpaginated list of at most SHORT_LIST records by one query on the main thread, neither counted nor versioned first', async () => {
    const before = await scrape(t)
    const response = await t.get('/api/v1/books?author_id=2')
    expect(response.json.data).toHaveLength(3)
    const after = await scrape(t)
    expect(calls(after, 'list')).toBe(calls(before, 'list') + 1)
    for (const operation of ['read_worker', 'countUpTo', 'version', 'stream']) {
      expect(calls(after, operation)).toBe(calls(before, operation))
    }
  })

  it('reads a longer unpaginated list of at most one batch on the main thread, once counted in an index', async () => {
    const before = await scrape(t)
    const response = await t.get('/api/v1/books?author_id=3')
    expect(response.json.data).toHaveLength(SHORT_LIST + 1)
    const after = await scrape(t)
    expect(calls(after, 'read_worker')).toBe(calls(before, 'read_worker'))
    expect(calls(after, 'countUpTo')).toBe(calls(before, 'countUpTo') + 1)
    expect(calls(after, 'version')).toBe(calls(before, 'version') + 1)
    expect(calls(after, 'stream')).toBeGreaterThan(calls(before, 'stream'))
  })

  it('hands an unpaginated list longer than one batch to the read worker', async () => {
    const before = await scrape(t)
    const response = await t.get('/api/v1/books?author_id=1')
    expect(response.json.data).toHaveLength(LIST_BATCH + 1)
    const after = await scrape(t)
    expect(calls(after, 'read_worker')).toBeGreaterThan(calls(before, 'read_worker'))
    expect(calls(after, 'stream')).toBe(calls(before, 'stream'))
  })

  it('hands a list filtered two ways to the read worker without counting it: the count could step through a long range', async () => {
    const before = await scrape(t)
    const response = await t.get('/api/v1/books?author_id=2&filter[name]=none')
    expect(response.json.data).toHaveLength(0)
    const after = await scrape(t)
    expect(calls(after, 'countUpTo')).toBe(calls(before, 'countUpTo'))
    expect(calls(after, 'read_worker')).toBeGreaterThan(calls(before, 'read_worker'))
  })
})

describe('where a list is read, with a read worker, on one core', () => {
  let t: TestApp
  const calls = (samples: Sample[], operation: string) =>
    sampleValue(samples, 'catalogue_database_calls_total', { operation })
  beforeAll(async () => {
    t = await openTestApp({ backend: 'sqlite', readWorkers: 1, app: { cores: 1 } })
    // Author 1 has ONE_CORE_LIST_MAX books, author 2 one: every book is one more than the bound.
    await insertCatalogue(t, {
      authors: ['Long list', 'Short list'],
      collections: ['Shelf'],
      books: ONE_CORE_LIST_MAX + 1,
      authorOf: (i) => (i < ONE_CORE_LIST_MAX ? 1 : 2),
      collectionOf: () => 1,
    })
  })
  afterAll(async () => {
    await t.close()
  })

  it('streams an unpaginated list of up to ONE_CORE_LIST_MAX itself, with its to-one includes: a worker could not run beside it', async () => {
    for (const path of [
      '/api/v1/books?author_id=1',
      '/api/v1/books?author_id=1&sort=-name&include=author,book_collection',
    ]) {
      const before = await scrape(t)
      const response = await t.get(path)
      expect(response.status).toBe(200)
      expect(response.json.data).toHaveLength(ONE_CORE_LIST_MAX)
      const after = await scrape(t)
      expect(calls(after, 'read_worker')).toBe(calls(before, 'read_worker'))
      expect(calls(after, 'countUpTo')).toBe(calls(before, 'countUpTo') + 1)
      expect(calls(after, 'stream')).toBeGreaterThan(calls(before, 'stream'))
    }
  })

  it('hands a longer list, a search, a list filtered two ways and a to-many include to the read worker', async () => {
    for (const path of [
      '/api/v1/books',
      '/api/v1/books?filter[search]=book',
      '/api/v1/books?author_id=1&filter[name]=none',
      '/api/v1/authors?include=books',
    ]) {
      const before = await scrape(t)
      expect((await t.get(path)).status).toBe(200)
      const after = await scrape(t)
      expect(calls(after, 'read_worker')).toBeGreaterThan(calls(before, 'read_worker'))
    }
  })
})

describe('nodejs_eventloop_lag_seconds', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await openTestApp()
  })
  afterAll(async () => {
    await t.close()
  })

  it('reports the event loop lag since the last scrape: a 100 ms block shows in the maximum', async () => {
    await scrape(t)
    const start = performance.now()
    while (performance.now() - start < 100) {
      // Holds the event loop, as a slow synchronous request would.
    }
    await Bun.sleep(50)
    const samples = await scrape(t)
    expect(sampleValue(samples, 'nodejs_eventloop_lag_max_seconds')).toBeGreaterThanOrEqual(0.09)
    for (const name of ['nodejs_eventloop_lag_p50_seconds', 'nodejs_eventloop_lag_p99_seconds']) {
      expect(find(samples, name)).toHaveLength(1)
    }
  })
})

describe('METRICS=false', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await openTestApp({ app: { metrics: false } })
  })
  afterAll(async () => {
    await t.close()
  })

  it('answers GET /metrics 404, as for any path the service does not serve', async () => {
    const answer = await t.send('GET', '/metrics')
    expect(answer.status).toBe(404)
    expect(answer.json.errors[0].detail).toBe('No route matches /metrics')
  })

  it('still answers the probes', async () => {
    expect((await t.send('GET', '/health')).status).toBe(200)
    expect((await t.send('GET', '/ready')).status).toBe(200)
  })
})
