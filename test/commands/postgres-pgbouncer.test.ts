import { expect, setDefaultTimeout } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { SQL } from 'bun'
import { postgresMigrations } from '../../src/store/postgres/migrations'
import { csvOf, runCli, type Service, startService } from '../support/commands'
import { describeWithPgBouncer, type PgBouncer, startPgBouncer } from '../support/pgbouncer'
import { afterAll, afterEach, beforeAll, it, POSTGRES_SERVER } from '../support/postgres-tests'
import { removeTempDirs, spawnChild, stopChildren, tempDir, WAIT_MS } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(60_000)

/*
 * The service and the operator commands behind PgBouncer in transaction pooling mode, set up as
 * docs/postgres.md ("Behind PgBouncer") says: DATABASE_PREPARED_STATEMENTS=false, and the statement
 * timeout set on the role in the database, since PgBouncer ignores the one sent at connection.
 */

const SERVER = POSTGRES_SERVER
const JSON_API = 'application/vnd.api+json'
const ATOMIC = `${JSON_API}; ext="https://jsonapi.org/ext/atomic"`
const admin = new SQL(SERVER, { max: 1 })
const databases: string[] = []

/** A new empty database on the server, its statement timeout set on the role (or none); its name. */
async function newDatabase(statementTimeoutMs: number | null = 30_000): Promise<string> {
  const name = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`
  await admin.unsafe(`CREATE DATABASE ${name}`)
  databases.push(name)
  if (statementTimeoutMs !== null) {
    await admin.unsafe(`ALTER ROLE CURRENT_USER IN DATABASE ${name} SET statement_timeout = ${statementTimeoutMs}`)
  }
  return name
}

/** The database's URL on the server itself, not through PgBouncer. */
function directUrl(name: string): string {
  const url = new URL(SERVER)
  url.pathname = `/${name}`
  return url.toString()
}

async function send(api: string, method: string, path: string, body?: unknown, type = JSON_API): Promise<Response> {
  return fetch(`${api}${path}`, {
    method,
    headers: body === undefined ? { accept: type } : { accept: type, 'content-type': type },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(WAIT_MS),
  })
}

async function idOf(response: Response): Promise<string> {
  if (response.status !== 201) throw new Error(`expected 201, got ${response.status}: ${await response.text()}`)
  return ((await response.json()) as { data: { id: string } }).data.id
}

afterEach(stopChildren)
afterAll(async () => {
  removeTempDirs()
  for (const name of databases) await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await admin.close()
})

describeWithPgBouncer('the service through PgBouncer (transaction pooling)', () => {
  let bouncer: PgBouncer
  beforeAll(async () => {
    bouncer = await startPgBouncer(SERVER, { poolSize: 2 })
  })
  afterAll(async () => {
    await bouncer.stop()
  })

  /** The service's settings for database `name` through PgBouncer. */
  const through = (name: string, env: Record<string, string> = {}) => ({
    DATABASE_URL: bouncer.url(name),
    DATABASE_PREPARED_STATEMENTS: 'false',
    DATABASE_POOL_SIZE: '4',
    ...env,
  })

  it('starts on an empty database, two instances at once (one with two workers), migrates it once, and serves many reads and writes at once', async () => {
    const name = await newDatabase()
    await bouncer.fill(name)
    const instances: Service[] = await Promise.all([
      startService(through(name)),
      startService(through(name, { WORKERS: '2' })),
    ])
    const direct = new SQL(directUrl(name), { max: 1 })
    const migrated =
      await direct`SELECT count(*)::int AS applied, count(DISTINCT version)::int AS versions FROM schema_migrations`
    await direct.close()
    expect(migrated[0]).toEqual({ applied: postgresMigrations.length, versions: postgresMigrations.length })

    const apis = instances.map((instance) => instance.api)
    const api = (i: number) => apis[i % apis.length] as string
    // 40 authors and 40 books at once, spread over the instances, then reads, updates and deletes.
    const authors = await Promise.all(
      Array.from({ length: 40 }, async (_, i) =>
        idOf(await send(api(i), 'POST', '/authors', { data: { type: 'author', attributes: { name: `Author ${i}` } } })),
      ),
    )
    const books = await Promise.all(
      authors.map(async (author, i) =>
        idOf(
          await send(api(i + 1), 'POST', '/books', {
            data: { type: 'book', attributes: { name: `Book ${i}`, author_id: Number(author) } },
          }),
        ),
      ),
    )
    const answers = await Promise.all([
      ...books.map((book, i) =>
        send(api(i), 'PATCH', `/books/${book}`, {
          data: { type: 'book', id: book, attributes: { name: `Book ${i}!` } },
        }),
      ),
      ...authors.map((author, i) => send(api(i + 1), 'GET', `/authors/${author}?include=books`)),
      ...Array.from({ length: 20 }, (_, i) =>
        send(api(i), 'GET', '/books?sort=-name&page[size]=7&filter[search]=book'),
      ),
      ...Array.from({ length: 10 }, (_, i) =>
        send(
          api(i),
          'POST',
          '/operations',
          {
            'atomic:operations': [
              { op: 'add', data: { type: 'authors', attributes: { name: `Atomic ${i}` } } },
              { op: 'add', data: { type: 'authors', attributes: { name: `Atomic ${i} too` } } },
            ],
          },
          ATOMIC,
        ),
      ),
    ])
    const statuses = await Promise.all(
      answers.map(async (answer) => {
        await answer.arrayBuffer()
        return answer.status
      }),
    )
    expect(statuses).toEqual([...Array(80).fill(200), ...Array(20).fill(200), ...Array(10).fill(200)])
    const deleted = await Promise.all(books.slice(0, 10).map((book, i) => send(api(i), 'DELETE', `/books/${book}`)))
    expect(deleted.map((answer) => answer.status)).toEqual(Array(10).fill(204))

    const list = await send(api(0), 'GET', '/books?page[size]=100&sort=id')
    const listed = (await list.json()) as { data: { id: string; attributes: { name: string } }[] }
    const byNumber = (ids: string[]) => ids.map(Number).sort((a, b) => a - b)
    expect(byNumber(listed.data.map((book) => book.id))).toEqual(byNumber(books.slice(10)))
    expect(listed.data.every((book) => book.attributes.name.endsWith('!'))).toBe(true)
    const counted = (await (await send(api(1), 'GET', '/authors?page[size]=1')).json()) as { meta: { total: number } }
    expect(counted.meta.total).toBe(60)
    for (const instance of instances) {
      expect((await fetch(`${instance.api.replace('/api/v1', '')}/ready`)).status).toBe(200)
    }
  })

  it('holds STATEMENT_TIMEOUT set on the role: a request waiting on a lock longer gets 503 with Retry-After, then 200', async () => {
    const name = await newDatabase(500)
    const service = await startService(through(name, { STATEMENT_TIMEOUT: '500' }))
    const locker = new SQL(directUrl(name), { max: 1 })
    const held = await locker.reserve()
    try {
      await held`BEGIN`
      await held`LOCK TABLE authors IN ACCESS EXCLUSIVE MODE`
      const started = Date.now()
      const waited = await send(service.api, 'GET', '/authors')
      expect({ status: waited.status, retryAfter: waited.headers.get('retry-after') }).toEqual({
        status: 503,
        retryAfter: '1',
      })
      expect(Date.now() - started).toBeLessThan(WAIT_MS / 2)
      await held`ROLLBACK`
      expect((await send(service.api, 'GET', '/authors')).status).toBe(200)
    } finally {
      held.release()
      await locker.close()
    }
  })

  it('waits at start for another instance migrating, longer than STATEMENT_TIMEOUT, and then starts', async () => {
    const name = await newDatabase(300)
    const other = new SQL(directUrl(name), { max: 1 })
    const migrating = await other.reserve()
    try {
      // What an instance migrating holds (postgres/migrations.ts): its transaction's advisory lock.
      await migrating`BEGIN`
      await migrating`SELECT pg_advisory_xact_lock(7419233001)`
      const starting = startService(through(name, { STATEMENT_TIMEOUT: '300' }))
      await Bun.sleep(1_500)
      await migrating`COMMIT`
      const service = await starting
      expect((await send(service.api, 'GET', '/authors')).status).toBe(200)
    } finally {
      migrating.release()
      await other.close()
    }
  })

  it('answers 503 with Retry-After while PgBouncer holds its queries longer than query_wait_timeout, and 200 again once it lets them through', async () => {
    const name = await newDatabase()
    // A PgBouncer of its own: under the other tests' load a query may wait that long for its turn.
    const waiting = await startPgBouncer(SERVER, { poolSize: 2, settings: { query_wait_timeout: '2' } })
    try {
      const service = await startService({ ...through(name), DATABASE_URL: waiting.url(name) })
      expect((await send(service.api, 'GET', '/authors')).status).toBe(200)
      // PAUSE: what PgBouncer does while it cannot reach the server, the queries wait for a connection.
      await waiting.console(`PAUSE ${name}`)
      const held = await send(service.api, 'GET', '/authors')
      expect({ status: held.status, retryAfter: held.headers.get('retry-after') }).toEqual({
        status: 503,
        retryAfter: '5',
      })
      await waiting.console(`RESUME ${name}`)
      expect((await send(service.api, 'GET', '/authors')).status).toBe(200)
    } finally {
      await waiting.stop()
    }
  })

  it('refuses to start when its connections would not run with STATEMENT_TIMEOUT, saying what to set; starts once it is set', async () => {
    const name = await newDatabase(null)
    const refused = spawnChild(['bun', 'src/cli.ts'], join(import.meta.dir, '..', '..'), {
      PORT: '0',
      HOST: '127.0.0.1',
      ...through(name),
    })
    expect(await refused.exitCode()).toBe(2)
    expect(refused.stderr).toContain(
      "STATEMENT_TIMEOUT is 30000 ms, but the database's connections run with statement_timeout 0 ms",
    )
    const advice = /ALTER ROLE .*? SET statement_timeout = 30000/.exec(refused.stderr)?.[0]
    expect(advice).toBeDefined()
    // Nothing was migrated.
    const direct = new SQL(directUrl(name), { max: 1 })
    try {
      expect((await direct`SELECT to_regclass('schema_migrations') AS t`)[0].t).toBeNull()
    } finally {
      await direct.close()
    }
    await admin.unsafe(advice as string)
    // PgBouncer's open server connections keep what they started with, as the message says.
    expect(refused.stderr).toContain('RECONNECT')
    await bouncer.console(`RECONNECT ${name}`)
    const service = await startService(through(name))
    expect((await send(service.api, 'GET', '/authors')).status).toBe(200)
  })

  it("stops the start with exit 2 and PgBouncer's reason when its ignore_startup_parameters lacks statement_timeout", async () => {
    const name = await newDatabase()
    const strict = await startPgBouncer(SERVER, { settings: { ignore_startup_parameters: 'extra_float_digits' } })
    try {
      const run = await runCli([], {
        env: { PORT: '0', HOST: '127.0.0.1', ...through(name), DATABASE_URL: strict.url(name) },
      })
      expect({ code: run.code, stderr: run.stderr }).toEqual({
        code: 2,
        stderr: `catalogue: cannot open the database at ${strict.url(name)}: unsupported startup parameter: statement_timeout\n`,
      })
    } finally {
      await strict.stop()
    }
  })

  it('runs the operator commands through it: migrate, import (a dry run, then for real, batch after batch), export, and a restore of the export (a dry run, then for real)', async () => {
    const source = await newDatabase()
    await bouncer.fill(source)
    const env = through(source)
    expect((await runCli(['migrate'], { env })).code).toBe(0)

    // Two batches of the import (5,000 books each) and a bit: names and books met again in later batches.
    const rows = Array.from({ length: 11_000 }, (_, i) => [
      `Title ${i % 9_000}`,
      `Author ${i % 700}`,
      i % 3 === 0 ? '' : `Collection ${i % 40}`,
    ])
    const dir = tempDir('catalogue-pgbouncer-')
    const file = join(dir, 'books.csv')
    writeFileSync(file, csvOf(rows))
    const summary =
      /^(?:dry run: would import|imported) (\d+) books \((\d+) authors, (\d+) collections (?:to create|created)\), (\d+) already present/
    const dry = await runCli(['import', '--dry-run', file], { env, timeoutMs: 30_000 })
    expect(dry.code).toBe(0)
    const real = await runCli(['import', file], { env, timeoutMs: 30_000 })
    expect(real.code).toBe(0)
    const dryCounts = summary.exec(dry.lines.at(-1) ?? '')?.slice(1)
    const realCounts = summary.exec(real.lines.at(-1) ?? '')?.slice(1)
    expect(dryCounts).toBeDefined()
    expect(dryCounts).toEqual(realCounts)

    // The setting as a flag this time.
    const exported = join(dir, 'catalogue.jsonl')
    const { DATABASE_PREPARED_STATEMENTS: _, ...withoutVariable } = env
    const flag = ['--database-prepared-statements', 'false']
    expect((await runCli(['export', ...flag, exported], { env: withoutVariable, timeoutMs: 30_000 })).code).toBe(0)
    const text = readFileSync(exported, 'utf8')
    const direct = join(dir, 'direct.jsonl')
    expect(
      (await runCli(['export', direct], { env: { DATABASE_URL: directUrl(source) }, timeoutMs: 30_000 })).code,
    ).toBe(0)
    expect(text).toBe(readFileSync(direct, 'utf8'))

    const target = await newDatabase()
    const targetEnv = through(target)
    expect((await runCli(['migrate'], { env: targetEnv })).code).toBe(0)
    const checked = await runCli(['import', '--dry-run', exported], { env: targetEnv, timeoutMs: 30_000 })
    expect(checked.code).toBe(0)
    const restored = await runCli(['import', exported], { env: targetEnv, timeoutMs: 30_000 })
    expect({ code: restored.code, lines: restored.lines }).toEqual({
      code: 0,
      lines: [expect.stringMatching(/^restored \d+ authors, \d+ book collections and \d+ books, 0 already present/)],
    })
    const again = join(dir, 'again.jsonl')
    expect((await runCli(['export', again], { env: targetEnv, timeoutMs: 30_000 })).code).toBe(0)
    expect(readFileSync(again, 'utf8')).toBe(text)
  })
})
