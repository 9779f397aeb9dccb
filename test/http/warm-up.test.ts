import { afterEach, describe, expect, it } from 'bun:test'
import { warmUpSearches } from '../../src/http/warm-up'
import { resources } from '../../src/resources/registry'
import { openTestApp, type TestApp } from '../support/harness'
import { find, scrape } from '../support/prometheus'

/*
 * What the first search after a start would find cold is done before the service listens
 * (src/http/warm-up.ts; serve passes warmUp). How much it saves is the bench's to say
 * (`bun run bench -- first-search`); these say what it does and that no client sees it.
 */

let t: TestApp | undefined
afterEach(async () => {
  await t?.close()
  t = undefined
})

describe('the warm-up before the service listens', () => {
  it('searches each searchable type for a word no catalogue holds, one record a page', () => {
    const searches = warmUpSearches(resources, '/api/v1')
    expect(searches.map((search) => search.type)).toEqual(['authors', 'book_collections', 'books'])
    for (const search of searches) {
      expect(search.op).toBe('list')
      const url = new URL(search.url)
      expect(url.pathname).toBe(`/api/v1/${search.type}`)
      expect(url.searchParams.get('filter[search]')).toMatch(/^[a-z]+$/)
      expect(url.searchParams.get('page[size]')).toBe('1')
    }
  })

  it('starts one read thread before it settles, where there are read threads, and the others after', async () => {
    t = await openTestApp({ backend: 'sqlite', readWorkers: 2, app: { warmUp: true } })
    const reads = t.app.decorator.reads
    expect(reads).not.toBeNull()
    await t.app.decorator.warmedUp
    expect(reads?.started).toBe(1)
    // The others begin a turn later, once the service listens.
    await Bun.sleep(1)
    expect(reads?.started).toBe(2)
    // The first search is answered by a thread already running.
    expect((await t.get('/api/v1/books?filter[search]=hobbit')).status).toBe(200)
  })

  it('starts none without it: the threads start with the first read that needs one', async () => {
    t = await openTestApp({ backend: 'sqlite', readWorkers: 2 })
    await t.app.decorator.warmedUp
    expect(t.app.decorator.reads?.started).toBe(0)
    expect((await t.get('/api/v1/books?filter[search]=hobbit')).status).toBe(200)
    expect(t.app.decorator.reads?.started).toBe(2)
  })

  it('settles on either backend, and is no client request and no store call the metrics count', async () => {
    t = await openTestApp({ app: { warmUp: true } })
    await t.app.decorator.warmedUp
    const samples = await scrape(t)
    const total = (name: string, counted: (labels: Readonly<Record<string, string>>) => boolean = () => true) =>
      find(samples, name)
        .filter((sample) => counted(sample.labels))
        .reduce((sum, sample) => sum + sample.value, 0)
    expect(total('catalogue_database_calls_total')).toBe(0)
    // Only the scrape itself, which is counted once answered.
    expect(total('http_request_duration_seconds_count', (labels) => labels.route !== '/metrics')).toBe(0)
    // And after it, a client's search is counted as any request is.
    expect((await t.get('/api/v1/books?filter[search]=hobbit')).status).toBe(200)
    const after = await scrape(t)
    expect(find(after, 'http_request_duration_seconds_count', { route: '/api/v1/books' })[0]?.value).toBe(1)
  })
})
