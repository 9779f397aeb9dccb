import { expect, setDefaultTimeout } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { SQL } from 'bun'
import { csvOf, runCli, startService } from '../support/commands'
import { describeWithPgBouncer, type PgBouncer, startPgBouncer } from '../support/pgbouncer'
import { startPoolerLoad } from '../support/pooler-load'
import { freePort } from '../support/postgres-server'
import { afterAll, afterEach, beforeAll, it, POSTGRES_SERVER } from '../support/postgres-tests'
import { removeTempDirs, stopChildren, tempDir, WAIT_MS } from '../support/process'

// Processes, databases and PgBouncers: Bun's 5 s default is short on a busy shared machine.
setDefaultTimeout(60_000)

/*
 * The service and the commands as an operator runs them behind PgBouncer, prepared statements left
 * on (DATABASE_PREPARED_STATEMENTS' default), and the change feed's LISTEN through it
 * (DATABASE_LISTEN_URL, by default DATABASE_URL): in transaction mode the start refuses the first
 * and warns of the second; in session mode both work.
 */

const SERVER = POSTGRES_SERVER
const JSON_API = 'application/vnd.api+json'
const admin = new SQL(SERVER, { max: 1 })
const databases: string[] = []
/** What the refusal names: the setting, and its value that works. */
const SETTING = 'DATABASE_PREPARED_STATEMENTS=false'

/** A new empty database, its statement timeout set on the role as "Behind PgBouncer" says; its name. */
async function newDatabase(): Promise<string> {
  const name = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`
  await admin.unsafe(`CREATE DATABASE ${name}`)
  databases.push(name)
  await admin.unsafe(`ALTER ROLE CURRENT_USER IN DATABASE ${name} SET statement_timeout = 30000`)
  return name
}

function directUrl(name: string): string {
  const url = new URL(SERVER)
  url.pathname = `/${name}`
  return url.toString()
}

async function migrated(name: string): Promise<boolean> {
  const direct = new SQL(directUrl(name), { max: 1 })
  try {
    return (await direct`SELECT to_regclass('schema_migrations') AS t`)[0].t !== null
  } finally {
    await direct.close()
  }
}

async function send(api: string, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${api}${path}`, {
    method,
    headers: body === undefined ? { accept: JSON_API } : { accept: JSON_API, 'content-type': JSON_API },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(WAIT_MS),
  })
}

/** An author, written before the requests at once; its id. */
async function firstAuthor(api: string): Promise<string> {
  const created = await send(api, 'POST', '/authors', { data: { type: 'authors', attributes: { name: 'First' } } })
  expect(created.status).toBe(201)
  return ((await created.json()) as { data: { id: string } }).data.id
}

/** 62 requests at once, reads and writes: the load that met 25 answers 500 before the start refused such a pooler. */
async function manyAtOnce(api: string, first: string): Promise<{ status: number; retryAfter: string | null }[]> {
  const answers = await Promise.all(
    Array.from({ length: 62 }, (_, i) =>
      i % 3 === 0
        ? send(api, 'POST', '/books', {
            data: {
              type: 'books',
              attributes: { name: `Book ${i}` },
              relationships: { author: { data: { type: 'authors', id: first } } },
            },
          })
        : send(api, 'GET', i % 3 === 1 ? '/books?sort=-name' : `/authors/${first}?include=books`),
    ),
  )
  return Promise.all(
    answers.map(async (answer) => {
      await answer.arrayBuffer()
      return { status: answer.status, retryAfter: answer.headers.get('retry-after') }
    }),
  )
}

afterEach(stopChildren)
afterAll(async () => {
  removeTempDirs()
  for (const name of databases) await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await admin.close()
})

describeWithPgBouncer('the service and the commands through PgBouncer with prepared statements on', () => {
  let transaction: PgBouncer
  let session: PgBouncer
  beforeAll(async () => {
    transaction = await startPgBouncer(SERVER, { poolSize: 2 })
    session = await startPgBouncer(SERVER, { poolSize: 8, settings: { pool_mode: 'session' } })
  })
  afterAll(async () => {
    await transaction?.stop()
    await session?.stop()
  })

  it('refuses to start in transaction mode, with one line naming DATABASE_PREPARED_STATEMENTS=false and exit 2, and migrates nothing (one process, or workers)', async () => {
    const name = await newDatabase()
    await transaction.fill(name)
    for (const workers of ['1', '2']) {
      const env = { PORT: '0', HOST: '127.0.0.1', DATABASE_URL: transaction.url(name), WORKERS: workers }
      const run = await runCli([], { env })
      expect({ workers, code: run.code, lines: run.lines.length }).toEqual({ workers, code: 2, lines: 1 })
      expect(run.lines[0]).toStartWith(`catalogue: cannot open the database at ${transaction.url(name)}: `)
      expect(run.lines[0]).toContain('a pooler in transaction mode')
      expect(run.lines[0]).toContain(SETTING)
    }
    expect(await migrated(name)).toBe(false)
  })

  it('refuses to start in transaction mode while 8 other clients keep its 5 server connections busy (about 2,000 statements a second): 12 starts, each with exit 2 and the line naming the setting', async () => {
    // The load under which 2 starts in 12 went on, then answered 500s, when the start asked only once.
    const busy = await startPgBouncer(SERVER, { poolSize: 5, settings: { server_round_robin: '0' } })
    try {
      const name = await newDatabase()
      const load = await startPoolerLoad(busy.url(name))
      const starts: { code: number; named: boolean }[] = []
      try {
        for (let i = 0; i < 12; i++) {
          const env = { PORT: '0', HOST: '127.0.0.1', DATABASE_URL: busy.url(name) }
          const run = await runCli([], { env })
          starts.push({ code: run.code, named: run.lines.at(-1)?.includes(SETTING) ?? false })
        }
      } finally {
        await load.stop()
      }
      expect(starts).toEqual(Array.from({ length: 12 }, () => ({ code: 2, named: true })))
      expect(await migrated(name)).toBe(false)
    } finally {
      await busy.stop()
    }
  })

  it('refuses it the same for every command that opens the database: migrate, export, import of books (a dry run too) and of an export', async () => {
    const source = await newDatabase()
    // A catalogue to export, made directly: the commands through PgBouncer are refused.
    expect((await runCli(['migrate'], { env: { DATABASE_URL: directUrl(source) } })).code).toBe(0)
    const dir = tempDir('catalogue-pooler-')
    const exported = join(dir, 'catalogue.jsonl')
    expect((await runCli(['export', exported], { env: { DATABASE_URL: directUrl(source) } })).code).toBe(0)
    const books = join(dir, 'books.csv')
    writeFileSync(books, csvOf([['A title', 'An author', '']]))
    const target = await newDatabase()
    await transaction.fill(target)
    const commands: [string, string, string[]][] = [
      ['migrate', target, ['migrate']],
      ['export', source, ['export', join(dir, 'again.jsonl')]],
      ['import', target, ['import', '--create', books]],
      ['import --dry-run', target, ['import', '--dry-run', books]],
      ['import of an export', target, ['import', '--create', exported]],
    ]
    for (const [command, name, args] of commands) {
      const run = await runCli(args, { env: { DATABASE_URL: transaction.url(name) }, timeoutMs: 30_000 })
      expect({ command, code: run.code, lines: run.lines.length }).toEqual({ command, code: 2, lines: 1 })
      expect(run.lines[0]).toContain(`cannot open the database at ${transaction.url(name)}: `)
      expect(run.lines[0]).toContain(SETTING)
    }
    expect(await migrated(target)).toBe(false)
  })

  it('starts in session mode, where prepared statements work, and answers 62 requests at once without an error', async () => {
    const name = await newDatabase()
    const service = await startService({ DATABASE_URL: session.url(name), DATABASE_POOL_SIZE: '4' })
    const answers = await manyAtOnce(service.api, await firstAuthor(service.api))
    expect(answers.filter((answer) => answer.status >= 300)).toEqual([])
    const dir = tempDir('catalogue-pooler-')
    const run = await runCli(['export', join(dir, 'catalogue.jsonl')], { env: { DATABASE_URL: session.url(name) } })
    expect(run.code).toBe(0)
  })

  it('answers a prepared statement missing or taken with 503 and Retry-After, never 500, when the pooler turns to transaction mode under the running service, and logs the setting to change', async () => {
    const name = await newDatabase()
    // A PgBouncer of its own, switched on its console once the service has started.
    const switched = await startPgBouncer(SERVER, { poolSize: 6, settings: { pool_mode: 'session' } })
    try {
      const service = await startService({ DATABASE_URL: switched.url(name), DATABASE_POOL_SIZE: '4' })
      const first = await firstAuthor(service.api)
      await switched.console("SET pool_mode = 'transaction'")
      const answers = await manyAtOnce(service.api, first)
      const refused = answers.filter((answer) => answer.status === 503)
      expect(refused.length).toBeGreaterThan(0)
      expect(refused.filter((answer) => answer.retryAfter === null)).toEqual([])
      // Another client's statement of the same name may also run with this one's parameters and fail
      // otherwise (a 500), or not fail: that is why the start refuses such a pooler. A statement
      // missing or taken is never one of those 500s.
      const unhandled = service.child.logs.filter((line) => line.msg === 'unhandled error')
      expect(unhandled.filter((line) => String(line.error).includes('prepared statement'))).toEqual([])
      // The first fault logged may be another (08P01: a statement of the same name bound with this
      // one's parameters); the one looked for is a statement missing or taken.
      const logged = await service.child.waitForLog(
        (line) => line.msg === 'database unavailable' && ['26000', '42P05'].includes(String(line.code)),
      )
      expect(logged).toMatchObject({ level: 'error', reason: 'unavailable' })
      expect(String(logged.detail)).toMatch(/^prepared statement "P\d+" (already exists|does not exist): /)
      expect(String(logged.detail)).toContain(SETTING)
    } finally {
      await switched.stop()
    }
  })
})

describeWithPgBouncer("the change feed's LISTEN through PgBouncer (DATABASE_LISTEN_URL)", () => {
  let transaction: PgBouncer
  let session: PgBouncer
  beforeAll(async () => {
    transaction = await startPgBouncer(SERVER, { poolSize: 2 })
    session = await startPgBouncer(SERVER, { poolSize: 8, settings: { pool_mode: 'session' } })
  })
  afterAll(async () => {
    await transaction?.stop()
    await session?.stop()
  })

  const warnings = (logs: readonly { level: string; msg: string }[]) =>
    logs.filter((line) => line.level === 'warn' && /LISTEN/.test(line.msg))

  it('warns once at start, through PgBouncer in transaction mode, that streams fall back to polling and DATABASE_LISTEN_URL should name a direct connection', async () => {
    const name = await newDatabase()
    const through = { DATABASE_URL: transaction.url(name), DATABASE_PREPARED_STATEMENTS: 'false' }
    const service = await startService(through)
    const shown = warnings(service.child.logs)
    expect(shown).toHaveLength(1)
    expect(shown[0]?.msg).toContain('goes through a pooler in transaction mode')
    expect(shown[0]?.msg).toContain('polling, every 100 ms')
    expect(shown[0]?.msg).toContain('set DATABASE_LISTEN_URL to a direct connection to the server')
    expect(shown[0]).toMatchObject({ listen_url: `127.0.0.1:${transaction.port}/${name}` })
    // Listed before the service says it listens: at start, not at the first stream.
    const order = service.child.logs.map((line) => line.msg)
    expect(order.indexOf(shown[0]?.msg as string)).toBeLessThan(order.indexOf('listening'))

    // Told where to listen directly, or through PgBouncer in session mode, which delivers: no warning.
    for (const listen of [directUrl(name), session.url(name)]) {
      await stopChildren()
      const fine = await startService({ ...through, DATABASE_LISTEN_URL: listen })
      expect({ listen, warnings: warnings(fine.child.logs) }).toEqual({ listen, warnings: [] })
    }
  })

  it('logs when LISTEN fails: at start when it cannot reach DATABASE_LISTEN_URL, and when a stream opens and LISTEN fails', async () => {
    const name = await newDatabase()
    const nowhere = `postgres://postgres@127.0.0.1:${freePort()}/${name}`
    const service = await startService({ DATABASE_URL: directUrl(name), DATABASE_LISTEN_URL: nowhere })
    expect(warnings(service.child.logs).map((line) => line.msg)).toEqual([
      expect.stringMatching(
        /^cannot connect to DATABASE_LISTEN_URL \(.+\): change streams find other instances' changes by polling, every 100 ms/,
      ),
    ])
    const stream = new AbortController()
    const opened = await fetch(`${service.api}/changes`, {
      headers: { accept: 'text/event-stream' },
      signal: stream.signal,
    })
    try {
      expect(opened.status).toBe(200)
      const failed = await service.child.waitForLog((line) => line.msg.startsWith('LISTEN failed'))
      expect(failed).toMatchObject({ level: 'warn', listen_url: `127.0.0.1:${new URL(nowhere).port}/${name}` })
      expect(failed.msg).toContain('polling, every 100 ms')
    } finally {
      stream.abort()
    }
  })
})
