import { Database } from 'bun:sqlite'
import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SQL } from 'bun'
import { postgresMigrations } from '../../src/store/postgres/migrations'
import { migrate } from '../../src/store/sqlite/migrate'
import { sqliteMigrations } from '../../src/store/sqlite/migrations'
import { REPO, readDatabase, runCli, tempDatabase } from '../support/commands'
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
  it('applies every migration to a new SQLite database, says which on a line each, then how many, and exits 0', async () => {
    const { path, url } = tempDatabase()
    const run = await runCli(['migrate', '--database-url', url])
    expect(run.code).toBe(0)
    expect(run.lines).toEqual([
      ...sqliteMigrations.map((migration) => `applied migration ${migration.version}: ${migration.name}`),
      `the schema of ${url} is now at version ${sqliteMigrations.length}: ${sqliteMigrations.length} migrations applied`,
    ])
    expect(versionsOf(path)).toEqual(sqliteMigrations.map((_, i) => i + 1))
  })

  it('prints on a new SQLite database what docs/operator-commands.md shows, and has the migrations it counts', async () => {
    const doc = readFileSync(join(REPO, 'docs', 'operator-commands.md'), 'utf8')
    const shown = /```\n(applied migration 1:[^`]*)```/.exec(doc)?.[1]
    const { url } = tempDatabase()
    const run = await runCli(['migrate', '--database-url', url])
    expect(run.stderr.replaceAll(url, 'sqlite://data/catalogue.db')).toBe(shown as string)
    expect(doc).toContain(`SQLite has ${sqliteMigrations.length} migrations, PostgreSQL ${postgresMigrations.length}.`)
  })

  it('applies only what an older database lacks, and says so', async () => {
    const { dir, path, url } = tempDatabase()
    mkdirSync(dir, { recursive: true })
    const db = new Database(path)
    migrate(db, sqliteMigrations.slice(0, -1))
    db.close()
    const last = sqliteMigrations.at(-1) as (typeof sqliteMigrations)[number]
    const run = await runCli(['migrate', '--database-url', url])
    expect(run.code).toBe(0)
    expect(run.lines).toEqual([
      `applied migration ${last.version}: ${last.name}`,
      `the schema of ${url} is now at version ${last.version}: 1 migration applied`,
    ])
  })

  it('changes nothing the second time, and says it was up to date', async () => {
    const { path, url } = tempDatabase()
    expect((await runCli(['migrate'], { env: { DATABASE_URL: url } })).code).toBe(0)
    const before = readDatabase(path, (db) => db.query('SELECT * FROM schema_migrations').all())
    const again = await runCli(['migrate'], { env: { DATABASE_URL: url } })
    expect(again.code).toBe(0)
    expect(again.lines).toEqual([
      `the schema of ${url} was up to date already (version ${sqliteMigrations.length}): no migration applied`,
    ])
    expect(readDatabase(path, (db) => db.query('SELECT * FROM schema_migrations').all())).toEqual(before)
  })

  it('builds an index an import stopped before its end left out, and says so on a line of its own', async () => {
    const { path, url } = tempDatabase()
    expect((await runCli(['migrate'], { env: { DATABASE_URL: url } })).code).toBe(0)
    const file = new Database(path)
    file.run('DROP INDEX books_name')
    file.close()
    const again = await runCli(['migrate'], { env: { DATABASE_URL: url } })
    expect(again.code).toBe(0)
    expect(again.lines[0]).toMatch(
      /^built index books_name, which an import stopped before its end had left out \(\d+ ms\)$/,
    )
    expect(
      readDatabase(path, (db) => db.query("SELECT name FROM sqlite_master WHERE name = 'books_name'").all()),
    ).toEqual([{ name: 'books_name' }])
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
      // Each migration applied once, by one of the five, and said by that one alone.
      const applied = runs.flatMap((run) => run.lines.filter((line) => line.startsWith('applied migration ')))
      expect(applied.sort()).toEqual(
        postgresMigrations.map((migration) => `applied migration ${migration.version}: ${migration.name}`).sort(),
      )
      const sixth = await runCli(['migrate', '--database-url', url.toString()])
      expect(sixth.lines).toEqual([
        `the schema of ${url} was up to date already (version ${postgresMigrations.at(-1)?.version}): no migration applied`,
      ])
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
