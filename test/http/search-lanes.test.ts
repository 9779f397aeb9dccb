import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { SQL } from 'bun'
import { insertCatalogue } from '../support/bulk'
import { JSON_API, openTestApp, type TestApp } from '../support/harness'

// A search found heavy (src/http/search-lanes.ts) runs in a lane of its own, one at a time, and
// never holds the others; a search whose client goes away stops. On a catalogue of 100,000 books
// whose titles hold some of the one-letter words `a e i o u k` and three words of sixteen,
// `a e i o u k` sorted by name (2,731 matches, as whole words or as prefixes) takes 80-350 ms on
// either backend, `zephyr` (one book) a few.

const WORDS = 'amber echo iris olive umber kite arch elm ivy oak urn keel ash ember ink opal'.split(' ')
const LETTERS = 'a e i o u k'.split(' ')
const BOOKS = 100_000
const HEAVY = '/api/v1/books?filter[search]=a%20e%20i%20o%20u%20k&sort=name&page[size]=20'
const LIGHT = '/api/v1/books?filter[search]=zephyr&page[size]=20'

/** Book `i`'s title: about half of the one-letter words, picked by its number, then three words and its number. */
function titleOf(i: number): string {
  if (i === 50_000) return 'Zephyr'
  const letters = LETTERS.filter((_, bit) => ((i * 2654435761) >>> (bit * 3)) & 1)
  return `${letters.join(' ')} ${WORDS[i % 16]} ${WORDS[(i * 5) % 16]}${i % 97} ${WORDS[(i * 11) % 16]} ${i + 1}`
}

let t: TestApp
let origin: string
/** Another connection to the PostgreSQL database, to watch its statements; null on SQLite. */
let watcher: SQL | null = null

/**
 * The cost from which a search is heavy here: below the heavy search's on a quick machine (28 ms
 * alone on PostgreSQL), well above the light one's on a loaded one (a few ms).
 */
const HEAVY_MS = 15

beforeAll(async () => {
  t = await openTestApp({ app: { heavySearchMs: HEAVY_MS } })
  await insertCatalogue(t, {
    authors: Array.from({ length: 2000 }, (_, i) => `${WORDS[i % 16]}son ${WORDS[(i * 7) % 16]}ley ${i}`),
    collections: ['Kestrel Cycle', 'Amber Saga'],
    books: BOOKS,
    authorOf: (i) => 1 + ((i * 13) % 2000),
    collectionOf: (i) => (i % 3 === 0 ? 1 + (i % 2) : null),
    titleOf,
  })
  if (t.database.kind === 'postgres') {
    watcher = new SQL(t.database.url, { max: 1 })
    // As autovacuum would soon after a bulk load: the planner's statistics.
    await watcher`ANALYZE`
  }
  t.app.listen({ port: 0, hostname: '127.0.0.1' })
  origin = `http://127.0.0.1:${t.app.server?.port}`
}, 60_000)

afterAll(async () => {
  await watcher?.close()
  await t.app.stop(true)
  await t.close()
})

/** A search asked over a connection of its own, timed to its last byte. */
async function timed(path: string, signal?: AbortSignal): Promise<{ status: number; ms: number; done: number }> {
  const started = performance.now()
  const response = await fetch(origin + path, { headers: { accept: JSON_API }, signal })
  await response.arrayBuffer()
  const done = performance.now()
  return { status: response.status, ms: done - started, done }
}

/** The median of three: a search's time alone, once it is known. */
async function alone(path: string): Promise<number> {
  const times = [await timed(path), await timed(path), await timed(path)]
  for (const { status } of times) expect(status).toBe(200)
  return times.map((time) => time.ms).sort((a, b) => a - b)[1] as number
}

/** PostgreSQL: the statements running on the test database now, but the watcher's. */
async function runningStatements(): Promise<number> {
  const [row] = await (watcher as SQL)`SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()`
  return row?.n as number
}

describe('GET /api/v1/books?filter[search]=... beside heavy searches', () => {
  it('answers a light search while four heavy ones wait their turn, and runs the heavy ones one at a time', async () => {
    const heavyMs = await alone(HEAVY)
    const lightMs = await alone(LIGHT)
    // The premise: the one is heavy beside the other (by far on a quiet machine; a loaded one
    // slows a few-ms search most).
    expect(heavyMs).toBeGreaterThan(2 * lightMs)
    expect(heavyMs).toBeGreaterThan(HEAVY_MS)

    const heavy = Array.from({ length: 4 }, () => timed(HEAVY))
    let most = 0
    let watching = watcher !== null
    const watched = (async () => {
      while (watching) {
        most = Math.max(most, await runningStatements())
        await Bun.sleep(2)
      }
    })()
    await Bun.sleep(20)
    const light = await timed(LIGHT)
    const answers = await Promise.all(heavy)
    watching = false
    await watched

    expect(light.status).toBe(200)
    for (const { status } of answers) expect(status).toBe(200)
    // Not behind the heavy ones: at least two of them were still to come when it was answered.
    expect(answers.filter(({ done }) => done > light.done).length).toBeGreaterThanOrEqual(2)
    expect(light.ms).toBeLessThan(heavyMs)
    // One heavy search's statement at a time, and perhaps the light one's.
    if (watcher) expect(most).toBeLessThanOrEqual(2)
  }, 30_000)

  it('stops a heavy search whose client went away, and never starts those waiting', async () => {
    // Eight clients ask for it and go away while the first runs.
    const heavyMs = await alone(HEAVY)
    const clients = Array.from({ length: 8 }, () => new AbortController())
    const asked = clients.map((client) => timed(HEAVY, client.signal).catch((error: Error) => error.name))
    // Well inside the first one's run: a heavy search can take under 30 ms on a quick machine.
    await Bun.sleep(Math.max(5, Math.min(30, heavyMs / 4)))
    const aborted = performance.now()
    for (const client of clients) client.abort()
    expect(await Promise.all(asked)).toEqual(clients.map(() => 'AbortError'))

    if (watcher) {
      // Cancelled at once: no statement of theirs runs for as long as one search alone, where one
      // is long enough for a cancel's round trip (some tens of ms) to tell; at the least, far less
      // than the eight one after another.
      while ((await runningStatements()) > 0) await Bun.sleep(2)
      expect(performance.now() - aborted).toBeLessThan(heavyMs >= 200 ? heavyMs / 2 : 4 * heavyMs)
    }
    // The next heavy search waits for none of them, at most for the statement one was in (SQLite
    // cannot stop within one) and a new read thread: 2-4 times its time alone on a loaded
    // machine, against 8-9 when the eight run to their end first.
    const next = await timed(HEAVY)
    expect(next.status).toBe(200)
    expect(next.ms).toBeLessThan(5 * heavyMs)
  }, 30_000)
})
