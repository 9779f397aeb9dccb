import { Database } from 'bun:sqlite'
import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SQL } from 'bun'
import { books } from '../../src/resources/books'
import { resources } from '../../src/resources/registry'
import { migratePostgres } from '../../src/store/postgres/migrate'
import { postgresMigrations } from '../../src/store/postgres/migrations'
import { PostgresStore } from '../../src/store/postgres/postgres-store'
import { migrate } from '../../src/store/sqlite/migrate'
import { sqliteMigrations } from '../../src/store/sqlite/migrations'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'
import type { Store } from '../../src/store/store'
import { afterAll as afterAllOnPostgres, it as itOnPostgres, POSTGRES_SERVER } from '../support/postgres-tests'

// The migration that adds the search vocabularies fills them from the rows a database holds: a
// catalogue written by an earlier version is forgiven typos once migrated, on either backend.

setDefaultTimeout(30_000)

const admin = new SQL(POSTGRES_SERVER, { max: 1 })
const folders: string[] = []
const databases: string[] = []
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true })
})
afterAllOnPostgres(async () => {
  for (const name of databases) await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await admin.close()
})

const OLD_ROWS = `
  INSERT INTO authors (name) VALUES ('Mervyn Peake'), ('Ursula Le Guin');
  INSERT INTO book_collections (name) VALUES ('Castle Chronicles');
  INSERT INTO books (name, author_id, book_collection_id) VALUES ('Titus Groan', 1, 1), ('The Dispossessed', 2, NULL), ('Room 1984', 2, NULL);
`

/** The titles a search finds, most relevant first. */
async function found(store: Store, text: string): Promise<string[]> {
  const page = await store.page(books, { filters: [{ kind: 'search', text }], sort: [], ranked: true, limit: 20 })
  return page.records.map((record) => record.attributes.name as string)
}

async function forgiven(store: Store): Promise<void> {
  expect(await found(store, 'dispossesed')).toEqual(['The Dispossessed'])
  expect(await found(store, 'paeke')).toEqual(['Titus Groan'])
  expect(await found(store, 'chronicels')).toEqual(['Titus Groan'])
  expect(await found(store, 'grona')).toEqual(['Titus Groan'])
  // Words of digits alone are never forgiven.
  expect(await found(store, '1985')).toEqual([])
}

describe('the search vocabularies migration', () => {
  it('fills the vocabularies from the rows a SQLite database holds', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'catalogue-vocabulary-'))
    folders.push(folder)
    const path = join(folder, 'old.db')
    const old = new Database(path)
    const before = sqliteMigrations.findIndex((m) => m.name.startsWith('the search vocabularies'))
    expect(before).toBeGreaterThan(0)
    migrate(old, sqliteMigrations.slice(0, before))
    old.run(OLD_ROWS)
    old.close()
    const store = SqliteStore.open(path, resources)
    try {
      await forgiven(store)
    } finally {
      await store.close()
    }
  })

  itOnPostgres('fills the vocabularies from the rows a PostgreSQL database holds', async () => {
    const name = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`
    await admin.unsafe(`CREATE DATABASE ${name}`)
    databases.push(name)
    const url = new URL(POSTGRES_SERVER)
    url.pathname = `/${name}`
    const sql = new SQL(url.toString(), { max: 1 })
    const before = postgresMigrations.findIndex((m) => m.name.startsWith('the search vocabularies'))
    expect(before).toBeGreaterThan(0)
    await migratePostgres(sql, postgresMigrations.slice(0, before))
    await sql.unsafe(OLD_ROWS)
    await sql.close()
    const store = await PostgresStore.open(url.toString(), resources)
    try {
      await forgiven(store)
    } finally {
      await store.close()
    }
  })
})
