import { Database } from 'bun:sqlite'
import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SQL } from 'bun'
import { resources } from '../../src/resources/registry'
import { migratePostgres } from '../../src/store/postgres/migrate'
import { postgresMigrations } from '../../src/store/postgres/migrations'
import { PostgresStore } from '../../src/store/postgres/postgres-store'
import { migrate } from '../../src/store/sqlite/migrate'
import { sqliteMigrations } from '../../src/store/sqlite/migrations'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'
import type { Store } from '../../src/store/store'
import { afterAll as afterAllOnPostgres, it as itOnPostgres, POSTGRES_SERVER } from '../support/postgres-tests'

// Names stored by versions before NFC (docs/names.md) are composed by a migration on either
// backend: SQLite's 5, PostgreSQL's 6.

setDefaultTimeout(30_000)

/** The server the tests use: POSTGRES_TEST_URL, the local one or a throwaway cluster (postgres-tests.ts). */
const SERVER = POSTGRES_SERVER
const admin = new SQL(SERVER, { max: 1 })
const folders: string[] = []
const databases: string[] = []
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true })
})
afterAllOnPostgres(async () => {
  for (const name of databases) await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await admin.close()
})

/** What an earlier version stored: a decomposed name in each table, and names it must leave alone. */
const OLD_ROWS = `
  INSERT INTO authors (id, name) VALUES (1, 'E\u0301mile Zola'), (2, 'Plain ASCII'), (3, 'Zoë, already composed');
  INSERT INTO book_collections (id, name) VALUES (1, 'Les Rougon-Macquart, e\u0301dition');
  INSERT INTO books (id, name, author_id, book_collection_id) VALUES (1, 'The\u0301re\u0300se Raquin', 1, 1);
`

/** The names a store reads after the migration, by table, and what a search of the composed name finds. */
async function namesAfter(store: Store) {
  const names = async (type: string) =>
    (await store.list(resources.get(type), { filters: [], sort: [{ field: 'id', descending: false }], limit: 10 })).map(
      (r) => r.attributes.name,
    )
  const found = await store.list(resources.get('authors'), {
    filters: [{ kind: 'attribute', attribute: 'name', value: 'Émile Zola' }],
    sort: [{ field: 'id', descending: false }],
    limit: 10,
  })
  return {
    authors: await names('authors'),
    book_collections: await names('book_collections'),
    books: await names('books'),
    found: found.map((r) => r.id),
  }
}

const COMPOSED = {
  authors: ['Émile Zola', 'Plain ASCII', 'Zoë, already composed'],
  book_collections: ['Les Rougon-Macquart, édition'],
  books: ['Thérèse Raquin'],
  found: [1],
}

describe('the names migration', () => {
  it('composes the names an earlier version stored decomposed, over SQLite', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'catalogue-names-'))
    folders.push(folder)
    const path = join(folder, 'old.db')
    const old = new Database(path)
    migrate(old, sqliteMigrations.slice(0, 4))
    old.run(OLD_ROWS)
    old.close()
    const store = SqliteStore.open(path, resources)
    try {
      expect(await namesAfter(store)).toEqual(COMPOSED)
    } finally {
      await store.close()
    }
  })

  itOnPostgres('composes the names an earlier version stored decomposed, over PostgreSQL', async () => {
    const name = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`
    await admin.unsafe(`CREATE DATABASE ${name}`)
    databases.push(name)
    const url = new URL(SERVER)
    url.pathname = `/${name}`
    const sql = new SQL(url.toString(), { max: 1 })
    // The schema before names were composed (a store would refuse it: its ids come from record_ids).
    await migratePostgres(sql, postgresMigrations.slice(0, 5))
    await sql.unsafe(OLD_ROWS)
    await sql.close()
    const store = await PostgresStore.open(url.toString(), resources)
    try {
      expect(await namesAfter(store)).toEqual(COMPOSED)
    } finally {
      await store.close()
    }
  })
})
