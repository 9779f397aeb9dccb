import { afterAll, afterEach, describe, expect, it } from 'bun:test'
import { readFileSync } from 'node:fs'
import net from 'node:net'
import { parseTokenFile, TokenSet } from '../../src/http/access/api-tokens'
import { insertCatalogue } from '../support/bulk'
import { expectOneError } from '../support/expectations'
import { type Answer, JSON_API, openTestApp, type TestApp, type TestAppOptions } from '../support/harness'
import { removeTempDirs, stopChildren, WAIT_MS } from '../support/process'
import { startService } from '../support/service'

// Long answers (whole lists, records with all their related ids) hold one of MAX_LONG_ANSWERS
// slots, at most MAX_LONG_ANSWERS_PER_CLIENT of them per client, until they have been sent; past
// either, 503 with Retry-After. Answers of bounded size are never counted.

const sha256 = (token: string) => new Bun.CryptoHasher('sha256').update(token).digest('hex')
const ALICE = 'cat_alice-token-0123456789abcdefghijklmnopqrstuvw'
const BOB = 'cat_bob-token-0123456789abcdefghijklmnopqrstuvwxyz'

/** 3,000 books, 2,500 of them by author 1 (whose linkage alone is over 64 KB); author 5 has none. */
function seed(t: TestApp) {
  return insertCatalogue(t, {
    authors: ['Ada Quill', 'Bram Fenwick', 'Cora Lindqvist', 'Dell Marsh', 'Eve Unread'],
    collections: ['Northern Tales'],
    books: 3000,
    authorOf: (i) => (i % 6 === 5 ? 2 + (Math.floor(i / 6) % 3) : 1),
    collectionOf: () => 1,
  })
}

/** A GET whose answer is left unread: a client that has not read it yet, or has stopped reading. */
async function unread(t: TestApp, path: string, headers: Record<string, string> = {}): Promise<Response> {
  const response = await t.app.handle(
    new Request(`http://localhost${path}`, { headers: { accept: JSON_API, ...headers } }),
  )
  expect(response.status).toBe(200)
  expect(response.body).not.toBeNull()
  return response
}

function expectRefused(answer: Answer): void {
  expectOneError(answer, 503)
  expect(answer.headers.get('retry-after')).toBe('1')
  expect(answer.json.errors[0].detail).toContain('long answers')
}

let t: TestApp
/** The app to close after the test: closed once, since a second close would hand its PostgreSQL database back twice. */
let opened: TestApp | undefined
afterEach(async () => {
  if (opened?.app.server) await opened.app.stop(true)
  await opened?.close()
  opened = undefined
})

async function openEmpty(options: TestAppOptions): Promise<TestApp> {
  t = await openTestApp(options)
  opened = t
  return t
}

async function open(options: TestAppOptions): Promise<TestApp> {
  await seed(await openEmpty(options))
  return t
}

describe.each([
  ['on a read worker', 1],
  ['on the main thread', 0],
])('GET of whole lists, %s: at most MAX_LONG_ANSWERS in flight', (_, readWorkers) => {
  it('answers the one past the cap 503 with Retry-After, and the next once one has been read', async () => {
    await open({ readWorkers, app: { longAnswers: { total: 2, perClient: 2 } } })
    const first = await unread(t, '/api/v1/books')
    await unread(t, '/api/v1/books?sort=-name')
    expectRefused(await t.get('/api/v1/books'))
    expectRefused(await t.get('/api/v1/authors/1/books'))
    await first.arrayBuffer()
    expect((await t.get('/api/v1/books')).status).toBe(200)
  })

  it('gives the slot back when the client goes away (its stream is cancelled)', async () => {
    await open({ readWorkers, app: { longAnswers: { total: 1, perClient: 1 } } })
    const gone = await unread(t, '/api/v1/books?include=author')
    expectRefused(await t.get('/api/v1/books'))
    await gone.body?.cancel()
    expect((await t.get('/api/v1/books')).status).toBe(200)
    expect(t.app.decorator.longAnswers.count).toBe(0)
  })

  it('never counts a record, a page or a short list, which keep answering while the cap is reached', async () => {
    await open({ readWorkers, app: { longAnswers: { total: 1, perClient: 1 } } })
    await unread(t, '/api/v1/books')
    expect((await t.get('/api/v1/books/1')).status).toBe(200)
    expect((await t.get('/api/v1/books?page[size]=100&include=author')).json.data).toHaveLength(100)
    expect((await t.get('/api/v1/authors')).json.data).toHaveLength(5)
    // An author of no books: a record whose linkage turns out short.
    expect((await t.get('/api/v1/authors/5')).status).toBe(200)
    expect(t.app.decorator.longAnswers.count).toBe(1)
  })
})

describe('records and relationships whose answer turns out long', () => {
  it('count as long answers once they are: an author with 2,500 books, and their linkage', async () => {
    await open({ readWorkers: 1, app: { longAnswers: { total: 1, perClient: 1 } } })
    const record = await unread(t, '/api/v1/authors/1')
    expectRefused(await t.get('/api/v1/authors/1/relationships/books'))
    expectRefused(await t.get('/api/v1/authors/1'))
    await record.arrayBuffer()
    const linkage = await unread(t, '/api/v1/authors/1/relationships/books')
    expectRefused(await t.get('/api/v1/authors/1'))
    const text = await linkage.text()
    expect(JSON.parse(text).data).toHaveLength(2500)
    expect(t.app.decorator.longAnswers.count).toBe(0)
  })
})

describe('MAX_LONG_ANSWERS_PER_CLIENT', () => {
  it('counts per API token: one client past its share is refused, another is served', async () => {
    const tokens = new TokenSet(parseTokenFile(`alice read ${sha256(ALICE)}\nbob read ${sha256(BOB)}`))
    await open({ app: { tokens, longAnswers: { total: 4, perClient: 1 } } })
    const alice = { authorization: `Bearer ${ALICE}` }
    await unread(t, '/api/v1/books', alice)
    expectRefused(await t.get('/api/v1/books', alice))
    expect((await t.get('/api/v1/books', { authorization: `Bearer ${BOB}` })).status).toBe(200)
  })
})

/** `GET path` from `localAddress` over a raw connection: resolves with the socket once the status line is in. */
function openRaw(port: number, localAddress: string, path: string): Promise<{ socket: net.Socket; status: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress }, () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nAccept: ${JSON_API}\r\n\r\n`)
    })
    socket.once('data', (chunk: Buffer) => {
      // Read nothing more: the client stops reading, as a stalled one does.
      socket.pause()
      resolve({ socket, status: chunk.subarray(9, 12).toString() })
    })
    socket.on('error', reject)
  })
}

/**
 * 8,000 books of 1,000-character titles: a list of about 8 MB, more than the sockets of a client
 * that stops reading can take in (some 5 MB), so that its answer stays in flight.
 */
function seedLongTitles(t: TestApp) {
  return insertCatalogue(t, {
    authors: ['Ada Quill'],
    collections: [],
    books: 8000,
    authorOf: () => 1,
    collectionOf: () => null,
    titleOf: (i) => `${'Long title '.repeat(90)}${String(i).padStart(10, '0')}`,
  })
}

describe('over a real port', () => {
  it('counts clients by address, and gives the slot back when a client hangs up mid-answer', async () => {
    await seedLongTitles(await openEmpty({ readWorkers: 1, app: { longAnswers: { total: 2, perClient: 1 } } }))
    t.app.listen({ port: 0, hostname: '127.0.0.1' })
    const port = t.app.server?.port as number
    const first = await openRaw(port, '127.0.0.2', '/api/v1/books')
    expect(first.status).toBe('200')
    // The same address again: over its share; another address: served.
    expect((await openRaw(port, '127.0.0.2', '/api/v1/books')).status).toBe('503')
    const second = await openRaw(port, '127.0.0.3', '/api/v1/books')
    expect(second.status).toBe('200')
    expect((await openRaw(port, '127.0.0.4', '/api/v1/books')).status).toBe('503')
    first.socket.destroy()
    second.socket.destroy()
    const deadline = Date.now() + WAIT_MS
    while (t.app.decorator.longAnswers.count > 0 && Date.now() < deadline) await Bun.sleep(20)
    expect(t.app.decorator.longAnswers.count).toBe(0)
    const after = await fetch(`http://127.0.0.1:${port}/api/v1/books`, { headers: { accept: JSON_API } })
    expect(after.status).toBe(200)
    expect(((await after.json()) as { data: unknown[] }).data).toHaveLength(8000)
  })

  it('gives the slot of a HEAD back: its body is never sent', async () => {
    await open({ readWorkers: 1, app: { longAnswers: { total: 1, perClient: 1 } } })
    t.app.listen({ port: 0, hostname: '127.0.0.1' })
    const base = `http://127.0.0.1:${t.app.server?.port}`
    for (let i = 0; i < 3; i++) {
      const head = await fetch(`${base}/api/v1/books`, { method: 'HEAD', headers: { accept: JSON_API } })
      expect(head.status).toBe(200)
    }
    const deadline = Date.now() + WAIT_MS
    while (t.app.decorator.longAnswers.count > 0 && Date.now() < deadline) await Bun.sleep(20)
    expect(t.app.decorator.longAnswers.count).toBe(0)
  })
})

/** VmRSS of a process, in KiB. */
function rssKb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1])
}

/** One GET over a connection of its own from `localAddress`, read to its end: the status. */
function readFrom(port: number, localAddress: string, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let status = ''
    const socket = net.connect({ port, host: '127.0.0.1', localAddress }, () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nAccept: ${JSON_API}\r\nConnection: close\r\n\r\n`)
    })
    socket.on('data', (chunk: Buffer) => {
      if (status === '') status = chunk.subarray(9, 12).toString()
    })
    socket.on('close', () => resolve(status))
    socket.on('error', reject)
  })
}

describe('100 clients at once, each reading the whole list of 20,000 books with include, on a service process', () => {
  afterAll(async () => {
    await stopChildren()
    removeTempDirs()
  })

  it('keeps the service within 300 MiB of its idle memory, and GET /books/1 answering', async () => {
    const service = await startService()
    const { port } = new URL(service.origin)
    await insertCatalogue(
      { database: { kind: 'sqlite', path: service.dbPath } },
      {
        authors: Array.from({ length: 100 }, (_, i) => `Author ${i + 1}`),
        collections: Array.from({ length: 20 }, (_, i) => `Collection ${i + 1}`),
        books: 20_000,
        authorOf: (i) => (i % 100) + 1,
        collectionOf: (i) => (i % 10 === 9 ? null : (i % 20) + 1),
      },
    )
    const path = '/api/v1/books?include=author,book_collection'
    // Once, so that the read workers have started and the database is in the page cache: idle.
    expect(await readFrom(Number(port), '127.0.0.1', path)).toBe('200')
    await Bun.sleep(500)
    const pid = service.child.proc.pid
    const idle = rssKb(pid)
    let peak = idle
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssKb(pid))
    }, 20)
    const load = Promise.all(Array.from({ length: 100 }, (_, i) => readFrom(Number(port), `127.0.1.${i + 1}`, path)))
    const single = await fetch(`${service.origin}/api/v1/books/1`, { headers: { accept: JSON_API } })
    const statuses = await load
    clearInterval(sampler)
    peak = Math.max(peak, rssKb(pid))
    expect(single.status).toBe(200)
    expect(statuses.filter((s) => s !== '200' && s !== '503')).toEqual([])
    expect(statuses.filter((s) => s === '200').length).toBeGreaterThan(0)
    expect((peak - idle) / 1024).toBeLessThan(300)
  })
})
