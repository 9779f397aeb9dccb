import { expect, setDefaultTimeout } from 'bun:test'
import { SQL } from 'bun'
import { type App, createApp } from '../../src/http/app'
import { createLogger } from '../../src/logger'
import { resources } from '../../src/resources/registry'
import { PostgresStore } from '../../src/store/postgres/postgres-store'
import { afterAll, afterEach, beforeEach, describe, it, POSTGRES_SERVER } from '../support/postgres-tests'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

// The service over PostgreSQL when the database goes away and comes back: every answer meanwhile
// is a 200 or a 503 with a JSON:API error and Retry-After (never a 500), /ready says 503 while the
// database cannot be reached, and the same service answers 200 again once it can: no restart.

/** The server the tests use: POSTGRES_TEST_URL, the local one or a throwaway cluster (postgres-tests.ts). */
const SERVER = POSTGRES_SERVER
const JSON_API = 'application/vnd.api+json'
const admin = new SQL(SERVER, { max: 1 })

let database: string
let store: PostgresStore
let app: App

function urlOf(name: string): string {
  const url = new URL(SERVER)
  url.pathname = `/${name}`
  return url.toString()
}

/** A fresh database per test, with an author and 50 books, served by a new app. */
beforeEach(async () => {
  database = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`
  await admin.unsafe(`CREATE DATABASE ${database}`)
  store = await PostgresStore.open(urlOf(database), resources, { poolSize: 4, connectTimeoutSeconds: 2 })
  app = createApp({ store, logger: createLogger('silent') })
  expect(
    (await send('POST', '/api/v1/authors', { data: { type: 'authors', attributes: { name: 'Ann' } } })).status,
  ).toBe(201)
  for (let i = 0; i < 50; i++) expect((await send('POST', '/api/v1/books', newBook(`Book ${i}`))).status).toBe(201)
})

afterEach(async () => {
  await store.close()
  await admin.unsafe(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`)
  await admin.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
})

afterAll(() => admin.close())

function newBook(name: string) {
  return {
    data: {
      type: 'books',
      attributes: { name },
      relationships: { author: { data: { type: 'authors', id: '1' } } },
    },
  }
}

interface Answer {
  readonly request: string
  readonly status: number
  readonly retryAfter: string | null
  readonly contentType: string | null
  readonly body: string
}

async function send(method: string, path: string, body?: unknown): Promise<Answer> {
  const headers: Record<string, string> = { accept: JSON_API }
  if (body !== undefined) headers['content-type'] = JSON_API
  const response = await app.handle(
    new Request(`http://localhost${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  )
  return {
    request: `${method} ${path}`,
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    contentType: response.headers.get('content-type'),
    body: await response.text(),
  }
}

/** The requests of the load: a list, a page with its includes, a search, a record, a write. */
function request(i: number): Promise<Answer> {
  switch (i % 5) {
    case 0:
      return send('GET', '/api/v1/books?page[size]=50&sort=-name')
    case 1:
      return send('GET', '/api/v1/authors/1?include=books')
    case 2:
      return send('GET', '/api/v1/books?filter[search]=book')
    case 3:
      return send('GET', `/api/v1/books/${(i % 50) + 1}`)
    default:
      return send('POST', '/api/v1/books', newBook(`Load ${i}`))
  }
}

/** What an answer during an outage may be: a success, or a 503 a client can act on. */
function expectSuccessOr503(answer: Answer): void {
  if (answer.status === 200 || answer.status === 201) return
  const document = JSON.parse(answer.body) as { errors?: { status?: string; title?: string }[] }
  expect({
    request: answer.request,
    status: answer.status,
    type: answer.contentType?.split(';')[0],
    retryAfter: Number(answer.retryAfter) > 0,
    error: document.errors?.[0]?.status,
  }).toEqual({ request: answer.request, status: 503, type: JSON_API, retryAfter: true, error: '503' })
}

/** Closes every connection to the test's database but the one asking, as an operator's pg_terminate_backend would. */
async function terminateAll(): Promise<number> {
  const rows = await admin`SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity
    WHERE datname = ${database} AND pid <> pg_backend_pid()`
  return rows.length
}

/** Sends reads until `answers` come 200 in a row (or the time is up), and returns how long that took. */
async function untilAnswering(answers: number, withinMs: number): Promise<number> {
  const started = performance.now()
  let inARow = 0
  for (let i = 0; inARow < answers; i++) {
    if (performance.now() - started > withinMs)
      throw new Error(`no ${answers} successes in a row within ${withinMs} ms`)
    // Reads only (the load's first four kinds): the books counted afterwards are the load's.
    const answer = await request(i % 4)
    expectSuccessOr503(answer)
    inARow = answer.status < 300 ? inARow + 1 : 0
    if (inARow === 0) await Bun.sleep(50)
  }
  return performance.now() - started
}

describe('the API over PostgreSQL, when its connections are cut', () => {
  it('answers 200 or 503 with Retry-After (never 500) while pg_terminate_backend cuts them mid-run, then 200 again', async () => {
    const answers: Answer[] = []
    let running = true
    // Eight clients sending one request after another, on a pool of four connections.
    const clients = Array.from({ length: 8 }, async (_, client) => {
      for (let i = client; running; i += 8) answers.push(await request(i))
    })
    let terminated = 0
    for (let round = 0; round < 4; round++) {
      await Bun.sleep(150)
      terminated += await terminateAll()
    }
    await Bun.sleep(150)
    running = false
    await Promise.all(clients)

    expect(terminated).toBeGreaterThan(0)
    for (const answer of answers) expectSuccessOr503(answer)
    const statuses = new Set(answers.map((answer) => answer.status))
    expect(statuses.has(200)).toBe(true)
    // The same app, not restarted, answers again; so does /ready.
    await untilAnswering(20, 10_000)
    expect((await app.handle(new Request('http://localhost/ready'))).status).toBe(200)
    // Every book acknowledged with 201 is stored; a create answered 503 may or may not have
    // committed (the connection can drop between the commit and its acknowledgement).
    const posts = answers.filter((answer) => answer.request.startsWith('POST'))
    const acknowledged = posts.filter((answer) => answer.status === 201).length
    const { total } = await store.page(resources.get('books'), {
      filters: [],
      sort: [{ field: 'id', descending: false }],
      limit: 1,
    })
    expect(total).toBeGreaterThanOrEqual(50 + acknowledged)
    expect(total).toBeLessThanOrEqual(50 + posts.length)
  })
})

describe('the API over PostgreSQL, when its database cannot be reached', () => {
  it('answers 503 with Retry-After and /ready 503 while connections are refused, and 200 once they are allowed again', async () => {
    await admin.unsafe(`ALTER DATABASE ${database} ALLOW_CONNECTIONS false`)
    await terminateAll()
    for (let i = 0; i < 10; i++) {
      const answer = await request(i)
      expect({ request: answer.request, status: answer.status }).toEqual({ request: answer.request, status: 503 })
      expectSuccessOr503(answer)
    }
    const ready = await app.handle(new Request('http://localhost/ready'))
    expect(ready.status).toBe(503)
    expect(Number(ready.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(((await ready.json()) as { status: string }).status).toBe('unavailable')

    await admin.unsafe(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`)
    await untilAnswering(20, 10_000)
    expect((await app.handle(new Request('http://localhost/ready'))).status).toBe(200)
  })
})

describe('the API over PostgreSQL, when its database is dropped and created again under it', () => {
  it('answers 503 with Retry-After (never 500) while the new database holds no catalogue, and 200 (and ready) once it does', async () => {
    // As an operator restoring an export into the database's name while the service runs.
    await admin.unsafe(`DROP DATABASE ${database} WITH (FORCE)`)
    await admin.unsafe(`CREATE DATABASE ${database}`)
    for (let i = 0; i < 10; i++) {
      const answer = await request(i)
      expect({ request: answer.request, status: answer.status }).toEqual({ request: answer.request, status: 503 })
      expectSuccessOr503(answer)
    }
    // import --create migrates it (as any store that opens it does); the same app answers again.
    const restored = await PostgresStore.open(urlOf(database), resources, { poolSize: 1 })
    await restored.close()
    const started = performance.now()
    let list = await send('GET', '/api/v1/books')
    while (list.status !== 200 && performance.now() - started < 10_000) {
      expectSuccessOr503(list)
      await Bun.sleep(50)
      list = await send('GET', '/api/v1/books')
    }
    expect({ status: list.status, body: list.body }).toEqual({ status: 200, body: '{"data":[]}' })
    expect(
      (await send('POST', '/api/v1/authors', { data: { type: 'authors', attributes: { name: 'Bo' } } })).status,
    ).toBe(201)
    // Ready again by itself: no restart is needed to serve the new database.
    expect((await app.handle(new Request('http://localhost/ready'))).status).toBe(200)
  })
})
