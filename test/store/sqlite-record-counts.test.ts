import { Database } from 'bun:sqlite'
import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { resources } from '../../src/resources/registry'
import { migrate } from '../../src/store/sqlite/migrate'
import { sqliteMigrations } from '../../src/store/sqlite/migrations'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'

// Migration 6: record_counts, the count of each table that gives an unfiltered page its total,
// kept by triggers. What it starts from is counted in the file, and checked at every start.

let dir: string
let dbPath: string

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'catalogue-record-counts-'))
  dbPath = join(dir, 'catalogue.db')
})

afterEach(() => {
  rmSync(dir, { recursive: true, force: true })
})

const byId = [{ field: 'id', descending: false }] as const

/** The total of a page of each type, as the store answers it, and the rows of record_counts. */
async function totals(store: SqliteStore) {
  const total = async (type: string) =>
    (await store.page(resources.get(type), { filters: [], sort: byId, limit: 1 })).total
  return {
    authors: await total('authors'),
    book_collections: await total('book_collections'),
    books: await total('books'),
  }
}

/** The numbers 1 to n as a table of one column, value (bun:sqlite has no generate_series). */
const numbers = (n: number) =>
  `(WITH RECURSIVE s(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM s WHERE value < ${n}) SELECT value FROM s)`

function keptCounts(): Record<string, number> {
  const db = new Database(dbPath, { readonly: true })
  try {
    const rows = db
      .query<{ table_name: string; records: number }, []>('SELECT table_name, records FROM record_counts')
      .all()
    return Object.fromEntries(rows.map((row) => [row.table_name, row.records]))
  } finally {
    db.close()
  }
}

describe('migration 7: record_counts', () => {
  it('counts the records of a database written by an earlier version, deleted ones left out', async () => {
    const old = new Database(dbPath, { create: true })
    migrate(old, sqliteMigrations.slice(0, 5))
    old.run(`INSERT INTO authors (name) SELECT 'Author ' || value FROM ${numbers(12)}`)
    old.run("INSERT INTO book_collections (name) VALUES ('Shelf'), ('Gone')")
    old.run(
      `INSERT INTO books (name, author_id, book_collection_id) SELECT 'Book ' || value, 1 + value % 12, 1 + value % 2 FROM ${numbers(250)}`,
    )
    old.run('DELETE FROM books WHERE id % 10 = 0')
    old.run('DELETE FROM book_collections WHERE id = 2')
    old.close()
    const store = SqliteStore.open(dbPath, resources)
    try {
      expect(await totals(store)).toEqual({ authors: 12, book_collections: 1, books: 225 })
      await store.delete(resources.get('books'), 1)
      expect((await totals(store)).books).toBe(224)
    } finally {
      await store.close()
    }
    expect(keptCounts()).toEqual({ authors: 12, book_collections: 1, books: 224 })
  })

  it('keeps its counts through writes the service does not make: many rows in one statement, a savepoint undone', async () => {
    await SqliteStore.open(dbPath, resources).close()
    const db = new Database(dbPath)
    db.run(`INSERT INTO authors (name) SELECT 'Author ' || value FROM ${numbers(40)}`)
    db.run('SAVEPOINT undone')
    db.run('DELETE FROM authors WHERE id > 10')
    db.run('ROLLBACK TO undone')
    db.run('RELEASE undone')
    db.run('DELETE FROM authors WHERE id > 30')
    db.close()
    expect(keptCounts()).toEqual({ authors: 30, book_collections: 0, books: 0 })
  })
})

describe('SqliteStore.open refuses a database without the counts of its pages', () => {
  async function refusal(): Promise<string> {
    try {
      await SqliteStore.open(dbPath, resources, { readOnly: true }).close()
    } catch (error) {
      return (error as Error).message
    }
    throw new Error('expected SqliteStore.open to refuse the database, but it opened')
  }

  it('names the table whose row of record_counts is gone', async () => {
    await SqliteStore.open(dbPath, resources).close()
    const db = new Database(dbPath)
    db.run("DELETE FROM record_counts WHERE table_name = 'books'")
    db.close()
    expect(await refusal()).toBe('record_counts has no row for books, so its pages would have no total')
  })

  it('names a trigger that keeps the counts when it was dropped', async () => {
    await SqliteStore.open(dbPath, resources).close()
    const db = new Database(dbPath)
    db.run('DROP TRIGGER book_collections_records_delete')
    db.close()
    expect(await refusal()).toBe(
      'the database has no trigger book_collections_records_delete, so the total of a page of book_collections would be wrong',
    )
  })
})
