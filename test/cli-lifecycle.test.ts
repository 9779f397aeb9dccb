import { Database } from 'bun:sqlite'
import { afterAll, afterEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { existsSync, readdirSync, readlinkSync, statSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { resources } from '../src/resources/registry'
import { sqliteMigrations } from '../src/store/sqlite/migrations'
import { SqliteStore } from '../src/store/sqlite/sqlite-store'
import { type ChildProcess, removeTempDirs, spawnChild, stopChildren, tempDir, WAIT_MS } from './support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/*
 * How the real process starts and stops: many starts at once on one new file, a port already in
 * use, and a stop that slow clients cannot hold up past SHUTDOWN_TIMEOUT.
 */

const CLI = join(import.meta.dir, '..', 'src', 'cli.ts')
const REPO = join(import.meta.dir, '..')
const JSON_API = 'application/vnd.api+json'
/**
 * How long the start test holds its starts at the database's lock at most: well within their
 * busy_timeout (5 s), so that the first to arrive has not given up when it is let go.
 */
const GATE_MS = 3_000
/** Per test: these start real processes, on a machine that may be busy (bun test's default is 5 s). */
const TEST_MS = 20_000
/** SHUTDOWN_TIMEOUT in the deadline tests, in seconds. */
const DEADLINE_S = 1
/** How long after its deadline a stop may take: closing connections and the database, exiting. */
const STOP_MARGIN_MS = 2_000

function spawnCli(env: Record<string, string>): ChildProcess {
  return spawnChild(['bun', CLI], REPO, { HOST: '127.0.0.1', ...env })
}

/** A database file in a new temporary folder (not created yet), and its sqlite:// URL. */
function tempDatabase(): { path: string; url: string } {
  const path = join(tempDir('catalogue-lifecycle-'), 'c.db')
  return { path, url: `sqlite://${path}` }
}

/** Whether process `pid` has the file at `path` open (Linux: its /proc/<pid>/fd links). */
function hasOpen(pid: number, path: string): boolean {
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`) === path
      } catch {
        return false // closed since the listing
      }
    })
  } catch {
    return false // exited, or not started yet
  }
}

/** The port of a started child, from its `listening` log line. */
async function listeningPort(cli: ChildProcess, timeoutMs = WAIT_MS): Promise<number> {
  const line = await cli.waitForLog((l) => l.msg === 'listening', timeoutMs)
  return Number(new URL(String(line.url)).port)
}

async function startService(env: Record<string, string>): Promise<{ cli: ChildProcess; port: number }> {
  const cli = spawnCli({ PORT: '0', ...env })
  return { cli, port: await listeningPort(cli) }
}

function getAuthors(port: number): Promise<Response> {
  return fetch(`http://127.0.0.1:${port}/api/v1/authors`, {
    headers: { accept: JSON_API },
    signal: AbortSignal.timeout(WAIT_MS),
  })
}

/** A migrated file with one author of `books` books, each with a long title. */
async function seedDatabase(path: string, books: number): Promise<void> {
  await SqliteStore.open(path, resources).close()
  const db = new Database(path)
  try {
    db.transaction(() => {
      db.run("INSERT INTO authors (name) VALUES ('Prolific')")
      const insert = db.prepare('INSERT INTO books (name, author_id) VALUES (?, (SELECT MAX(id) FROM authors))')
      for (let i = 0; i < books; i++) insert.run(`Volume ${i} ${'of a very long saga '.repeat(45)}`)
      insert.finalize()
    })()
  } finally {
    db.close()
  }
}

/** Opens the file as the next start would, after the process is gone: sound, and its WAL folded in. */
function expectConsistent(path: string): void {
  const walPath = `${path}-wal`
  expect(existsSync(walPath) ? statSync(walPath).size : 0).toBe(0)
  const db = new Database(path, { readonly: true })
  try {
    expect(db.query('PRAGMA integrity_check').all()).toEqual([{ integrity_check: 'ok' }])
  } finally {
    db.close()
  }
}

/** A raw TCP connection: what it received so far, and whether the server has closed it. */
class RawClient {
  received = ''
  closed = false
  private readonly socket: Socket
  private readonly opened: Promise<void>

  constructor(port: number, options: { read: boolean }) {
    this.socket = connect(port, '127.0.0.1')
    this.opened = new Promise((resolve) => this.socket.once('connect', () => resolve()))
    this.socket.on('error', () => {})
    this.socket.on('close', () => {
      this.closed = true
    })
    // A client that never reads leaves the response in the kernel buffers, which then fill up.
    if (options.read) this.socket.on('data', (chunk) => (this.received += chunk.toString('latin1')))
    else this.socket.pause()
  }

  async send(text: string): Promise<void> {
    await this.opened
    this.socket.write(text)
  }

  /** Waits until `predicate` holds of the client, up to WAIT_MS. */
  async until(predicate: (client: RawClient) => boolean, what: string): Promise<void> {
    const deadline = Date.now() + WAIT_MS
    while (!predicate(this)) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; received:\n${this.received}`)
      await Bun.sleep(10)
    }
  }

  destroy(): void {
    this.socket.destroy()
  }
}

/** Sends SIGTERM and resolves to the exit code and how long the process took to exit. */
async function terminate(cli: ChildProcess): Promise<{ code: number; ms: number }> {
  const start = performance.now()
  cli.proc.kill('SIGTERM')
  const code = await cli.exitCode()
  return { code, ms: performance.now() - start }
}

const clients: RawClient[] = []

function rawClient(port: number, options: { read: boolean }): RawClient {
  const client = new RawClient(port, options)
  clients.push(client)
  return client
}

afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy()
  await stopChildren()
})

afterAll(removeTempDirs)

describe('catalogue starting', () => {
  it(
    'starts 20 processes at once on one new file: all serve, and each migration is applied once',
    async () => {
      const { path, url } = tempDatabase()
      // The test holds the lock of the still empty file while they start, then lets go: those that
      // got as far as opening it meanwhile all go for the schema in the same instant.
      const gate = new Database(path, { create: true })
      gate.run('BEGIN EXCLUSIVE')
      const starts = Array.from({ length: 20 }, () => spawnCli({ PORT: '0', DATABASE_URL: url }))
      const waitingSince = Date.now()
      while (!starts.every((cli) => hasOpen(cli.proc.pid, path)) && Date.now() - waitingSince < GATE_MS) {
        await Bun.sleep(20)
      }
      gate.run('ROLLBACK')
      gate.close()

      // Twenty starts share two cores here: give them longer than one start gets.
      const ports = await Promise.all(starts.map((cli) => listeningPort(cli, 3 * WAIT_MS)))
      const statuses = await Promise.all(ports.map((port) => getAuthors(port).then((response) => response.status)))
      expect(statuses).toEqual(ports.map(() => 200))
      const codes = await Promise.all(starts.map((cli) => terminate(cli).then(({ code }) => code)))
      expect(codes).toEqual(ports.map(() => 0))

      const db = new Database(path, { readonly: true })
      try {
        const applied = db
          .query<{ version: number }, []>('SELECT version FROM schema_migrations ORDER BY version')
          .all()
        expect(applied.map((row) => row.version)).toEqual(sqliteMigrations.map((migration) => migration.version))
      } finally {
        db.close()
      }
    },
    3 * TEST_MS,
  )

  it(
    'refuses a port already in use with one line on stderr and exit 2, and the first instance keeps serving',
    async () => {
      const first = await startService({ DATABASE_URL: tempDatabase().url })
      const created = await fetch(`http://127.0.0.1:${first.port}/api/v1/authors`, {
        method: 'POST',
        headers: { accept: JSON_API, 'content-type': JSON_API },
        body: JSON.stringify({ data: { type: 'authors', attributes: { name: 'Only here' } } }),
        signal: AbortSignal.timeout(WAIT_MS),
      })
      expect(created.status).toBe(201)

      const other = tempDatabase()
      const second = spawnCli({ PORT: String(first.port), DATABASE_URL: other.url })
      expect(await second.exitCode()).toBe(2)
      expect(second.stderr).toBe(`catalogue: cannot listen on 127.0.0.1:${first.port}: address already in use\n`)
      // It opened its database before trying the port, and closed it before exiting.
      expectConsistent(other.path)

      // Every request still reaches the first instance and its database.
      for (let i = 0; i < 6; i++) {
        const list = (await (await getAuthors(first.port)).json()) as { data: { attributes: { name: string } }[] }
        expect(list.data.map((author) => author.attributes.name)).toEqual(['Only here'])
      }
    },
    TEST_MS,
  )
})

describe('catalogue stopping', () => {
  it(
    'on SIGTERM with a client not reading a large streamed list exits 0 within SHUTDOWN_TIMEOUT and leaves the file consistent',
    async () => {
      const { path, url } = tempDatabase()
      // About 10 MB of JSON: more than the socket buffers hold, so the stream waits on the client.
      await seedDatabase(path, 10_000)
      const { cli, port } = await startService({ DATABASE_URL: url, SHUTDOWN_TIMEOUT: String(DEADLINE_S) })
      const reader = rawClient(port, { read: false })
      await reader.send(`GET /api/v1/books HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: ${JSON_API}\r\n\r\n`)
      await Bun.sleep(300)

      const stop = await terminate(cli)
      expect(stop.code).toBe(0)
      expect(stop.ms).toBeGreaterThanOrEqual(DEADLINE_S * 1000 - 50)
      expect(stop.ms).toBeLessThan(DEADLINE_S * 1000 + STOP_MARGIN_MS)
      expect(cli.logs.find((line) => line.msg.startsWith('shutdown timeout reached'))).toMatchObject({
        level: 'warn',
        shutdown_timeout_s: DEADLINE_S,
      })
      expect(cli.logs.at(-1)?.msg).toBe('stopped')
      expectConsistent(path)
    },
    TEST_MS,
  )

  it(
    'on SIGTERM with a request body trickling in exits 0 within SHUTDOWN_TIMEOUT and stores nothing of it',
    async () => {
      const { path, url } = tempDatabase()
      const { cli, port } = await startService({ DATABASE_URL: url, SHUTDOWN_TIMEOUT: String(DEADLINE_S) })
      const body = JSON.stringify({ data: { type: 'authors', attributes: { name: 'Never finished' } } })
      const sender = rawClient(port, { read: true })
      await sender.send(
        `POST /api/v1/authors HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${JSON_API}\r\nContent-Length: ${body.length}\r\n\r\n`,
      )
      let sent = 0
      const trickle = setInterval(() => {
        if (sent < body.length - 1) void sender.send(body[sent++] as string)
      }, 100)
      try {
        await Bun.sleep(300)
        const stop = await terminate(cli)
        expect(stop.code).toBe(0)
        expect(stop.ms).toBeLessThan(DEADLINE_S * 1000 + STOP_MARGIN_MS)
      } finally {
        clearInterval(trickle)
      }
      expect(cli.logs.find((line) => line.msg.startsWith('shutdown timeout reached'))).toMatchObject({ level: 'warn' })
      expect(cli.logs.at(-1)?.msg).toBe('stopped')
      expectConsistent(path)
      const db = new Database(path, { readonly: true })
      try {
        expect(db.query('SELECT COUNT(*) AS n FROM authors').get()).toEqual({ n: 0 })
      } finally {
        db.close()
      }
    },
    TEST_MS,
  )

  it(
    'answers Connection: close to a keep-alive request in flight when SIGTERM arrives, then closes',
    async () => {
      const { path, url } = tempDatabase()
      const { cli, port } = await startService({ DATABASE_URL: url, SHUTDOWN_TIMEOUT: '5' })
      const client = rawClient(port, { read: true })
      await client.send(`GET /api/v1/authors HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: ${JSON_API}\r\n\r\n`)
      await client.until((c) => c.received.includes('{"data":[]}'), 'the first answer')
      expect(client.received.toLowerCase()).not.toContain('connection: close')
      const first = client.received.length

      // The same connection, kept alive: a POST whose body is not all there when the signal comes.
      const body = JSON.stringify({ data: { type: 'authors', attributes: { name: 'Last one in' } } })
      await client.send(
        `POST /api/v1/authors HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${JSON_API}\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
      )
      await Bun.sleep(200)
      cli.proc.kill('SIGTERM')
      await cli.waitForLog((line) => line.msg === 'stopping')
      await client.send(body.slice(10))

      await client.until((c) => c.closed, 'the server to close the connection')
      const second = client.received.slice(first)
      expect(second).toStartWith('HTTP/1.1 201 ')
      expect(second.toLowerCase()).toContain('\r\nconnection: close\r\n')
      expect(second).toContain('Last one in')
      expect(await cli.exitCode()).toBe(0)
      expect(cli.logs.some((line) => line.msg.startsWith('shutdown timeout reached'))).toBe(false)
      const db = new Database(path, { readonly: true })
      try {
        expect(db.query('SELECT name FROM authors').all()).toEqual([{ name: 'Last one in' }])
      } finally {
        db.close()
      }
    },
    TEST_MS,
  )
})
