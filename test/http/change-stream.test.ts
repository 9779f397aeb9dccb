import { afterEach, describe, expect, it } from 'bun:test'
import { CHANGES, type ChangeRecord, described, idAt, latestChange, waitForChanges } from '../support/change-feed'
import { EventStreamReader, type StreamedEvent } from '../support/event-stream'
import { expectOneError } from '../support/expectations'
import { openTestApp, type TestApp, type TestAppOptions } from '../support/harness'
import { withTimeout } from '../support/process'

// GET /api/v1/changes with Accept: text/event-stream, over a real listening server: one event per
// change, from now or from a cursor, heartbeats, at most MAX_CHANGE_STREAMS (large backlogs, slow
// clients and the per-client cap: change-stream-pace.test.ts).

const EVENT_STREAM = 'text/event-stream'

let t: TestApp
let base: string
const readers: EventStreamReader[] = []

async function serve(options: TestAppOptions = {}): Promise<void> {
  t = await openTestApp(options)
  t.app.listen({ port: 0, hostname: '127.0.0.1' })
  base = `http://127.0.0.1:${t.app.server?.port}`
}

afterEach(async () => {
  for (const reader of readers.splice(0)) await reader.cancel()
  await t.app.stop(true)
  await t.close()
})

/** Opens a stream; its headers must come at once, before any change. */
async function open(query = '', headers: Record<string, string> = {}): Promise<EventStreamReader> {
  const response = await withTimeout(
    fetch(`${base}${CHANGES}${query}`, { headers: { accept: EVENT_STREAM, ...headers } }),
    'the headers of the stream',
    5_000,
  )
  expect(response.status).toBe(200)
  const reader = new EventStreamReader(response)
  readers.push(reader)
  return reader
}

const rename = (type: string, id: string, name: string) =>
  t.request('PATCH', `/api/v1/${type}/${id}`, { body: { data: { type, id, attributes: { name } } } })

/** An event exactly as the feed's page shows its change: id, event and one data line of the record. */
function expectEventOf(event: StreamedEvent | undefined, change: ChangeRecord | undefined): void {
  expect(change).toBeDefined()
  expect(event?.lines).toEqual([`id: ${change?.id}`, 'event: change', `data: ${event?.data}`])
  expect(JSON.parse(event?.data ?? '')).toEqual(change)
}

describe('GET /api/v1/changes as an event stream', () => {
  it('answers 200 text/event-stream at once, before there is any change', async () => {
    await serve()
    const response = await withTimeout(
      fetch(`${base}${CHANGES}`, { headers: { accept: EVENT_STREAM } }),
      'the headers of the stream',
      5_000,
    )
    readers.push(new EventStreamReader(response))
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toStartWith(EVENT_STREAM)
    expect(await latestChange(t)).toBeNull()
  })

  it('sends each change made after it opened, as id, event and data lines, and none from before', async () => {
    await serve()
    const author = await t.create('authors', { name: 'Before the stream' })
    const mark = idAt(await waitForChanges(t, null, 1), -1)
    const stream = await open()
    const book = await t.create('books', { name: 'Kindred', author_id: author })
    expect((await rename('authors', author, 'Octavia E. Butler')).status).toBe(200)
    expect((await t.request('DELETE', `/api/v1/books/${book}`)).status).toBe(204)
    const made = await waitForChanges(t, mark, 3)
    expect(made.map(described)).toEqual([`create books/${book}`, `update authors/${author}`, `delete books/${book}`])
    const events = await stream.events(3)
    for (const [i, event] of events.entries()) expectEventOf(event, made[i])
  })

  it('keeps the types of filter[type]', async () => {
    await serve()
    const stream = await open('?filter[type]=books')
    const author = await t.create('authors', { name: 'Filtered out' })
    const book = await t.create('books', { name: 'Kept', author_id: author })
    const [event] = await stream.events(1)
    expect(described(JSON.parse(event?.data ?? ''))).toBe(`create books/${book}`)
  })

  it('answers 400 for include=resource, which only pages take', async () => {
    await serve()
    const answer = await t.send('GET', `${CHANGES}?include=resource`, { headers: { accept: EVENT_STREAM } })
    expectOneError(answer, 400, { parameter: 'include' })
  })
})

describe('which answer Accept asks for', () => {
  const ask = (accept: string, method = 'GET') =>
    withTimeout(fetch(`${base}${CHANGES}`, { method, headers: { accept } }), `${method} with Accept: ${accept}`, 5_000)

  it('streams when text/event-stream is preferred by its q-value, or listed first among equals', async () => {
    await serve()
    for (const accept of ['text/event-stream, application/vnd.api+json;q=0.5', 'text/event-stream, */*']) {
      const response = await ask(accept)
      readers.push(new EventStreamReader(response))
      expect({ accept, type: response.headers.get('content-type') }).toEqual({
        accept,
        type: `${EVENT_STREAM}; charset=utf-8`,
      })
    }
  })

  it('answers the JSON:API document when the client lists it first, weighs it higher, or refuses the stream', async () => {
    await serve()
    const accepts = [
      'application/vnd.api+json, text/event-stream',
      'application/vnd.api+json, text/event-stream;q=0.1',
      'text/event-stream;q=0',
    ]
    for (const accept of accepts) {
      const response = await ask(accept)
      expect({ accept, status: response.status, body: await response.json() }).toEqual({
        accept,
        status: 200,
        body: { data: [], links: { next: `${CHANGES}?page%5Bafter%5D=0` }, meta: { latest: null } },
      })
    }
  })

  it("answers HEAD of a stream with a stream's headers, and ends", async () => {
    await serve()
    const response = await ask(EVENT_STREAM, 'HEAD')
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toStartWith(EVENT_STREAM)
    expect(await withTimeout(response.text(), 'the end of the HEAD answer', 5_000)).toBe('')
  })
})

describe('a stream resumed', () => {
  /** Writes three changes while no stream is open, after `seen`; returns them as the page shows them. */
  async function missed(author: string, seen: string): Promise<ChangeRecord[]> {
    for (const name of ['Missed once', 'Missed twice', 'Missed thrice']) {
      expect((await rename('authors', author, name)).status).toBe(200)
    }
    const changes = await waitForChanges(t, seen, 3)
    expect(changes.map(described)).toEqual(Array(3).fill(`update authors/${author}`))
    return changes
  }

  /** Reads exactly `expected`, then a change written after them, with nothing in between. */
  async function expectExactly(stream: EventStreamReader, expected: ChangeRecord[], author: string) {
    const events = await stream.events(expected.length)
    for (const [i, event] of events.entries()) expectEventOf(event, expected[i])
    expect((await rename('authors', author, 'Written after the resume')).status).toBe(200)
    const [after] = await waitForChanges(t, expected.at(-1)?.id ?? null, 1)
    expectEventOf(await stream.event(), after)
  }

  async function seenTwo(): Promise<{ author: string; seen: string }> {
    await serve()
    const first = await open()
    const author = await t.create('authors', { name: 'Seen' })
    expect((await rename('authors', author, 'Seen again')).status).toBe(200)
    const events = await first.events(2)
    await first.cancel()
    return { author, seen: events[1]?.id ?? '' }
  }

  it('by Last-Event-ID gets exactly the changes it missed, then the new ones', async () => {
    const { author, seen } = await seenTwo()
    const expected = await missed(author, seen)
    await expectExactly(await open('', { 'last-event-id': seen }), expected, author)
  })

  it('by page[after] gets exactly the changes it missed, page[after] over Last-Event-ID', async () => {
    const { author, seen } = await seenTwo()
    const expected = await missed(author, seen)
    const stream = await open(`?page[after]=${encodeURIComponent(seen)}`, { 'last-event-id': expected[1]?.id ?? '' })
    await expectExactly(stream, expected, author)
  })
})

describe('heartbeats (CHANGE_STREAM_HEARTBEAT)', () => {
  it('sends a comment line every second at 1 s while there is no change', async () => {
    await serve({ app: { changes: { heartbeatMs: 1000 } } })
    const stream = await open()
    // The opening block (at once), then heartbeats: a comment and no event, each within 1 s and some slack.
    for (let i = 0; i < 4; i++) {
      const lines = await stream.block(2_500)
      expect(lines?.some((line) => line.startsWith(':'))).toBe(true)
      expect(lines?.some((line) => line.startsWith('data:'))).toBe(false)
    }
  })
})

describe('MAX_CHANGE_STREAMS', () => {
  it('answers the stream past it 503 with Retry-After, pages still 200, and a new stream once one closed', async () => {
    await serve({ app: { changes: { maxStreams: 2 } } })
    const first = await open()
    await open('?filter[type]=books')
    const refused = await fetch(`${base}${CHANGES}`, { headers: { accept: EVENT_STREAM } })
    expect(refused.status).toBe(503)
    expect(refused.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/)
    const body = (await refused.json()) as { errors: unknown[] }
    expect(body.errors).toEqual([
      expect.objectContaining({ status: '503', title: 'Service Unavailable', detail: expect.stringMatching(/\S/) }),
    ])
    expect((await t.get(CHANGES)).status).toBe(200)
    await first.cancel()
    let status = 503
    for (const deadline = Date.now() + 5_000; status === 503 && Date.now() < deadline; await Bun.sleep(100)) {
      const again = await fetch(`${base}${CHANGES}`, { headers: { accept: EVENT_STREAM } })
      status = again.status
      if (status === 200) readers.push(new EventStreamReader(again))
      else await again.arrayBuffer()
    }
    expect(status).toBe(200)
  })
})
