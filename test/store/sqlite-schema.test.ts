import { Database } from 'bun:sqlite'
import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ResourceDescription } from '../../src/model/description'
import { authors } from '../../src/resources/authors'
import { bookCollections } from '../../src/resources/book-collections'
import { books } from '../../src/resources/books'
import { ResourceRegistry, resources, searchOf } from '../../src/resources/registry'
import { migrate } from '../../src/store/sqlite/migrate'
import { sqliteMigrations } from '../../src/store/sqlite/migrations'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'

// checkSchema, run by SqliteStore.open: a description ahead of its table or its search index is
// refused at start, not answered with wrong data.

let dir: string
let dbPath: string

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'catalogue-schema-'))
  dbPath = join(dir, 'catalogue.db')
})

afterEach(() => {
  rmSync(dir, { recursive: true, force: true })
})

/** The registry of the service with the books description replaced. */
function registryWithBooks(changed: ResourceDescription): ResourceRegistry {
  return new ResourceRegistry([authors, bookCollections, changed])
}

/** The error SqliteStore.open throws; fails the test when it opens. */
async function refusal(open: () => SqliteStore): Promise<Error> {
  let store: SqliteStore
  try {
    store = open()
  } catch (error) {
    if (error instanceof Error) return error
    throw error
  }
  await store.close()
  throw new Error('expected SqliteStore.open to refuse the database, but it opened')
}

/** Migrates the file as the service would, and closes it. */
async function migrated(): Promise<void> {
  await SqliteStore.open(dbPath, resources).close()
}

describe('SqliteStore.open schema check', () => {
  it('opens the migrated database with the service descriptions, read-write and read-only', async () => {
    await migrated()
    await SqliteStore.open(dbPath, resources).close()
    await SqliteStore.open(dbPath, resources, { readOnly: true }).close()
  })

  it('refuses a description with an attribute its table lacks, naming table and column', async () => {
    await migrated()
    const withSubtitle: ResourceDescription = {
      ...books,
      attributes: { ...books.attributes, subtitle: { ...books.attributes.name, column: 'subtitle' } },
    }
    for (const readOnly of [false, true]) {
      const error = await refusal(() => SqliteStore.open(dbPath, registryWithBooks(withSubtitle), { readOnly }))
      expect(error.message).toBe('table books lacks the column(s) subtitle that books describes')
    }
  })

  it('names every missing column, relationship columns too', async () => {
    const wider: ResourceDescription = {
      ...books,
      attributes: { ...books.attributes, subtitle: { ...books.attributes.name, column: 'subtitle' } },
      relationships: {
        ...books.relationships,
        editor: { ...books.relationships.author, column: 'editor_id', idAttribute: 'editor_id' },
      },
    }
    const error = await refusal(() => SqliteStore.open(dbPath, registryWithBooks(wider)))
    expect(error.message).toBe('table books lacks the column(s) subtitle, editor_id that books describes')
  })

  it('refuses books that search only the name, since the index holds the author and collection ids too', async () => {
    await migrated()
    const nameOnly: ResourceDescription = {
      ...books,
      filters: {
        ...books.filters,
        search: { kind: 'search', description: 'titles only', fields: [{ attribute: 'name', weight: 1 }] },
      },
    }
    const error = await refusal(() => SqliteStore.open(dbPath, registryWithBooks(nameOnly)))
    expect(error.message).toBe(
      'the search index books_search holds (name, author_id, book_collection_id), but books searches (name)',
    )
  })

  it('refuses search fields in another order than the index columns', async () => {
    const search = searchOf(books)
    if (!search) throw new Error('books declares no search')
    const reordered: ResourceDescription = {
      ...books,
      filters: { ...books.filters, search: { ...search, fields: [...search.fields].reverse() } },
    }
    const error = await refusal(() => SqliteStore.open(dbPath, registryWithBooks(reordered)))
    expect(error.message).toContain('books_search')
    expect(error.message).toContain('but books searches (book_collection_id, author_id, name)')
  })
})

describe('SqliteStore.open read-only', () => {
  it('refuses an empty database file, which it never migrates, naming the first missing table', async () => {
    new Database(dbPath, { create: true }).close()
    const error = await refusal(() => SqliteStore.open(dbPath, resources, { readOnly: true }))
    expect(error.message).toBe('the database has no table authors for authors')
    const tables = new Database(dbPath, { readonly: true })
    try {
      expect(tables.query('SELECT name FROM sqlite_master').all()).toEqual([])
    } finally {
      tables.close()
    }
  })

  it('refuses a database file that does not exist, and does not create it', async () => {
    const error = await refusal(() => SqliteStore.open(dbPath, resources, { readOnly: true }))
    expect(error.message).toContain('unable to open database file')
    expect(existsSync(dbPath)).toBe(false)
  })

  it('refuses a database migrated only to version 2, whose search index holds names', async () => {
    const old = new Database(dbPath, { create: true })
    migrate(old, sqliteMigrations.slice(0, 2))
    old.close()
    const error = await refusal(() => SqliteStore.open(dbPath, resources, { readOnly: true }))
    expect(error.message).toBe(
      'the search index books_search holds (name, author_name, collection_name), but books searches (name, author_id, book_collection_id)',
    )
  })

  it('refuses a database whose data tables lack the triggers that count changes for version()', async () => {
    const old = new Database(dbPath, { create: true })
    migrate(old, sqliteMigrations.slice(0, 3))
    old.close()
    const error = await refusal(() => SqliteStore.open(dbPath, resources, { readOnly: true }))
    expect(error.message).toBe(
      'the database has no trigger authors_count_insert, so changes to authors would not reach version()',
    )
  })

  it('refuses a database where one of the count triggers was dropped, naming it', async () => {
    await migrated()
    const tables = new Database(dbPath)
    tables.run('DROP TRIGGER books_count_delete')
    tables.close()
    const error = await refusal(() => SqliteStore.open(dbPath, resources))
    expect(error.message).toBe(
      'the database has no trigger books_count_delete, so changes to books would not reach version()',
    )
  })
})

describe('SqliteStore.open compared with the schema the descriptions write', () => {
  it('refuses a file without a search trigger, which no other check names', async () => {
    await migrated()
    const tables = new Database(dbPath)
    tables.run('DROP TRIGGER books_search_delete')
    tables.close()
    const error = await refusal(() => SqliteStore.open(dbPath, resources))
    expect(error.message).toBe("the database has no trigger books_search_delete, which the descriptions' schema holds")
  })

  it('refuses a file whose trigger does other than the generator writes', async () => {
    await migrated()
    const tables = new Database(dbPath)
    tables.run('DROP TRIGGER authors_records_insert')
    tables.run(`CREATE TRIGGER authors_records_insert AFTER INSERT ON authors BEGIN
      UPDATE record_counts SET records = records + 2 WHERE table_name = 'authors';
    END`)
    tables.close()
    const error = await refusal(() => SqliteStore.open(dbPath, resources, { readOnly: true }))
    expect(error.message).toStartWith("the trigger authors_records_insert is not as the descriptions' schema writes it")
  })

  it('builds again a sort index the file lacks (as an import stopped by a crash leaves it), which a reader does without meanwhile', async () => {
    await migrated()
    const tables = new Database(dbPath)
    tables.run('DROP INDEX books_book_collection_name')
    tables.close()
    const indexed = () => {
      const file = new Database(dbPath, { readonly: true })
      try {
        return file.query("SELECT sql FROM sqlite_master WHERE name = 'books_book_collection_name'").get() as {
          sql: string
        } | null
      } finally {
        file.close()
      }
    }
    const reader = SqliteStore.open(dbPath, resources, { readOnly: true })
    expect(
      await reader.list(resources.get('books'), {
        filters: [],
        sort: [{ field: 'name', descending: false }],
        limit: 20,
      }),
    ).toEqual([])
    await reader.close()
    expect(indexed()).toBeNull()
    const built: string[] = []
    const writer = SqliteStore.open(dbPath, resources, { onIndexBuilt: (index) => built.push(index.name) })
    await writer.close()
    expect(built).toEqual(['books_book_collection_name'])
    // As the generator writes it: the next opening's comparison passes.
    expect(indexed()?.sql).toBe('CREATE INDEX books_book_collection_name ON books (book_collection_id, name, id)')
    const again = SqliteStore.open(dbPath, resources, { readOnly: true })
    await again.close()
  })

  it('refuses a file whose sort index is not the one a description implies', async () => {
    await migrated()
    const tables = new Database(dbPath)
    tables.run('DROP INDEX books_book_collection_name')
    tables.run('CREATE INDEX books_book_collection_name ON books (book_collection_id)')
    tables.close()
    const error = await refusal(() => SqliteStore.open(dbPath, resources))
    expect(error.message).toStartWith(
      "the index books_book_collection_name is not as the descriptions' schema writes it",
    )
  })
})
