import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { SQL } from 'bun'
import { resources } from '../../src/resources/registry'
import { readDatabase, runCli, type Service, startService, tempDatabase, withStore } from '../support/commands'
import {
  afterAll as afterAllOnPostgres,
  describe as describeOnPostgres,
  POSTGRES_SERVER,
} from '../support/postgres-tests'
import { isRunning, type LogLine, removeTempDirs, stopChildren, WAIT_MS } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/*
 * `catalogue --workers 2`: a supervisor and two worker processes that share one port, over a real
 * SQLite file and a real PostgreSQL database, as an operator runs them.
 */

const JSON_API = 'application/vnd.api+json'
const SERVER = POSTGRES_SERVER
/** Per test: real processes on a machine that may be busy. */
const TEST_MS = 20_000

afterAll(removeTempDirs)

async function send(api: string, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${api}${path}`, {
    method,
    headers: body === undefined ? { accept: JSON_API } : { accept: JSON_API, 'content-type': JSON_API },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(WAIT_MS),
  })
}

async function createAuthor(api: string, name: string): Promise<string> {
  const response = await send(api, 'POST', '/authors', { data: { type: 'authors', attributes: { name } } })
  expect(response.status).toBe(201)
  return ((await response.json()) as { data: { id: string } }).data.id
}

async function nameOf(api: string, id: string): Promise<string> {
  const response = await send(api, 'GET', `/authors/${id}`)
  expect(response.status).toBe(200)
  return ((await response.json()) as { data: { attributes: { name: string } } }).data.attributes.name
}

/** The `worker listening` lines so far, by worker number. */
function workerLines(service: Service): LogLine[] {
  return service.child.logs.filter((line) => line.msg === 'worker listening')
}

/** Starts `--workers 2` and waits for the supervisor's `listening` line and both workers' own. */
async function startWorkers(env: Record<string, string>): Promise<Service> {
  const service = await startService({ WORKERS: '2', ...env })
  for (const worker of [1, 2]) {
    await service.child.waitForLog((line) => line.msg === 'worker listening' && line.worker === worker)
  }
  return service
}

describe('catalogue --workers 2 on SQLite', () => {
  // One service for the tests in order (a start costs seconds on a busy machine); the last stops it.
  let service: Service

  beforeAll(async () => {
    service = await startWorkers({ DATABASE_URL: tempDatabase().url })
  }, TEST_MS)

  afterAll(stopChildren)

  it('logs listening once, from the supervisor, and one line for each worker, each its own process', () => {
    expect(service.child.logs.filter((line) => line.msg === 'listening')).toEqual([
      expect.objectContaining({ workers: 2, pid: service.child.proc.pid }),
    ])
    const pids = workerLines(service).map((line) => line.pid)
    expect(new Set(pids).size).toBe(2)
    expect(pids).not.toContain(service.child.proc.pid)
  })

  it(
    'serves 200 concurrent POSTs through both workers, every one stored once and readable, every worker line numbered',
    async () => {
      const ids = await Promise.all(Array.from({ length: 200 }, (_, n) => createAuthor(service.api, `Author ${n}`)))
      expect(new Set(ids).size).toBe(200)
      const names = await Promise.all(ids.map((id) => nameOf(service.api, id)))
      expect(names).toEqual(ids.map((_, n) => `Author ${n}`))

      await service.child.waitForLog((line) => line.msg === 'request' && line.worker === 2)
      await service.child.waitForLog((line) => line.msg === 'request' && line.worker === 1)
      const fromWorkers = service.child.logs.filter((line) => line.pid !== service.child.proc.pid)
      for (const line of fromWorkers) expect([1, 2]).toContain(line.worker as number)
    },
    TEST_MS,
  )

  it(
    'leaves no room on its port for a second service, with one process or several',
    async () => {
      const port = new URL(service.api).port
      const runs = await Promise.all(
        ['1', '2'].map((workers) =>
          runCli(['--workers', workers, '--port', port, '--host', '127.0.0.1'], {
            env: { DATABASE_URL: tempDatabase().url },
          }),
        ),
      )
      for (const run of runs) {
        expect(run.code).toBe(2)
        expect(run.lines).toEqual([`catalogue: cannot listen on 127.0.0.1:${port}: address already in use`])
      }
    },
    TEST_MS,
  )

  it(
    'starts a worker again after it is killed, and keeps answering',
    async () => {
      const killed = Number(workerLines(service).find((line) => line.worker === 2)?.pid)
      process.kill(killed, 'SIGKILL')
      const warning = await service.child.waitForLog(
        (line) => line.msg === 'worker exited unexpectedly: starting it again',
      )
      expect(warning).toMatchObject({ level: 'warn', worker: 2, pid: killed, signal: 'SIGKILL' })
      const again = await service.child.waitForLog(
        (line) => line.msg === 'worker listening' && line.worker === 2 && line.pid !== killed,
      )
      expect(isRunning(Number(again.pid))).toBe(true)
      const id = await createAuthor(service.api, 'After the restart')
      expect(await nameOf(service.api, id)).toBe('After the restart')
    },
    TEST_MS,
  )

  it(
    'stops the workers and itself with exit code 0 on SIGTERM',
    async () => {
      const pids = workerLines(service).map((line) => Number(line.pid))
      const running = pids.filter(isRunning)
      expect(running.length).toBe(2)
      service.child.proc.kill('SIGTERM')
      expect(await service.child.exitCode()).toBe(0)
      for (const worker of [1, 2]) {
        expect(service.child.logs).toContainEqual(expect.objectContaining({ msg: 'stopped', worker }))
      }
      expect(service.child.logs.at(-1)).toMatchObject({ msg: 'stopped' })
      expect(service.child.logs.at(-1)?.worker).toBeUndefined()
      expect(running.filter(isRunning)).toEqual([])
    },
    TEST_MS,
  )
})

describe('catalogue --workers 2 on SQLite, each worker writing to the file itself', () => {
  afterAll(stopChildren)

  it(
    'answers a read right after each write, on the same connection, with what was written',
    async () => {
      const service = await startWorkers({ DATABASE_URL: tempDatabase().url })
      // One client after another: each reads on the connection (and so the worker) it wrote through.
      for (let n = 0; n < 40; n++) {
        const id = await createAuthor(service.api, `Written ${n}`)
        expect(await nameOf(service.api, id)).toBe(`Written ${n}`)
      }
      const workers = new Set(
        service.child.logs
          .filter((line) => line.msg === 'request' && line.method === 'POST')
          .map((line) => line.worker),
      )
      expect(workers.size).toBeGreaterThan(0)
    },
    TEST_MS,
  )

  it(
    'answers 503 with Retry-After, not 500, when the writer cannot take the lock, and writes again once it can',
    async () => {
      const database = tempDatabase()
      const service = await startWorkers({ DATABASE_URL: database.url, BUSY_TIMEOUT: '200' })
      const holder = new Database(database.path)
      holder.run('BEGIN IMMEDIATE')
      try {
        const refused = await Promise.all(
          Array.from({ length: 4 }, (_, n) =>
            send(service.api, 'POST', '/authors', { data: { type: 'authors', attributes: { name: `Held ${n}` } } }),
          ),
        )
        for (const response of refused) {
          expect(response.status).toBe(503)
          expect(response.headers.get('retry-after')).toBe('1')
          const body = (await response.json()) as { errors: { status: string }[] }
          expect(body.errors[0]?.status).toBe('503')
        }
      } finally {
        holder.run('ROLLBACK')
        holder.close()
      }
      const id = await createAuthor(service.api, 'After the lock')
      expect(await nameOf(service.api, id)).toBe('After the lock')
      const held = readDatabase(database.path, (db) =>
        db.query<{ n: number }, []>("SELECT count(*) AS n FROM authors WHERE name LIKE 'Held %'").get(),
      )
      expect(held?.n).toBe(0)
    },
    TEST_MS,
  )
})

describe('catalogue --workers 2 and the weak ETag of a streamed list', () => {
  afterAll(stopChildren)

  /** GET /authors on a connection of its own each time, so that the kernel spreads them over both workers. */
  async function getAuthors(api: string, headers: Record<string, string> = {}): Promise<Response> {
    return fetch(`${api}/authors`, {
      headers: { accept: JSON_API, 'accept-encoding': 'identity', ...headers },
      keepalive: false,
      signal: AbortSignal.timeout(WAIT_MS),
    })
  }

  /** The workers that answered `status` to GET /authors, from the request lines. */
  function workersAnswering(service: Service, status: number): Set<unknown> {
    return new Set(
      service.child.logs
        .filter((line) => line.msg === 'request' && line.path === '/api/v1/authors' && line.status === status)
        .map((line) => line.worker),
    )
  }

  it(
    'gives the same tag from both workers, 304 from either, after a worker is started again too, and a new tag after a write',
    async () => {
      const database = tempDatabase()
      // Over 64 KB of authors: the list streams, and its tag is the weak one made from the store's version.
      await withStore(database.path, async (store) => {
        const authors = resources.get('authors')
        await Promise.all(
          Array.from({ length: 1500 }, (_, n) =>
            store.create(authors, { attributes: { name: `Author number ${n} of the streamed list` }, toOne: {} }),
          ),
        )
      })
      const service = await startWorkers({ DATABASE_URL: database.url })
      const first = await getAuthors(service.api)
      expect((await first.text()).length).toBeGreaterThan(64 * 1024)
      const tag = first.headers.get('etag') as string
      expect(tag).toMatch(/^W\//)

      const revalidate = async () => {
        for (let n = 0; n < 16; n++) {
          const again = await getAuthors(service.api, { 'if-none-match': tag })
          expect(again.status).toBe(304)
          expect(again.headers.get('etag')).toBe(tag)
        }
      }
      await revalidate()
      await service.child.waitForLog((line) => line.msg === 'request' && line.status === 304 && line.worker === 1)
      await service.child.waitForLog((line) => line.msg === 'request' && line.status === 304 && line.worker === 2)
      expect(workersAnswering(service, 304)).toEqual(new Set([1, 2]))

      // A worker killed and started again keeps answering 304 to the tag: it draws no generation of its own.
      const killed = Number(workerLines(service).find((line) => line.worker === 2)?.pid)
      process.kill(killed, 'SIGKILL')
      await service.child.waitForLog(
        (line) => line.msg === 'worker listening' && line.worker === 2 && line.pid !== killed,
      )
      const before = service.child.logs.length
      await revalidate()
      await service.child.waitForLog(
        (line) => line.msg === 'request' && line.status === 304 && line.worker === 2 && line.pid !== killed,
      )
      expect(service.child.logs.length).toBeGreaterThan(before)

      await createAuthor(service.api, 'One more')
      for (let n = 0; n < 4; n++) {
        const changed = await getAuthors(service.api, { 'if-none-match': tag })
        expect(changed.status).toBe(200)
        expect(changed.headers.get('etag')).not.toBe(tag)
        await changed.arrayBuffer()
      }
    },
    TEST_MS * 2,
  )
})

describe('catalogue --workers 2 on a taken port', () => {
  it(
    'refuses to start, in one line and exit code 2',
    async () => {
      const holder = Bun.serve({ port: 0, hostname: '127.0.0.1', reusePort: false, fetch: () => new Response('mine') })
      try {
        const run = await runCli(['--workers', '2', '--port', String(holder.port), '--host', '127.0.0.1'], {
          env: { DATABASE_URL: tempDatabase().url },
        })
        expect(run.code).toBe(2)
        expect(run.lines).toEqual([`catalogue: cannot listen on 127.0.0.1:${holder.port}: address already in use`])
      } finally {
        holder.stop(true)
      }
    },
    TEST_MS,
  )
})

describe('catalogue --workers 2 whose workers cannot start', () => {
  it(
    "stops them all and exits 2 with the workers' one line (an unusable token file)",
    async () => {
      const database = tempDatabase()
      const tokenFile = join(database.dir, 'tokens')
      writeFileSync(tokenFile, 'not a token line\n')
      const run = await runCli(['--workers', '2', '--port', '0', '--host', '127.0.0.1'], {
        env: { DATABASE_URL: database.url, API_TOKENS_FILE: tokenFile },
      })
      expect(run.code).toBe(2)
      expect(run.lines).toEqual([
        `catalogue: API_TOKENS_FILE: ${tokenFile} line 1: expected NAME SCOPE SHA256 (three fields)`,
      ])
      expect(run.stdout).not.toContain('"listening"')
    },
    TEST_MS,
  )
})

describe('catalogue --workers 2 whose supervisor is killed', () => {
  it(
    'leaves no worker behind: each stops once the supervisor is gone',
    async () => {
      const service = await startWorkers({ DATABASE_URL: tempDatabase().url })
      const pids = workerLines(service).map((line) => Number(line.pid))
      service.child.proc.kill('SIGKILL')
      await service.child.exitCode()
      const deadline = Date.now() + WAIT_MS
      while (pids.some(isRunning) && Date.now() < deadline) await Bun.sleep(50)
      expect(pids.filter(isRunning)).toEqual([])
    },
    TEST_MS,
  )
})

describe('catalogue --workers 2 with an API token file', () => {
  it(
    'passes SIGHUP on: each worker reads the file again, and the new token is taken by both',
    async () => {
      const token = 'cat_workers-token-0123456789abcdefghijklmnopqrstuv'
      const hash = new Bun.CryptoHasher('sha256').update(token).digest('hex')
      const database = tempDatabase()
      const tokenFile = join(database.dir, 'tokens')
      writeFileSync(tokenFile, '')
      const service = await startWorkers({ DATABASE_URL: database.url, API_TOKENS_FILE: tokenFile })
      writeFileSync(tokenFile, `ops write ${hash}\n`)
      service.child.proc.kill('SIGHUP')
      for (const worker of [1, 2]) {
        await service.child.waitForLog((line) => line.msg === 'API tokens reloaded' && line.worker === worker)
      }
      // New connections each, which either worker may take.
      const statuses = await Promise.all(
        Array.from({ length: 10 }, () =>
          fetch(`${service.api}/authors`, {
            headers: { accept: JSON_API, authorization: `Bearer ${token}`, connection: 'close' },
            signal: AbortSignal.timeout(WAIT_MS),
          }).then((response) => response.status),
        ),
      )
      expect(statuses).toEqual(Array(10).fill(200))
      service.child.proc.kill('SIGTERM')
      expect(await service.child.exitCode()).toBe(0)
    },
    TEST_MS,
  )
})

describeOnPostgres('catalogue --workers 2 on PostgreSQL', () => {
  const admin = new SQL(SERVER, { max: 1 })
  const name = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`

  afterAllOnPostgres(async () => {
    await stopChildren()
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.close()
  })

  it(
    'migrates a new database once, serves through both workers, and reads through any what one wrote',
    async () => {
      await admin.unsafe(`CREATE DATABASE ${name}`)
      const url = new URL(SERVER)
      url.pathname = `/${name}`
      const service = await startWorkers({ DATABASE_URL: url.toString(), DATABASE_POOL_SIZE: '2' })
      const ids = await Promise.all(Array.from({ length: 50 }, (_, n) => createAuthor(service.api, `Pg ${n}`)))
      expect(new Set(ids).size).toBe(50)
      // Each read on a new connection, which either worker may take.
      const names = await Promise.all(
        ids.map(async (id) => {
          const response = await fetch(`${service.api}/authors/${id}`, {
            headers: { accept: JSON_API, connection: 'close' },
            signal: AbortSignal.timeout(WAIT_MS),
          })
          expect(response.status).toBe(200)
          return ((await response.json()) as { data: { attributes: { name: string } } }).data.attributes.name
        }),
      )
      expect(names).toEqual(ids.map((_, n) => `Pg ${n}`))
      await service.child.waitForLog((line) => line.msg === 'request' && line.worker === 1)
      await service.child.waitForLog((line) => line.msg === 'request' && line.worker === 2)
      service.child.proc.kill('SIGTERM')
      expect(await service.child.exitCode()).toBe(0)
    },
    TEST_MS,
  )
})
