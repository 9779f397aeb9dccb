import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { closeSync, mkdtempSync, openSync, rmSync, truncateSync, writeFileSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../../src/http/app'
import { createLogger } from '../../src/logger'
import { resources } from '../../src/resources/registry'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'
import type { Store } from '../../src/store/store'
import { type Answer, JSON_API, openTestApp, type SqliteTestApp, type TestApp } from '../support/harness'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/*
 * Faults of the database, made real: a tmpfs that fills up, an immutable WAL file, a lock another
 * connection holds, a file cut short under a streaming list. The mounts and file attributes need
 * root; where they cannot be set the tests fail rather than skip.
 */

/** Runs a system command; a failure fails the test. */
function run(...command: string[]): void {
  const result = Bun.spawnSync(command, { stdout: 'pipe', stderr: 'pipe' })
  if (result.exitCode !== 0) {
    throw new Error(`${command.join(' ')} failed (exit ${result.exitCode}): ${result.stderr.toString().trim()}`)
  }
}

type LogLine = Record<string, unknown> & { msg: string; level: string }

function logLines(t: TestApp, msg: string): LogLine[] {
  return t.logs.map((line) => JSON.parse(line) as LogLine).filter((line) => line.msg === msg)
}

/** A 1,000-character book name, distinct per `n`, so that a few writes fill a small disk. */
function bookName(n: number): string {
  return `Book ${n} `.padEnd(1000, 'x')
}

function postBook(t: TestApp, name: string, author: string): Promise<Answer> {
  return t.post('/api/v1/books', { data: { type: 'books', attributes: { name, author_id: author } } })
}

/** What a 503 for a fault of the database must look like. */
function expectUnavailable(answer: Answer, description: string, retryAfter: string): void {
  expect(answer.status).toBe(503)
  expect(answer.headers.get('retry-after')).toBe(retryAfter)
  expect(answer.headers.get('content-type')).toBe('application/vnd.api+json; charset=utf-8')
  expect(answer.json).toEqual({
    errors: [
      {
        status: '503',
        title: 'Service Unavailable',
        detail: `The database is unavailable (${description}); try again shortly`,
      },
    ],
  })
}

/**
 * Writes to `path` until the file system has no byte left. A write that failed on a full disk
 * leaves the frames it managed to write at the end of the WAL, where a smaller write still fits:
 * so the WAL is checkpointed away first (see below) and then every byte taken.
 */
function fillUp(path: string): void {
  const fd = openSync(path, 'w')
  try {
    for (const size of [64 * 1024, 4096, 512, 1]) {
      const chunk = Buffer.alloc(size)
      try {
        for (;;) writeSync(fd, chunk)
      } catch {
        // ENOSPC at this size: go on with smaller writes to take the last bytes.
      }
    }
  } finally {
    closeSync(fd)
  }
}

describe('a full disk', () => {
  let mount: string
  let mounted = false
  let t: SqliteTestApp
  let author: string
  const filler = () => join(mount, 'filler')
  /** Names of the books answered 201 and 503, in order. */
  const acknowledged: string[] = []
  const refused: string[] = []
  let full: Answer
  /** How many requests were answered 503. */
  let failures = 0
  const expectFull = (answer: Answer) => {
    expectUnavailable(answer, 'disk full', '5')
    failures++
  }

  beforeAll(async () => {
    mount = mkdtempSync(join(tmpdir(), 'catalogue-full-'))
    run('mount', '-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', mount)
    mounted = true
    // Half the disk, for an operator to delete and so give the space back.
    writeFileSync(filler(), Buffer.alloc(1024 * 1024))
    t = await openTestApp({ backend: 'sqlite', parent: mount, logLevel: 'info' })
    author = await t.create('authors', { name: 'Filler' })
    for (let n = 0; n < 2000; n++) {
      const answer = await postBook(t, bookName(n), author)
      if (answer.status !== 201) {
        full = answer
        refused.push(bookName(n))
        // Every later write must need new space: empty the WAL into the file (the filler's space
        // lends the room for that), then take every byte the disk has left.
        rmSync(filler())
        const raw = new Database(t.dbPath)
        raw.run('PRAGMA wal_checkpoint(TRUNCATE)')
        raw.close()
        fillUp(filler())
        return
      }
      acknowledged.push(bookName(n))
    }
    throw new Error('2,000 writes of 1,000 characters did not fill a 2 MiB disk')
  })

  afterAll(async () => {
    await t?.close()
    if (mounted) run('umount', mount)
    rmSync(mount, { recursive: true, force: true })
  })

  it('answers the write that finds it full 503 with Retry-After and a JSON:API error, not 500', () => {
    expect(acknowledged.length).toBeGreaterThan(0)
    expectFull(full)
  })

  it('answers 503 to every kind of write while it stays full: create, update, delete, relationships, atomic', async () => {
    const book = (await t.get(`/api/v1/books?page[size]=1`)).json.data[0].id
    const atomicType = `${JSON_API}; ext="https://jsonapi.org/ext/atomic"`
    const atomic = await t.request('POST', '/api/v1/operations', {
      headers: { 'content-type': atomicType, accept: atomicType },
      body: { 'atomic:operations': [{ op: 'add', data: { type: 'authors', attributes: { name: 'Atomic' } } }] },
    })
    expectFull(atomic)
    const writes = [
      await postBook(t, bookName(10_000), author),
      await t.request('PATCH', `/api/v1/books/${book}`, {
        body: { data: { type: 'books', id: book, attributes: { name: 'Renamed' } } },
      }),
      await t.request('DELETE', `/api/v1/books/${book}`),
      await t.request('POST', `/api/v1/authors/${author}/relationships/books`, {
        body: { data: [{ type: 'books', id: book }] },
      }),
    ]
    refused.push(bookName(10_000))
    for (const answer of writes) expectFull(answer)
    expect((await t.get(`/api/v1/books/${book}`)).json.data.attributes.name).toBe(acknowledged[0])
  })

  it('refuses every write of a batch whose shared commit fails', async () => {
    const names = [1, 2, 3, 4, 5].map((n) => bookName(20_000 + n))
    const answers = await Promise.all(names.map((name) => postBook(t, name, author)))
    refused.push(...names)
    for (const answer of answers) expectFull(answer)
  })

  it('still answers reads 200', async () => {
    expect((await t.get(`/api/v1/authors/${author}`)).status).toBe(200)
    const list = await t.get('/api/v1/books')
    expect(list.status).toBe(200)
    expect(list.json.data).toHaveLength(acknowledged.length)
  })

  it('logs the fault once, with its SQLite code and message, however many requests fail', () => {
    const lines = logLines(t, 'database unavailable')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({
      level: 'error',
      reason: 'full',
      code: 'SQLITE_FULL',
      detail: 'database or disk is full',
      retry_after_s: 5,
    })
    expect(logLines(t, 'database still unavailable')).toHaveLength(0)
    expect(failures).toBe(11)
  })

  it('takes writes again once space is freed, without a restart', async () => {
    rmSync(filler())
    const answer = await postBook(t, bookName(30_000), author)
    expect(answer.status).toBe(201)
    acknowledged.push(bookName(30_000))
  })

  it('logs the recovery once, with how many requests the fault failed', async () => {
    await postBook(t, bookName(30_001), author)
    acknowledged.push(bookName(30_001))
    const lines = logLines(t, 'database available again')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({ level: 'info', reason: 'full', code: 'SQLITE_FULL', failures })
  })

  it('has stored every write it acknowledged and none it refused', async () => {
    const stored = (await t.stored('books')).map((row) => row.name)
    expect(stored).toEqual(acknowledged)
    for (const name of refused) expect(stored).not.toContain(name)
    expect((await t.stored('authors')).map((row) => row.name)).toEqual(['Filler'])
  })
})

describe('an immutable WAL file', () => {
  let t: SqliteTestApp
  let wal: string
  let immutable = false
  let author: string

  beforeAll(async () => {
    t = await openTestApp({ backend: 'sqlite', logLevel: 'info' })
    wal = `${t.dbPath}-wal`
    author = await t.create('authors', { name: 'Before' })
  })

  afterAll(async () => {
    if (immutable) run('chattr', '-i', wal)
    await t.close()
  })

  // The WAL is where every write goes first; the database file itself is written only by
  // checkpoints, whose failures SQLite does not report to a commit. (Never the -shm: it is mapped
  // in memory, and writing to an immutable mapping kills the process with SIGBUS.)
  it('answers writes 503 while the WAL cannot be written, and reads 200', async () => {
    run('chattr', '+i', wal)
    immutable = true
    expectUnavailable(await postBook(t, 'Refused', author), 'disk I/O error', '5')
    const patch = await t.request('PATCH', `/api/v1/authors/${author}`, {
      body: { data: { type: 'authors', id: author, attributes: { name: 'Renamed' } } },
    })
    expectUnavailable(patch, 'disk I/O error', '5')
    const read = await t.get(`/api/v1/authors/${author}`)
    expect(read.status).toBe(200)
    expect(read.json.data.attributes.name).toBe('Before')
    expect(logLines(t, 'database unavailable')).toEqual([
      expect.objectContaining({ reason: 'io', code: 'SQLITE_IOERR_WRITE', detail: 'disk I/O error' }),
    ])
  })

  it('takes writes again once the file is writable, without a restart, having stored nothing it refused', async () => {
    run('chattr', '-i', wal)
    immutable = false
    expect((await postBook(t, 'Accepted', author)).status).toBe(201)
    expect((await t.stored('books')).map((row) => row.name)).toEqual(['Accepted'])
    expect((await t.stored('authors')).map((row) => row.name)).toEqual(['Before'])
    expect(logLines(t, 'database available again')).toEqual([
      expect.objectContaining({ reason: 'io', code: 'SQLITE_IOERR_WRITE', failures: 2 }),
    ])
  })
})

describe('a lock held past the busy timeout', () => {
  let t: SqliteTestApp
  let other: Database
  let author: string

  beforeAll(async () => {
    t = await openTestApp({ backend: 'sqlite', logLevel: 'info', busyTimeoutMs: 50 })
    author = await t.create('authors', { name: 'Author' })
    other = new Database(t.dbPath)
  })

  afterAll(async () => {
    other.close()
    await t.close()
  })

  it('answers writes 503 with Retry-After 1 while another connection holds the write lock, and reads 200', async () => {
    other.run('BEGIN EXCLUSIVE')
    for (let n = 0; n < 5; n++)
      expectUnavailable(await postBook(t, `Locked out ${n}`, author), 'locked by another connection', '1')
    expect((await t.get(`/api/v1/authors/${author}`)).status).toBe(200)
  })

  it('logs the lock once for every write it refused', () => {
    expect(logLines(t, 'database unavailable')).toEqual([
      expect.objectContaining({ level: 'error', reason: 'busy', code: 'SQLITE_BUSY', retry_after_s: 1 }),
    ])
  })

  it('takes writes again once the lock is released', async () => {
    other.run('ROLLBACK')
    expect((await postBook(t, 'After the lock', author)).status).toBe(201)
    expect((await t.stored('books')).map((row) => row.name)).toEqual(['After the lock'])
    expect(logLines(t, 'database available again')).toEqual([
      expect.objectContaining({ reason: 'busy', code: 'SQLITE_BUSY', failures: 5 }),
    ])
  })
})

describe('a database file cut short while the service runs', () => {
  let t: SqliteTestApp

  beforeAll(async () => {
    t = await openTestApp({ backend: 'sqlite', logLevel: 'info' })
    const author = await t.create('authors', { name: 'Prolific' })
    const raw = new Database(t.dbPath)
    const insert = raw.query('INSERT INTO books (name, author_id) VALUES (?, ?)')
    raw.transaction(() => {
      // Long titles: about 10 MB, far more than a connection's page cache, so that later batches of
      // the list must read the file again rather than find their pages cached by an earlier read.
      for (let i = 0; i < 10_000; i++) insert.run(`Book ${i} ${'x'.repeat(900)}`, Number(author))
    })()
    // Every page in the database file, none in the WAL: cutting the file takes the later ones away.
    raw.run('PRAGMA wal_checkpoint(TRUNCATE)')
    raw.close()
  })

  afterAll(async () => {
    await t.close()
  })

  it('cuts off a list that fails while it streams, so that it cannot pass for the whole list, and logs it', async () => {
    const response = await t.app.handle(new Request('http://localhost/api/v1/books', { headers: { accept: JSON_API } }))
    expect(response.status).toBe(200)
    // The first batch is read; the next ones find the file cut short, as from a failing disk.
    truncateSync(t.dbPath, 8 * 4096)
    const body = await response.text().then(
      () => 'complete',
      () => 'cut off',
    )
    expect(body).toBe('cut off')
    expect(logLines(t, 'response cut off')).toEqual([
      expect.objectContaining({ level: 'warn', method: 'GET', path: '/api/v1/books', reason: 'corrupt' }),
    ])
    expect(logLines(t, 'database unavailable')).toEqual([
      expect.objectContaining({ reason: 'corrupt', code: 'SQLITE_CORRUPT', retry_after_s: 30 }),
    ])
  })

  it('answers 503 to a read and to a write that find the damage, and goes on answering', async () => {
    expectUnavailable(await t.get('/api/v1/books/9999'), 'damaged', '30')
    // The write's own reads, inside its transaction, meet the missing pages.
    expectUnavailable(await t.request('DELETE', '/api/v1/books/9999'), 'damaged', '30')
    expect((await t.get('/api/v1/openapi.json')).status).toBe(200)
    expect(logLines(t, 'database unavailable')).toHaveLength(1)
  })
})

describe('a bug in the service', () => {
  it('is still a 500 without details, logged with its stack', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'catalogue-bug-'))
    const store = SqliteStore.open(join(dir, 'catalogue.db'), resources)
    // A store whose single-record read has a bug of ours: an ordinary Error, not a fault of the database.
    const buggy = new Proxy(store, {
      get: (target, key, receiver) =>
        key === 'findWithRelated'
          ? () => Promise.reject(new TypeError('record.toOne is undefined'))
          : Reflect.get(target, key, receiver),
    }) as Store
    const logs: string[] = []
    const logger = createLogger('info', { write: (line) => logs.push(line), flush() {} })
    const app = createApp({ store: buggy, logger })
    try {
      const response = await app.handle(
        new Request('http://localhost/api/v1/books/1', { headers: { accept: JSON_API } }),
      )
      expect(response.status).toBe(500)
      expect(response.headers.get('retry-after')).toBeNull()
      expect(await response.json()).toEqual({
        errors: [
          {
            status: '500',
            title: 'Internal Server Error',
            detail: 'The server failed to complete the request; it has been logged',
          },
        ],
      })
      const lines = logs.map((line) => JSON.parse(line))
      expect(lines.find((line) => line.msg === 'unhandled error')?.error).toContain(
        'TypeError: record.toOne is undefined',
      )
      expect(lines.some((line) => line.msg === 'database unavailable')).toBe(false)
    } finally {
      await store.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
