import { afterEach, describe, expect, it } from 'bun:test'
import { readFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { type BulkPlan, insertCatalogue } from '../support/bulk'
import { CHANGES, type ChangeRecord, changesAfter } from '../support/change-feed'
import { EventStreamReader } from '../support/event-stream'
import { openTestApp, type TestApp, type TestAppOptions } from '../support/harness'
import { withTimeout } from '../support/process'

// GET /api/v1/changes as an event stream when the work is large: a backlog of any size and any
// single write reach every stream at the pace its client reads; a client that stops reading loses
// its stream and its connection; one client cannot hold every stream.

const EVENT_STREAM = 'text/event-stream'

let t: TestApp
let base: string
let port: number
const readers: EventStreamReader[] = []
const sockets: Socket[] = []

async function serve(options: TestAppOptions = {}): Promise<void> {
  t = await openTestApp({ maxPageSize: 1000, ...options })
  t.app.listen({ port: 0, hostname: '127.0.0.1' })
  port = t.app.server?.port ?? 0
  base = `http://127.0.0.1:${port}`
}

afterEach(async () => {
  for (const reader of readers.splice(0)) await reader.cancel()
  for (const socket of sockets.splice(0)) socket.destroy()
  await t.app.stop(true)
  await t.close()
})

/** `books` books, each by one of 50 authors, in one of 20 collections: a change each, written at once. */
function catalogue(books: number, collectionOf: BulkPlan['collectionOf'] = (i) => (i % 20) + 1): BulkPlan {
  const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix} ${i + 1}`)
  return {
    authors: names('Author', 50),
    collections: names('Series', 20),
    books,
    authorOf: (i) => (i % 50) + 1,
    collectionOf,
  }
}

async function open(query = '', headers: Record<string, string> = {}): Promise<EventStreamReader> {
  const response = await withTimeout(
    fetch(`${base}${CHANGES}${query}`, { headers: { accept: EVENT_STREAM, ...headers } }),
    'the headers of the stream',
    10_000,
  )
  expect(response.status).toBe(200)
  const reader = new EventStreamReader(response)
  readers.push(reader)
  return reader
}

/** The ids of the next `count` events of a stream. */
async function idsOf(reader: EventStreamReader, count: number): Promise<string[]> {
  const ids: string[] = []
  while (ids.length < count) ids.push((await reader.event(20_000)).id)
  return ids
}

const idsAfter = async (cursor: string | null) =>
  (await changesAfter(t, cursor, '&page[size]=1000')).map((change: ChangeRecord) => change.id)

describe('a change stream far behind', () => {
  it('gets every one of 10,000 changes from the start of the feed, once and in order', async () => {
    await serve()
    await insertCatalogue(t, catalogue(9_930))
    const feed = await idsAfter(null)
    expect(feed).toHaveLength(10_000)
    const stream = await open('?page[after]=0')
    expect(await idsOf(stream, feed.length)).toEqual(feed)
  }, 60_000)

  it('feeds 200 streams, each 8,000 behind at its own position, every change after it, and answers requests meanwhile', async () => {
    await serve({ app: { changes: { maxStreamsPerClient: 200 } } })
    await insertCatalogue(t, catalogue(9_930))
    const feed = await idsAfter(null)
    expect(feed).toHaveLength(10_000)
    const starts = Array.from({ length: 200 }, (_, i) => i * 7)
    let done = 0
    const reading = Promise.all(
      starts.map(async (start) => {
        const response = await fetch(`${base}${CHANGES}?page[after]=${feed[start]}`, {
          headers: { accept: EVENT_STREAM },
        })
        const ids = await eventIds(response, feed.length - start - 1)
        done++
        return ids
      }),
    )
    // Requests one after another while the streams catch up: each answered, the first before every stream is done.
    const doneWhenAnswered: number[] = []
    for (let i = 0; i < 5; i++) {
      expect((await t.get('/api/v1/books/1')).status).toBe(200)
      doneWhenAnswered.push(done)
    }
    expect(doneWhenAnswered[0]).toBeLessThan(starts.length)
    for (const [i, ids] of (await reading).entries()) expect(ids).toEqual(feed.slice((starts[i] ?? 0) + 1))
  }, 120_000)
})

/** The ids of a stream's first `count` events, read as they come (a light reader: 200 streams share this process). */
async function eventIds(response: Response, count: number): Promise<string[]> {
  expect(response.status).toBe(200)
  const reader = (response.body as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  const ids: string[] = []
  let rest = ''
  try {
    while (ids.length < count) {
      const read = await withTimeout(reader.read(), 'the next events of the stream', 30_000)
      if (read.done) throw new Error(`the stream ended after ${ids.length} of ${count} events`)
      const text = rest + decoder.decode(read.value, { stream: true })
      const end = text.lastIndexOf('\n')
      for (const match of text.slice(0, end + 1).matchAll(/^id: (.+)$/gm)) ids.push(match[1] ?? '')
      rest = text.slice(end + 1)
    }
  } finally {
    await reader.cancel().catch(() => {})
  }
  return ids
}

describe('a change stream through one large write', () => {
  it('gives three streams the 8,001 changes of deleting a collection of 8,000 books', async () => {
    await serve()
    await insertCatalogue(
      t,
      catalogue(8_000, () => 1),
    )
    const before = (await idsAfter(null)).at(-1) ?? null
    const streams = await Promise.all([open(), open(), open('?filter[type]=books')])
    expect((await t.request('DELETE', '/api/v1/book_collections/1')).status).toBe(204)
    const changes = await changesAfter(t, before, '&page[size]=1000')
    expect(changes).toHaveLength(8_001)
    const ids = changes.map((change) => change.id)
    const bookIds = changes
      .filter((change) => change.relationships.resource.data.type === 'books')
      .map((change) => change.id)
    expect(bookIds).toHaveLength(8_000)
    expect(await idsOf(streams[0] as EventStreamReader, ids.length)).toEqual(ids)
    expect(await idsOf(streams[1] as EventStreamReader, ids.length)).toEqual(ids)
    expect(await idsOf(streams[2] as EventStreamReader, bookIds.length)).toEqual(bookIds)
  }, 60_000)
})

/** The state of the service's side of a client's connection (/proc/net/tcp): '01' established, or null once gone. */
function serverSideState(clientPort: number): string | null {
  const hex = (n: number) => n.toString(16).toUpperCase().padStart(4, '0')
  const local = `0100007F:${hex(port)}`
  const remote = `0100007F:${hex(clientPort)}`
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n')) {
    const fields = line.trim().split(/\s+/)
    if (fields[1] === local && fields[2] === remote) return fields[3] ?? null
  }
  return null
}

/** A client that asks for a stream from the feed's start, then reads nothing past its first bytes (paused). */
async function silentClient(): Promise<Socket> {
  const socket = connect(port, '127.0.0.1')
  sockets.push(socket)
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  socket.write(`GET ${CHANGES}?page[after]=0 HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: ${EVENT_STREAM}\r\n\r\n`)
  // Its answer begun: the stream is its own before anyone probes for it (a probe that came first
  // took the one stream allowed, and this client got the 503).
  const first = await new Promise<string>((resolve) =>
    socket.once('data', (chunk: Buffer) => resolve(chunk.toString())),
  )
  socket.pause()
  if (!first.startsWith('HTTP/1.1 200')) throw new Error(`the stream was refused: ${first.slice(0, 40)}`)
  return socket
}

/** Whether the one stream the service allows (MAX_CHANGE_STREAMS=1) is held: another is refused. */
async function held(): Promise<boolean> {
  const probe = await fetch(`${base}${CHANGES}`, { headers: { accept: EVENT_STREAM } })
  if (probe.status === 200) await new EventStreamReader(probe).cancel()
  else await probe.arrayBuffer()
  return probe.status === 503
}

describe('a client that stops reading', () => {
  it('loses its stream and its connection once it has left the stall time pass without reading', async () => {
    await serve({ app: { changes: { stallMs: 1_000, maxStreams: 1 } } })
    // About 10 MB of events: more than the kernel's buffers of one connection take.
    await insertCatalogue(t, catalogue(80_000))
    const socket = await silentClient()
    const established = () => serverSideState(socket.localPort ?? 0) === '01'
    for (const deadline = Date.now() + 5_000; !(await held()) && Date.now() < deadline; ) await Bun.sleep(20)
    expect(await held()).toBe(true)
    expect(established()).toBe(true)
    for (const deadline = Date.now() + 20_000; (await held()) && Date.now() < deadline; ) await Bun.sleep(100)
    expect(await held()).toBe(false)
    for (const deadline = Date.now() + 5_000; established() && Date.now() < deadline; ) await Bun.sleep(100)
    expect(established()).toBe(false)
  }, 60_000)

  it('keeps a client that reads slowly through the same backlog until it has every change', async () => {
    await serve({ app: { changes: { stallMs: 1_000 } } })
    await insertCatalogue(t, catalogue(30_000))
    const feed = await idsAfter(null)
    const stream = await open('?page[after]=0')
    const ids: string[] = []
    while (ids.length < feed.length) {
      ids.push(...(await idsOf(stream, Math.min(500, feed.length - ids.length))))
      await Bun.sleep(10)
    }
    expect(ids).toEqual(feed)
  }, 120_000)
})

describe('MAX_CHANGE_STREAMS_PER_CLIENT', () => {
  it('answers a client past it 503 with Retry-After, while another client still gets a stream', async () => {
    await serve({ app: { changes: { maxStreamsPerClient: 2 }, trustedProxies: ['127.0.0.1'] } })
    const from = (address: string) => ({ 'x-forwarded-for': address })
    await open('', from('203.0.113.5'))
    await open('?filter[type]=books', from('203.0.113.5'))
    const refused = await fetch(`${base}${CHANGES}`, { headers: { accept: EVENT_STREAM, ...from('203.0.113.5') } })
    expect(refused.status).toBe(503)
    expect(refused.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/)
    const body = (await refused.json()) as { errors: { detail: string }[] }
    expect(body.errors[0]?.detail).toContain('MAX_CHANGE_STREAMS_PER_CLIENT')
    await open('', from('203.0.113.6'))
    expect((await t.get(CHANGES)).status).toBe(200)
  })
})
