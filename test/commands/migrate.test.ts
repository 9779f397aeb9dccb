import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { SQL } from 'bun'
import { sqliteMigrations } from '../../src/store/sqlite-migrations'
import { readDatabase, runCli, tempDatabase } from '../support/commands'
import { it as itOnPostgres, POSTGRES_SERVER } from '../support/postgres-tests'
import { removeTempDirs, stopChildren, WAIT_MS } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

afterAll(async () => {
  await stopChildren()
  removeTempDirs()
})

const versionsOf = (path: string) =>
  readDatabase(path, (db) =>
    db
      .query<{ version: number }, []>('SELECT version FROM schema_migrations ORDER BY version')
      .all()
      .map((row) => row.version),
  )

describe('catalogue migrate', () => {
  it('applies every migration to a new SQLite database, exits 0, and says so on one line', async () => {
    const { path, url } = tempDatabase()
    const run = await runCli(['migrate', '--database-url', url])
    expect(run.code).toBe(0)
    expect(run.lines).toEqual([`the schema of ${url} is up to date (${sqliteMigrations.length} migrations)`])
    expect(versionsOf(path)).toEqual(sqliteMigrations.map((_, i) => i + 1))
  })

  it('changes nothing the second time', async () => {
    const { path, url } = tempDatabase()
    expect((await runCli(['migrate'], { env: { DATABASE_URL: url } })).code).toBe(0)
    const before = readDatabase(path, (db) => db.query('SELECT * FROM schema_migrations').all())
    expect((await runCli(['migrate'], { env: { DATABASE_URL: url } })).code).toBe(0)
    expect(readDatabase(path, (db) => db.query('SELECT * FROM schema_migrations').all())).toEqual(before)
  })

  itOnPostgres('migrates a PostgreSQL database once when five run at the same moment', async () => {
    const server = POSTGRES_SERVER
    const admin = new SQL(server, { max: 1 })
    const name = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`
    await admin.unsafe(`CREATE DATABASE ${name}`)
    try {
      const url = new URL(server)
      url.pathname = `/${name}`
      const runs = await Promise.all(
        Array.from({ length: 5 }, () =>
          runCli(['migrate', '--database-url', url.toString()], { timeoutMs: WAIT_MS * 3 }),
        ),
      )
      expect(runs.map((run) => run.code)).toEqual([0, 0, 0, 0, 0])
      const database = new SQL(url.toString(), { max: 1 })
      const rows =
        await database`SELECT count(*)::int AS applied, count(DISTINCT version)::int AS distinct FROM schema_migrations`
      await database.close()
      expect(rows[0].applied).toBe(rows[0].distinct)
      expect(rows[0].applied).toBeGreaterThan(0)
    } finally {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await admin.close()
    }
  })

  it('exits 2 with one line for an argument it does not take', async () => {
    const run = await runCli(['migrate', 'extra'])
    expect(run.code).toBe(2)
    expect(run.lines).toEqual(['catalogue migrate: unexpected argument "extra" (see catalogue migrate --help)'])
  })

  it('answers --help with its usage', async () => {
    const run = await runCli(['migrate', '--help'])
    expect(run.code).toBe(0)
    expect(run.stdout).toStartWith('catalogue migrate:')
  })
})
