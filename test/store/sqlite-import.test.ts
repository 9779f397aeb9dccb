import { Database } from 'bun:sqlite'
import { afterEach, beforeEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { resources } from '../../src/resources/registry'
import { IMPORT_BATCH_SIZE } from '../../src/store/import-batches'
import { SqliteBookImport } from '../../src/store/sqlite/import'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'
import { booksIn, countsIn } from '../support/commands'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

const authors = resources.get('authors')
const books = resources.get('books')

let dir: string
let dbPath: string
let store: SqliteStore

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'catalogue-import-'))
  dbPath = join(dir, 'catalogue.db')
  store = SqliteStore.open(dbPath, resources)
})

afterEach(async () => {
  await store.close().catch(() => {})
  rmSync(dir, { recursive: true, force: true })
})

/** The titles of the books a search finds, ranked. */
async function searched(text: string): Promise<unknown[]> {
  const page = await store.page(books, { filters: [{ kind: 'search', text }], sort: [], ranked: true, limit: 20 })
  return page.records.map((record) => record.attributes.name)
}

describe('SqliteStore.openImport', () => {
  it('adds a batch in one transaction, reusing the lowest-id author of a name, and counts what it added', async () => {
    const first = await store.create(authors, { attributes: { name: 'Twice' }, toOne: {} })
    await store.create(authors, { attributes: { name: 'Twice' }, toOne: {} })
    if (!first.ok) throw new Error('seed failed')
    const session = store.openImport({ dryRun: false })
    const counts = await session.add([
      { title: 'One', author: 'Twice', collection: null },
      { title: 'Two', author: 'New', collection: 'Shelf' },
      { title: 'Two', author: 'New', collection: 'Shelf' },
    ])
    await session.close()
    expect(counts).toEqual({ books: 2, present: 1, authors: 1, collections: 1 })
    const [one] = await store.list(books, { filters: [], sort: [{ field: 'id', descending: false }], limit: 1 })
    expect(one?.toOne.author).toBe(first.record.id)
    expect(booksIn(dbPath)).toEqual([
      { title: 'One', author: 'Twice', collection: null },
      { title: 'Two', author: 'New', collection: 'Shelf' },
    ])
  })

  it('keeps the search indexes in step with the books it adds', async () => {
    const session = store.openImport({ dryRun: false })
    await session.add([{ title: 'Earthsea', author: 'Le Guin', collection: 'Cycle' }])
    await session.close()
    const found = await store.list(books, {
      filters: [{ kind: 'search', text: 'guin' }],
      sort: [{ field: 'id', descending: false }],
      limit: 10,
    })
    expect(found.map((book) => book.attributes.name)).toEqual(['Earthsea'])
  })

  it('into an empty catalogue, has its words forgiven typos once it ends, those of every batch', async () => {
    const session = store.openImport({ dryRun: false })
    await session.add([{ title: 'The Dispossessed', author: 'Ursula K. Le Guin', collection: 'Hainish Cycle' }])
    await session.add([{ title: 'Kindred', author: 'Octavia E. Butler', collection: null }])
    await session.close()
    expect(await searched('dispossesed')).toEqual(['The Dispossessed'])
    expect(await searched('hainsh')).toEqual(['The Dispossessed'])
    expect(await searched('kindrde bulter')).toEqual(['Kindred'])
  })

  it('into a catalogue ten times its size, has the words of a batch forgiven typos as soon as the batch is added', async () => {
    const seed = store.openImport({ dryRun: false })
    await seed.add(Array.from({ length: 30 }, (_, i) => ({ title: `Book ${i}`, author: 'Anon', collection: null })))
    await seed.close()
    const session = store.openImport({ dryRun: false })
    try {
      await session.add([{ title: 'Kindred', author: 'Octavia E. Butler', collection: 'Patternist' }])
      expect(await searched('kindrde bulter')).toEqual(['Kindred'])
      expect(await searched('paternist')).toEqual(['Kindred'])
    } finally {
      await session.close()
    }
  })

  it('into a catalogue of no books, builds the indexes of books it does not read at its end, as the schema writes them, and leaves others alone', async () => {
    const indexesOfBooks = () => {
      const file = new Database(dbPath, { readonly: true })
      try {
        return file
          .query(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'books' AND sql IS NOT NULL ORDER BY name",
          )
          .all() as { name: string; sql: string }[]
      } finally {
        file.close()
      }
    }
    // One of the operator's own, beside the generator's.
    const file = new Database(dbPath)
    file.run('CREATE INDEX books_by_length ON books (length(name))')
    file.close()
    const before = indexesOfBooks()
    expect(before.map((index) => index.name)).toContain('books_name')
    const session = store.openImport({ dryRun: false })
    await session.add([{ title: 'Kindred', author: 'Octavia E. Butler', collection: 'Patternist' }])
    // Only the one it reads, to find a book stored by an earlier batch, and the operator's.
    expect(indexesOfBooks().map((index) => index.name)).toEqual(['books_author_name', 'books_by_length'])
    expect(await session.add([{ title: 'Kindred', author: 'Octavia E. Butler', collection: 'Patternist' }])).toEqual({
      books: 0,
      present: 1,
      authors: 0,
      collections: 0,
    })
    await session.close()
    expect(indexesOfBooks()).toEqual(before)
    // As the generator writes them: a strict opening compares them.
    await store.close()
    store = SqliteStore.open(dbPath, resources)
    const sorted = await store.list(books, { filters: [], sort: [{ field: 'name', descending: true }], limit: 5 })
    expect(sorted.map((book) => book.attributes.name)).toEqual(['Kindred'])
  })

  it('into a catalogue with books, keeps every index of books', async () => {
    await store.create(authors, { attributes: { name: 'Anon' }, toOne: {} })
    const seed = store.openImport({ dryRun: false })
    await seed.add([{ title: 'First', author: 'Anon', collection: null }])
    await seed.close()
    const count = () => {
      const file = new Database(dbPath, { readonly: true })
      try {
        return (
          file.query("SELECT count(*) AS n FROM sqlite_master WHERE type = 'index' AND tbl_name = 'books'").get() as {
            n: number
          }
        ).n
      } finally {
        file.close()
      }
    }
    const before = count()
    const session = store.openImport({ dryRun: false })
    await session.add([{ title: 'Second', author: 'Anon', collection: null }])
    expect(count()).toBe(before)
    await session.close()
    expect(count()).toBe(before)
  })

  it('in a dry run stores nothing, counts across batches, and drops its temporary tables on close', async () => {
    const session = store.openImport({ dryRun: true })
    const batch = [{ title: 'T', author: 'A', collection: 'C' }]
    expect(await session.add(batch)).toEqual({ books: 1, present: 0, authors: 1, collections: 1 })
    expect(await session.add(batch)).toEqual({ books: 0, present: 1, authors: 0, collections: 0 })
    await session.close()
    expect(countsIn(dbPath)).toEqual({ authors: 0, collections: 0, books: 0 })
    // Its temporary tables are gone: a second dry run on the connection creates them anew and starts from nothing.
    const again = store.openImport({ dryRun: true })
    expect(await again.add(batch)).toEqual({ books: 1, present: 0, authors: 1, collections: 1 })
    await again.close()
  })

  it('allows one import at a time on a connection', async () => {
    const session = store.openImport({ dryRun: true })
    expect(() => store.openImport({ dryRun: false })).toThrow('an import is already in progress on this connection')
    await session.close()
    const next = store.openImport({ dryRun: false })
    await next.close()
  })
})

describe('SqliteStore.openImport batches', () => {
  it('grow to a twentieth of the books stored once the table holds more than 100,000', async () => {
    const session = store.openImport({ dryRun: false })
    try {
      expect(session.batchSize).toBe(IMPORT_BATCH_SIZE)
      const seed = Array.from({ length: 110_000 }, (_, i) => ({
        title: `Book ${i}`,
        author: `A${i % 9}`,
        collection: null,
      }))
      expect((await session.add(seed)).books).toBe(110_000)
      // 5500, unless the machine was so slow that a second's pace is fewer books.
      expect(session.batchSize).toBeGreaterThan(IMPORT_BATCH_SIZE)
      expect(session.batchSize).toBeLessThanOrEqual(5500)
    } finally {
      await session.close()
    }
  })
})

describe('SqliteBookImport', () => {
  it("gives its connection a 16 MB page cache and statement journals in memory while it runs, and the connection's own settings back when it closes", async () => {
    await store.close()
    const db = new Database(dbPath)
    try {
      const cacheSize = () => (db.query('PRAGMA cache_size').get() as { cache_size: number }).cache_size
      db.run('PRAGMA cache_size = -4000')
      const tempStore = () => (db.query('PRAGMA temp_store').get() as { temp_store: number }).temp_store
      const importer = new SqliteBookImport(db, false)
      expect(cacheSize()).toBe(-16 * 1024)
      // Its statement journals in memory (2), not in temporary files.
      expect(tempStore()).toBe(2)
      db.run('BEGIN IMMEDIATE')
      expect(importer.add([{ title: 'Kindred', author: 'Octavia E. Butler', collection: null }]).books).toBe(1)
      db.run('COMMIT')
      expect(importer.storedAtStart).toBe(0)
      importer.close()
      expect(cacheSize()).toBe(-4000)
      expect(tempStore()).toBe(0)
    } finally {
      db.close()
    }
  })

  it("lets sixteen segments of the books' search index pile up on a level while it imports, and puts the index's own setting back", async () => {
    await store.close()
    const db = new Database(dbPath)
    try {
      const automerge = () =>
        (db.query(`SELECT v FROM books_search_config WHERE k = 'automerge'`).get() as { v: number } | null)?.v
      db.run(`INSERT INTO books_search (books_search, rank) VALUES ('automerge', 6)`)
      const importer = new SqliteBookImport(db, false)
      expect(automerge()).toBe(16)
      db.run('BEGIN IMMEDIATE')
      importer.add([{ title: 'Parable of the Sower', author: 'Octavia E. Butler', collection: null }])
      db.run('COMMIT')
      importer.close()
      expect(automerge()).toBe(6)
      // A dry run writes nothing, not even the setting.
      new SqliteBookImport(db, true).close()
      expect(automerge()).toBe(6)
    } finally {
      db.close()
    }
  })
})
