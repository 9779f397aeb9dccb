import { expect, setDefaultTimeout } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SQL } from 'bun'
import { authors } from '../../src/resources/authors'
import { resources } from '../../src/resources/registry'
import { PostgresStore } from '../../src/store/postgres/postgres-store'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'
import type { Store } from '../../src/store/store'
import { insertCatalogue } from '../support/bulk'
import { CLI, REPO, runCli, tempDatabase } from '../support/commands'
import { dumpCatalogue, nextIds, seedGappyCatalogue, writeUntil } from '../support/exports'
import { afterAll, afterEach, describe, it, POSTGRES_SERVER } from '../support/postgres-tests'
import { removeTempDirs, spawnChild, stopChildren, tempDir, WAIT_MS } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(60_000)

/** The server the tests use: POSTGRES_TEST_URL, the local one or a throwaway cluster (postgres-tests.ts). */
const SERVER = POSTGRES_SERVER
const admin = new SQL(SERVER, { max: 1 })
const created: string[] = []

/** A new, empty PostgreSQL database of this file's (no catalogue in it yet), dropped when the file ends. */
async function newDatabase(): Promise<string> {
  const name = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`
  await admin.unsafe(`CREATE DATABASE ${name}`)
  created.push(name)
  const url = new URL(SERVER)
  url.pathname = `/${name}`
  return url.toString()
}

afterEach(stopChildren)
afterAll(async () => {
  removeTempDirs()
  for (const name of created) await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await admin.close()
})

async function withStore<T>(open: () => Promise<Store> | Store, work: (store: Store) => Promise<T>): Promise<T> {
  const store = await open()
  try {
    return await work(store)
  } finally {
    await store.close()
  }
}

const onPostgres = (url: string) => () => PostgresStore.open(url, resources)
const onSqlite = (path: string) => () => SqliteStore.open(path, resources)

/** Exports the database at `url` into a new file and returns its path and text. */
async function exportOf(url: string): Promise<{ file: string; text: string }> {
  const file = join(tempDir('catalogue-export-'), 'catalogue.jsonl')
  const run = await runCli(['export', file], { env: { DATABASE_URL: url } })
  if (run.code !== 0) throw new Error(`export failed: ${run.stderr}`)
  return { file, text: readFileSync(file, 'utf8') }
}

const SUMMARY = /^restored 4 authors, 2 book collections and 5 books, 0 already present, in \d+\.\d s$/

describe('catalogue export and import on PostgreSQL', () => {
  it('restores an export into a new database with the same ids, the counters past its last ids, and exports the same bytes', async () => {
    const source = await newDatabase()
    await withStore(onPostgres(source), seedGappyCatalogue)
    const { file, text } = await exportOf(source)
    expect(JSON.parse(text.split('\n')[0] as string).types).toEqual({
      authors: { records: 4, lastId: 6 },
      book_collections: { records: 2, lastId: 4 },
      books: { records: 5, lastId: 7 },
    })
    const target = await newDatabase()
    const run = await runCli(['import', '--create', file], { env: { DATABASE_URL: target } })
    expect(run.lines).toEqual([expect.stringMatching(SUMMARY)])
    expect(run.code).toBe(0)
    expect(await withStore(onPostgres(target), dumpCatalogue)).toEqual(
      await withStore(onPostgres(source), dumpCatalogue),
    )
    expect((await exportOf(target)).text).toBe(text)
    expect(await withStore(onPostgres(target), nextIds)).toEqual({ author: 7, collection: 5, book: 8 })
  })

  it('gives the same catalogue, byte for byte, from SQLite to PostgreSQL and from PostgreSQL to SQLite', async () => {
    const sqlite = tempDatabase()
    await withStore(onSqlite(sqlite.path), seedGappyCatalogue)
    const fromSqlite = await exportOf(sqlite.url)

    const postgres = await newDatabase()
    expect((await runCli(['import', '--create', fromSqlite.file], { env: { DATABASE_URL: postgres } })).code).toBe(0)
    const fromPostgres = await exportOf(postgres)
    expect(fromPostgres.text).toBe(fromSqlite.text)

    const back = tempDatabase()
    expect((await runCli(['import', '--create', fromPostgres.file], { env: { DATABASE_URL: back.url } })).code).toBe(0)
    expect((await exportOf(back.url)).text).toBe(fromSqlite.text)

    const original = await withStore(onSqlite(sqlite.path), dumpCatalogue)
    expect(await withStore(onPostgres(postgres), dumpCatalogue)).toEqual(original)
    expect(await withStore(onSqlite(back.path), dumpCatalogue)).toEqual(original)
    for (const open of [onPostgres(postgres), onSqlite(back.path)]) {
      expect(await withStore(open, nextIds)).toEqual({ author: 7, collection: 5, book: 8 })
    }
  })

  it('restores an export taken while the database was being written to: one REPEATABLE READ snapshot', async () => {
    const source = await newDatabase()
    await withStore(onPostgres(source), async () => {})
    await insertCatalogue(
      { database: { kind: 'postgres', url: source } },
      {
        authors: Array.from({ length: 3000 }, (_, i) => `Author ${i}`),
        collections: ['Shelf'],
        books: 20_000,
        authorOf: (i) => (i % 3000) + 1,
        collectionOf: (i) => (i % 2 === 0 ? 1 : null),
      },
    )
    const file = join(tempDir('catalogue-export-'), 'catalogue.jsonl')
    const writer = await PostgresStore.open(source, resources)
    const child = spawnChild(['bun', CLI, 'export', file], REPO, { DATABASE_URL: source })
    const exit = child.exitCode(WAIT_MS * 3)
    const rounds = await writeUntil(writer, exit)
    await writer.close()
    expect(await exit).toBe(0)
    expect(rounds).toBeGreaterThan(0)

    const target = tempDatabase()
    const run = await runCli(['import', '--create', file], {
      env: { DATABASE_URL: target.url },
      timeoutMs: WAIT_MS * 3,
    })
    expect(run.lines.at(-1)).toMatch(/^restored \d+ authors, 1 book collection and \d+ books, 0 already present/)
    expect(run.code).toBe(0)
  })

  it('refuses a database that holds records, with one line and exit 2, and changes nothing', async () => {
    const source = await newDatabase()
    await withStore(onPostgres(source), seedGappyCatalogue)
    const { file } = await exportOf(source)
    const target = await newDatabase()
    await withStore(onPostgres(target), async (store) => {
      await store.create(authors, { attributes: { name: 'Already here' }, toOne: {} })
    })
    const before = await withStore(onPostgres(target), dumpCatalogue)
    const run = await runCli(['import', file], { env: { DATABASE_URL: target } })
    expect(run.code).toBe(2)
    expect(run.lines).toEqual([
      expect.stringContaining(
        'already holds 1 author, 0 book collections and 0 books, and', // the URL before, the file after
      ),
    ])
    expect(run.lines[0]).toContain('give --merge to add the records the database lacks')
    expect(await withStore(onPostgres(target), dumpCatalogue)).toEqual(before)
    expect(await withStore(onPostgres(target), nextIds)).toEqual({ author: 2, collection: 1, book: 1 })
  })
})

describe('catalogue import into a PostgreSQL database without the catalogue', () => {
  /** How many tables the database's public schema holds. */
  async function tables(url: string): Promise<number> {
    const sql = new SQL(url, { max: 1 })
    try {
      const [row] = await sql`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`
      return Number(row?.n)
    } finally {
      await sql.close()
    }
  }

  it('exits 2 naming --create; --dry-run creates no table; --create makes the catalogue', async () => {
    const target = await newDatabase()
    const file = join(tempDir('catalogue-import-'), 'books.csv')
    await Bun.write(file, 'title,author,collection\nDune,Frank Herbert,\n')
    const plain = await runCli(['import', file], { env: { DATABASE_URL: target } })
    expect(plain.code).toBe(2)
    expect(plain.lines).toEqual([
      `catalogue import: there is no catalogue at ${target}: check the database's name, or give --create to make a new one there`,
    ])
    const dry = await runCli(['import', '--dry-run', file], { env: { DATABASE_URL: target } })
    expect(dry.code).toBe(0)
    expect(dry.lines.at(-1)).toStartWith('dry run: would import 1 book (1 author, 0 collections to create)')
    expect(await tables(target)).toBe(0)
    const create = await runCli(['import', '--create', file], { env: { DATABASE_URL: target } })
    expect(create.code).toBe(0)
    expect(create.lines.at(-1)).toStartWith('imported 1 book (1 author, 0 collections created)')
  })
})
