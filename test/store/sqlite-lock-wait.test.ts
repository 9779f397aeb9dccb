import { Database } from 'bun:sqlite'
import { afterEach, describe, expect, it } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { resources } from '../../src/resources/registry'
import { StoreUnavailableError } from '../../src/store/faults'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'
import { type Answer, openTestApp, type SqliteTestApp } from '../support/harness'

/*
 * Another process (here: a second connection to the file) holds the write lock. The store's writes
 * wait for it on timers, so the event loop, and with it every read and every other request of the
 * process, goes on; a write that waits past BUSY_TIMEOUT fails busy and stores nothing.
 */

const authors = resources.get('authors')
/** How late a timer may fire on a busy shared machine and still count as "the loop was free". */
const PROMPT_MS = 100

let dirs: string[] = []
/** Stores a test closed itself. */
const closed = new WeakSet<SqliteStore>()
let closers: (() => unknown)[] = []

afterEach(async () => {
  for (const close of closers.reverse()) await close()
  closers = []
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  dirs = []
})

function openStore(busyTimeoutMs: number): { store: SqliteStore; other: Database } {
  const dir = mkdtempSync(join(tmpdir(), 'catalogue-lock-wait-'))
  dirs.push(dir)
  const path = join(dir, 'catalogue.db')
  const store = SqliteStore.open(path, resources, { busyTimeoutMs })
  const other = new Database(path)
  closers.push(() => closed.has(store) || store.close())
  closers.push(() => {
    if (other.inTransaction) other.run('ROLLBACK')
    other.close()
  })
  return { store, other }
}

/** Milliseconds until a 0 ms timer fires: what a blocked event loop would stretch. */
async function timerDelay(): Promise<number> {
  const started = performance.now()
  await new Promise((resolve) => setTimeout(resolve, 0))
  return performance.now() - started
}

/**
 * Watches the event loop: a timer rescheduled every millisecond, recording the longest gap between
 * two ticks. `stop` returns that gap in milliseconds.
 */
function watchLoop(): { stop(): number } {
  let last = performance.now()
  let longest = 0
  let timer: ReturnType<typeof setTimeout>
  const tick = () => {
    const now = performance.now()
    longest = Math.max(longest, now - last)
    last = now
    timer = setTimeout(tick, 1)
  }
  timer = setTimeout(tick, 1)
  return {
    stop() {
      clearTimeout(timer)
      return Math.max(longest, performance.now() - last)
    },
  }
}

/** Whether `promise` has settled after `ms` milliseconds. */
async function settledWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let settled = false
  promise.then(
    () => {
      settled = true
    },
    () => {
      settled = true
    },
  )
  await Bun.sleep(ms)
  return settled
}

describe('SqliteStore writes while another connection holds the write lock', () => {
  it('stay pending while reads and timers answer at once, and complete when the lock is released', async () => {
    const { store, other } = openStore(5_000)
    const before = await store.create(authors, { attributes: { name: 'Before' }, toOne: {} })
    if (!before.ok) throw new Error('create failed')
    other.run('BEGIN IMMEDIATE')
    const write = store.create(authors, { attributes: { name: 'Waiting' }, toOne: {} })

    for (let round = 0; round < 5; round++) {
      expect(await timerDelay()).toBeLessThan(PROMPT_MS)
      const started = performance.now()
      expect((await store.find(authors, before.record.id))?.attributes.name).toBe('Before')
      expect(performance.now() - started).toBeLessThan(PROMPT_MS)
    }
    expect(await settledWithin(write, 200)).toBe(false)

    other.run('COMMIT')
    const done = await write
    if (!done.ok) throw new Error('create failed')
    expect((await store.find(authors, done.record.id))?.attributes.name).toBe('Waiting')
  })

  it('joins the writes queued while it waits into the one commit after the lock', async () => {
    const { store, other } = openStore(5_000)
    other.run('BEGIN IMMEDIATE')
    const first = store.create(authors, { attributes: { name: 'First' }, toOne: {} })
    await Bun.sleep(30)
    const second = store.create(authors, { attributes: { name: 'Second' }, toOne: {} })
    await Bun.sleep(30)
    other.run('COMMIT')
    const names = (await Promise.all([first, second])).map((r) => (r.ok ? r.record.attributes.name : null))
    expect(names).toEqual(['First', 'Second'])
    expect(
      (await store.list(authors, { filters: [], sort: [{ field: 'id', descending: false }], limit: 10 })).length,
    ).toBe(2)
  })

  it('fails busy after BUSY_TIMEOUT, without blocking the loop meanwhile, and stores nothing', async () => {
    const { store, other } = openStore(300)
    other.run('BEGIN IMMEDIATE')
    const started = performance.now()
    const write = store.create(authors, { attributes: { name: 'Locked out' }, toOne: {} })
    const loop = watchLoop()
    const error = await write.then(
      () => null,
      (error: unknown) => error,
    )
    const slowest = loop.stop()
    expect(error).toBeInstanceOf(StoreUnavailableError)
    expect(error).toMatchObject({ reason: 'busy', code: 'SQLITE_BUSY', retryAfterSeconds: 1 })
    expect(performance.now() - started).toBeGreaterThanOrEqual(290)
    expect(slowest).toBeLessThan(PROMPT_MS)
    other.run('ROLLBACK')
    expect(await store.list(authors, { filters: [], sort: [{ field: 'id', descending: false }], limit: 10 })).toEqual(
      [],
    )
  })

  it('closes once the write it waits for has its lock, committing it', async () => {
    const { store, other } = openStore(5_000)
    other.run('BEGIN IMMEDIATE')
    const write = store.create(authors, { attributes: { name: 'At close' }, toOne: {} })
    await Bun.sleep(20)
    closed.add(store)
    const closing = store.close()
    expect(await settledWithin(closing, 50)).toBe(false)
    other.run('COMMIT')
    await closing
    expect((await write).ok).toBe(true)
    expect(other.query('SELECT name FROM authors').all()).toEqual([{ name: 'At close' }])
  })
})

describe('POST while another process holds the write lock', () => {
  let t: SqliteTestApp | undefined

  afterEach(async () => {
    await t?.close()
    t = undefined
  })

  it('answers GET at once meanwhile, then 503 with Retry-After 1 after BUSY_TIMEOUT, and stores nothing', async () => {
    const app = await openTestApp({ backend: 'sqlite', busyTimeoutMs: 300 })
    t = app
    const author = await app.create('authors', { name: 'Known' })
    // Once before the lock: the first request pays for warming up, not for waiting.
    expect((await app.get(`/api/v1/authors/${author}`)).status).toBe(200)
    const other = new Database(app.dbPath)
    try {
      other.run('BEGIN IMMEDIATE')
      const post = app.post('/api/v1/authors', { data: { type: 'authors', attributes: { name: 'Locked out' } } })
      const started = performance.now()
      expect((await app.get(`/api/v1/authors/${author}`)).status).toBe(200)
      expect(performance.now() - started).toBeLessThan(PROMPT_MS)
      const answer: Answer = await post
      expect(answer.status).toBe(503)
      expect(answer.headers.get('retry-after')).toBe('1')
      expect(answer.json.errors[0].detail).toBe(
        'The database is unavailable (locked by another connection); try again shortly',
      )
      other.run('ROLLBACK')
      expect((await app.stored('authors')).map((row) => row.name)).toEqual(['Known'])
    } finally {
      if (other.inTransaction) other.run('ROLLBACK')
      other.close()
    }
  })
})
