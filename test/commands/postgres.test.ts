import { expect, setDefaultTimeout } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { SQL } from 'bun'
import { csvOf, runCli, startService } from '../support/commands'
import { afterAll, afterEach, beforeAll, describe, it, POSTGRES_SERVER } from '../support/postgres-tests'
import { removeTempDirs, stopChildren, tempDir } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/** The server the tests use: POSTGRES_TEST_URL, the local one or a throwaway cluster (postgres-tests.ts). */
const SERVER = POSTGRES_SERVER
const admin = new SQL(SERVER, { max: 1 })
const database = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`
let databaseUrl: string

beforeAll(async () => {
  await admin.unsafe(`CREATE DATABASE ${database}`)
  const url = new URL(SERVER)
  url.pathname = `/${database}`
  databaseUrl = url.toString()
})
afterEach(stopChildren)
afterAll(async () => {
  removeTempDirs()
  await admin.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
  await admin.close()
})

const JSON_API = 'application/vnd.api+json'

describe('DATABASE_URL=postgres://', () => {
  it('runs the service; catalogue import adds books once however often the file is imported, and export writes them', async () => {
    const file = join(tempDir('catalogue-pg-'), 'books.csv')
    writeFileSync(
      file,
      csvOf([
        ['A Wizard of Earthsea', 'Ursula K. Le Guin', 'Earthsea'],
        ['The Tombs of Atuan', 'Ursula K. Le Guin', 'Earthsea'],
        ['Kindred', 'Octavia E. Butler', ''],
      ]),
    )
    const env = { DATABASE_URL: databaseUrl }
    const first = await runCli(['import', '--create', file], { env })
    expect({ code: first.code, last: first.lines.at(-1) }).toMatchObject({
      code: 0,
      last: expect.stringMatching(/^imported 3 books \(2 authors, 1 collection created\), 0 already present/),
    })
    const again = await runCli(['import', file], { env })
    expect(again.lines.at(-1)).toMatch(/^imported 0 books \(0 authors, 0 collections created\), 3 already present/)

    const exported = await runCli(['export'], { env })
    expect(exported.code).toBe(0)
    const lines = exported.stdout.trimEnd().split('\n')
    expect(JSON.parse(lines[0] as string).types).toEqual({
      authors: { records: 2, lastId: 2 },
      book_collections: { records: 1, lastId: 1 },
      books: { records: 3, lastId: 3 },
    })
    expect(lines.slice(4).map((line) => JSON.parse(line).attributes.name)).toEqual([
      'A Wizard of Earthsea',
      'The Tombs of Atuan',
      'Kindred',
    ])

    const service = await startService({ ...env, DATABASE_POOL_SIZE: '2', STATEMENT_TIMEOUT: '5000' })
    const ready = await fetch(`${service.api.replace('/api/v1', '')}/ready`)
    expect(ready.status).toBe(200)
    const list = await fetch(`${service.api}/books?sort=name&fields[books]=name`, { headers: { accept: JSON_API } })
    expect(list.status).toBe(200)
    const names = ((await list.json()) as { data: { attributes: { name: string } }[] }).data.map(
      (b) => b.attributes.name,
    )
    expect(names).toEqual(['A Wizard of Earthsea', 'Kindred', 'The Tombs of Atuan'])
  })

  it("logs listening with the pool size and the docs URL, not SQLite's durability", async () => {
    const { child } = await startService({ DATABASE_URL: databaseUrl, DATABASE_POOL_SIZE: '3', DURABILITY: 'normal' })
    const listening = await child.waitForLog((line) => line.msg === 'listening')
    const origin = new URL(String(listening.url)).origin
    expect(listening).toMatchObject({ database: databaseUrl, pool_size: 3, docs: `${origin}/docs` })
    expect(listening).not.toHaveProperty('durability')
  })

  it('stops the start with a clear message when the server cannot be reached', async () => {
    const run = await runCli([], {
      env: { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none', DATABASE_CONNECT_TIMEOUT: '2', PORT: '0' },
    })
    expect(run.code).not.toBe(0)
    expect(run.stderr).toContain('cannot open the database at postgres://postgres@127.0.0.1:1/none')
  })

  it('never shows the password of DATABASE_URL in its messages', async () => {
    const run = await runCli([], {
      env: { DATABASE_URL: 'postgres://postgres:s3cret@127.0.0.1:1/none', DATABASE_CONNECT_TIMEOUT: '2', PORT: '0' },
    })
    expect(run.code).not.toBe(0)
    expect(run.stderr).toContain('cannot open the database at postgres://postgres:***@127.0.0.1:1/none')
    expect(run.stderr + run.stdout).not.toContain('s3cret')
  })
})

describe('catalogue import, export and migrate: the pool and timeout settings', () => {
  it.each([
    [['--database-pool-size', '0'], {}, 'DATABASE_POOL_SIZE must be an integer from 1 to 1000 (got "0")'],
    [
      [],
      { DATABASE_CONNECT_TIMEOUT: 'soon' },
      'DATABASE_CONNECT_TIMEOUT must be an integer from 1 to 600 (got "soon")',
    ],
    [['--statement-timeout=-1'], {}, 'STATEMENT_TIMEOUT must be an integer from 0 to 3600000 (got "-1")'],
    [['--database-prepared-statements', 'no'], {}, 'DATABASE_PREPARED_STATEMENTS must be true or false (got "no")'],
  ])('refuses a bad setting (%p %p) with exit 2 and says which', async (flags, env, message) => {
    for (const command of ['migrate', 'export', 'import']) {
      const args = command === 'import' ? [command, ...flags, 'books.csv'] : [command, ...flags]
      const run = await runCli(args, { env: { DATABASE_URL: databaseUrl, ...env } })
      expect({ command, code: run.code, stderr: run.stderr }).toEqual({
        command,
        code: 2,
        stderr: `catalogue ${command}: ${message}\n`,
      })
    }
  })

  it('holds export and import to STATEMENT_TIMEOUT: a table locked elsewhere fails them with exit 1, not a hang', async () => {
    expect((await runCli(['migrate'], { env: { DATABASE_URL: databaseUrl } })).code).toBe(0)
    const file = join(tempDir('catalogue-pg-'), 'books.csv')
    writeFileSync(file, csvOf([['Parable of the Sower', 'Octavia Butler', '']]))
    const url = new URL(SERVER)
    url.pathname = `/${database}`
    const locker = new SQL(url.toString(), { max: 1 })
    const locked = Promise.withResolvers<void>()
    const release = Promise.withResolvers<void>()
    // Every statement on the catalogue's tables waits for this transaction, which ends only when told.
    const holding = locker.begin(async (tx) => {
      await tx`LOCK TABLE authors, book_collections, books IN ACCESS EXCLUSIVE MODE`
      locked.resolve()
      await release.promise
    })
    try {
      await locked.promise
      const started = performance.now()
      const exported = await runCli(['export', '--statement-timeout', '300'], { env: { DATABASE_URL: databaseUrl } })
      const imported = await runCli(['import', file], { env: { DATABASE_URL: databaseUrl, STATEMENT_TIMEOUT: '300' } })
      expect(performance.now() - started).toBeLessThan(20_000)
      expect({ code: exported.code, last: exported.lines.at(-1) }).toEqual({
        code: 1,
        last: expect.stringContaining('statement timeout'),
      })
      expect({ code: imported.code, last: imported.lines.at(-1) }).toEqual({
        code: 1,
        last: expect.stringMatching(/^catalogue import: the database failed \(.*statement timeout/),
      })
    } finally {
      release.resolve()
      await holding
      await locker.close()
    }
    // Once the lock is gone the same import goes through.
    const again = await runCli(['import', file], { env: { DATABASE_URL: databaseUrl, STATEMENT_TIMEOUT: '300' } })
    expect(again.lines.at(-1)).toMatch(/^imported 1 book \(1 author, 0 collections created\)/)
  })
})

describe('DATABASE_URL=postgres:// without a database name', () => {
  /** What a database holds besides PostgreSQL's own catalogs: relations, functions and extensions. */
  const objectsIn = async (url: string): Promise<Record<string, number>> => {
    const sql = new SQL(url, { max: 1 })
    try {
      const [row] = await sql`SELECT
        (SELECT COUNT(*)::int FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')) AS relations,
        (SELECT COUNT(*)::int FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
          WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')) AS functions,
        (SELECT COUNT(*)::int FROM pg_extension) AS extensions`
      return row
    } finally {
      await sql.close()
    }
  }
  /** SERVER with another user and path. */
  const serverUrl = (user: string, path: string) => {
    const url = new URL(SERVER)
    url.username = user
    url.password = ''
    return `${url.protocol}//${url.username}@${url.host}${path}`
  }
  const expectRefused = (run: Awaited<ReturnType<typeof runCli>>, prefix: string, url: string) => {
    expect({ code: run.code, lines: run.lines.length }).toEqual({ code: 2, lines: 1 })
    expect(run.lines[0]).toStartWith(`${prefix}: DATABASE_URL ${url} names no database: add its name after the host`)
  }

  it('refuses to start, migrate, import or export with exit 2 and one line, creating nothing in the database the server would pick', async () => {
    // A user whose own database (the one a URL without a name reaches) it owns, so that a migration there would succeed.
    const user = `r_${Bun.randomUUIDv7().replaceAll('-', '_')}`
    await admin.unsafe(`CREATE ROLE ${user} LOGIN`)
    await admin.unsafe(`CREATE DATABASE ${user} OWNER ${user}`)
    try {
      const own = serverUrl('postgres', `/${user}`)
      const before = await objectsIn(own)
      const file = join(tempDir('catalogue-pg-'), 'books.csv')
      writeFileSync(file, csvOf([['Kindred', 'Octavia E. Butler', '']]))
      for (const url of [serverUrl(user, '/'), serverUrl(user, '')]) {
        const env = { DATABASE_URL: url, PORT: '0' }
        expectRefused(await runCli([], { env }), 'catalogue', url)
        expectRefused(await runCli(['migrate'], { env }), 'catalogue migrate', url)
        expectRefused(await runCli(['import', file], { env }), 'catalogue import', url)
        expectRefused(await runCli(['export'], { env }), 'catalogue export', url)
      }
      expect(await objectsIn(own)).toEqual(before)
    } finally {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${user} WITH (FORCE)`)
      await admin.unsafe(`DROP ROLE IF EXISTS ${user}`)
    }
  })

  it('leaves the postgres maintenance database as it was when the user is postgres', async () => {
    const maintenance = serverUrl('postgres', '/postgres')
    const before = await objectsIn(maintenance)
    const url = serverUrl('postgres', '/')
    expectRefused(await runCli([], { env: { DATABASE_URL: url, PORT: '0' } }), 'catalogue', url)
    expectRefused(await runCli(['migrate'], { env: { DATABASE_URL: url } }), 'catalogue migrate', url)
    expect(await objectsIn(maintenance)).toEqual(before)
  })
})
