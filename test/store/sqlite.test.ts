import { Database } from 'bun:sqlite'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'bun:test'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ListQuery, StoreFilter } from '../../src/model/query'
import type { StoredRecord } from '../../src/model/record'
import type { WriteResult } from '../../src/model/writes'
import { resources } from '../../src/resources/registry'
import { sqliteMigrations } from '../../src/store/sqlite/migrations'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'
import { type BulkBook, type BulkCatalogue, byName, byNameDescending, insertCatalogueFile } from '../support/bulk'

const authors = resources.get('authors')
const collections = resources.get('book_collections')
const books = resources.get('books')

let dir: string
let dbPath: string
/** Every store and raw connection a test opens, closed after it even when it fails. */
let opened: { close(): unknown }[]

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'catalogue-store-'))
  dbPath = join(dir, 'catalogue.db')
  opened = []
})

afterEach(async () => {
  for (const handle of opened.reverse()) {
    try {
      await handle.close()
    } catch {
      // already closed by the test
    }
  }
  rmSync(dir, { recursive: true, force: true })
})

function openStore(path = dbPath): SqliteStore {
  const store = SqliteStore.open(path, resources)
  opened.push(store)
  return store
}

/** A separate plain bun:sqlite connection to the same file. */
function inspect(path = dbPath): Database {
  const db = new Database(path)
  opened.push(db)
  return db
}

const byId = [{ field: 'id', descending: false }] as const

/** The records a list query returns, with no includes. */
async function listed(
  store: SqliteStore,
  resource: typeof authors,
  query: Partial<ListQuery> = {},
): Promise<StoredRecord[]> {
  return store.list(resource, { filters: [], sort: byId, limit: 100, ...query })
}

function authorIs(...ids: number[]) {
  return { kind: 'relationship', relationship: 'author', ids, orNone: false } as const
}

function created(result: WriteResult | null): StoredRecord {
  if (!result?.ok) throw new Error(`expected a successful write, got ${JSON.stringify(result)}`)
  return result.record
}

async function author(store: SqliteStore, name: string): Promise<StoredRecord> {
  return created(await store.create(authors, { attributes: { name }, toOne: {} }))
}

async function collection(store: SqliteStore, name: string): Promise<StoredRecord> {
  return created(await store.create(collections, { attributes: { name }, toOne: {} }))
}

async function book(store: SqliteStore, name: string, authorId: number, collectionId?: number): Promise<StoredRecord> {
  const toOne: Record<string, number> = { author: authorId }
  if (collectionId !== undefined) toOne.book_collection = collectionId
  return created(await store.create(books, { attributes: { name }, toOne }))
}

describe('SqliteStore migrations', () => {
  it('creates the authors, book_collections and books tables in a new file', () => {
    openStore()
    const tables = inspect()
      .query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .all()
      .map((row) => row.name)
    expect(tables).toEqual(expect.arrayContaining(['authors', 'book_collections', 'books', 'schema_migrations']))
  })

  it('creates the folder of the database file when it is missing', () => {
    const nested = join(dir, 'a', 'b', 'catalogue.db')
    openStore(nested)
    expect(existsSync(nested)).toBe(true)
  })

  it('records each applied migration once in schema_migrations, with name and time', () => {
    openStore()
    const rows = inspect()
      .query<{ version: number; name: string; applied_at: string }, []>(
        'SELECT version, name, applied_at FROM schema_migrations ORDER BY version',
      )
      .all()
    expect(rows.map((row) => row.version)).toEqual(sqliteMigrations.map((m) => m.version))
    expect(rows.map((row) => row.name)).toEqual(sqliteMigrations.map((m) => m.name))
    for (const row of rows) expect(Number.isNaN(Date.parse(row.applied_at))).toBe(false)
  })

  it('does not re-apply migrations and keeps the data when the file is opened again', async () => {
    const first = openStore()
    const kept = await author(first, 'Ursula K. Le Guin')
    await first.close()
    const second = openStore()
    expect(await second.find(authors, kept.id)).toEqual(kept)
    await second.close()
    const count = inspect().query<{ n: number }, []>('SELECT COUNT(*) AS n FROM schema_migrations').get()
    expect(count?.n).toBe(sqliteMigrations.length)
  })

  it('indexes for search the records a database had before the search migration', async () => {
    // A database as the first release left it: the tables of migration 1 and its version.
    const first = sqliteMigrations[0] as (typeof sqliteMigrations)[number]
    const old = new Database(dbPath, { create: true })
    old.run(first.sql)
    old.run(
      'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
    )
    old.run("INSERT INTO schema_migrations VALUES (1, 'first', '2026-01-01')")
    old.run("INSERT INTO authors (id, name) VALUES (1, 'Émile Zola')")
    old.run("INSERT INTO books (name, author_id) VALUES ('Germinal', 1)")
    old.close()
    const a = { id: 1 }
    const store = openStore()
    const search = (text: string) => ({ kind: 'search', text }) as const
    expect((await listed(store, books, { filters: [search('emile')] })).map((b) => b.attributes.name)).toEqual([
      'Germinal',
    ])
    expect((await listed(store, authors, { filters: [search('zola')] })).map((r) => r.id)).toEqual([a.id])
  })

  it('checkpoints everything into the database file on close, so the file alone holds the data', async () => {
    const store = openStore()
    const kept = await author(store, 'Octavia E. Butler')
    await store.close()
    expect(existsSync(`${dbPath}-wal`)).toBe(false)
    const copy = join(dir, 'copy.db')
    await Bun.write(copy, Bun.file(dbPath))
    expect(inspect(copy).query('SELECT id, name FROM authors').all()).toEqual([
      { id: kept.id, name: 'Octavia E. Butler' },
    ])
  })

  it('refuses a database whose schema is newer than this build knows, naming both versions', () => {
    openStore()
    const latest = sqliteMigrations.at(-1)?.version ?? 0
    const db = new Database(dbPath)
    db.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
      latest + 1,
      'from the future',
      new Date().toISOString(),
    )
    db.close()
    expect(() => SqliteStore.open(dbPath, resources)).toThrow(
      `the database schema is at version ${latest + 1}, newer than this build knows (${latest})`,
    )
  })
})

describe('SqliteStore connection settings', () => {
  it('puts the file in WAL journal mode (seen from a separate connection)', () => {
    openStore()
    const row = inspect().query<{ journal_mode: string }, []>('PRAGMA journal_mode').get()
    expect(row?.journal_mode).toBe('wal')
  })

  it('declares the foreign keys in the schema: with foreign_keys on, SQLite refuses to orphan a book', async () => {
    const store = openStore()
    const a = await author(store, 'A')
    await book(store, 'B', a.id)
    const raw = inspect()
    raw.run('PRAGMA foreign_keys = ON')
    expect(() => raw.run('DELETE FROM authors WHERE id = ?', [a.id])).toThrow('FOREIGN KEY constraint failed')
  })

  it('turns foreign_keys = 1 and synchronous = FULL on for its own connection', () => {
    // Both settings are per connection, so a second connection cannot see them: read the store's own handle.
    // (The nullify test below also shows foreign keys at work: ON DELETE SET NULL only runs with them on.)
    const store = openStore()
    const db = (store as unknown as { db: Database }).db
    expect(db.query<{ foreign_keys: number }, []>('PRAGMA foreign_keys').get()?.foreign_keys).toBe(1)
    expect(db.query<{ synchronous: number }, []>('PRAGMA synchronous').get()?.synchronous).toBe(2)
  })

  it('turns synchronous = NORMAL on at durability normal, FULL at full', () => {
    const synchronousOf = (durability: 'full' | 'normal') => {
      const store = SqliteStore.open(dbPath, resources, { durability })
      opened.push(store)
      const db = (store as unknown as { db: Database }).db
      return db.query<{ synchronous: number }, []>('PRAGMA synchronous').get()?.synchronous
    }
    expect(synchronousOf('normal')).toBe(1)
    expect(synchronousOf('full')).toBe(2)
  })
})

describe('SqliteStore delete (what SQLite itself does)', () => {
  it("clears a deleted collection's books in the column itself (ON DELETE SET NULL)", async () => {
    const store = openStore()
    const a = await author(store, 'A')
    const c = await collection(store, 'C')
    const keep = await collection(store, 'Keep')
    const one = await book(store, 'One', a.id, c.id)
    const two = await book(store, 'Two', a.id, keep.id)
    expect(await store.delete(collections, c.id)).toEqual({ status: 'deleted' })
    expect((await store.find(books, one.id))?.toOne).toEqual({ author: a.id, book_collection: null })
    expect((await store.find(books, two.id))?.toOne).toEqual({ author: a.id, book_collection: keep.id })
    const raw = inspect()
      .query<{ book_collection_id: number | null }, [number]>('SELECT book_collection_id FROM books WHERE id = ?')
      .get(one.id)
    expect(raw?.book_collection_id).toBeNull()
  })

  it('never reuses ids after the table is emptied and the file is reopened', async () => {
    const first = openStore()
    const only = await author(first, 'Only')
    await first.delete(authors, only.id)
    await first.close()
    const second = openStore()
    expect((await author(second, 'After')).id).toBe(only.id + 1)
  })
})

describe('SqliteStore group commit', () => {
  it('commits concurrent writes together and answers each with its own record', async () => {
    const store = openStore()
    const writer = await author(store, 'Writer')
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        store.create(books, { attributes: { name: `B${i}` }, toOne: { author: writer.id } }),
      ),
    )
    const ids = results.map((r) => created(r).id)
    expect(new Set(ids).size).toBe(50)
    expect(results.map((r) => created(r).attributes.name)).toEqual(Array.from({ length: 50 }, (_, i) => `B${i}`))
    const stored = inspect().query<{ n: number }, []>('SELECT COUNT(*) AS n FROM books').get()
    expect(stored?.n).toBe(50)
  })

  it('undoes only the write that fails, and stores the others of the same batch', async () => {
    const store = openStore()
    const writer = await author(store, 'Writer')
    const [first, missing, broken, last] = await Promise.allSettled([
      store.create(books, { attributes: { name: 'First' }, toOne: { author: writer.id } }),
      store.create(books, { attributes: { name: 'Orphan' }, toOne: { author: 9999 } }),
      // No name: the NOT NULL constraint throws inside the batch.
      store.create(authors, { attributes: {}, toOne: {} }),
      store.create(books, { attributes: { name: 'Last' }, toOne: { author: writer.id } }),
    ])
    expect(first.status === 'fulfilled' && first.value.ok).toBe(true)
    expect(missing).toEqual({ status: 'fulfilled', value: { ok: false, missing: ['author'] } })
    expect(broken.status).toBe('rejected')
    expect(last.status === 'fulfilled' && last.value.ok).toBe(true)
    const db = inspect()
    expect(db.query('SELECT name FROM books ORDER BY id').all()).toEqual([{ name: 'First' }, { name: 'Last' }])
    expect(db.query('SELECT name FROM authors').all()).toEqual([{ name: 'Writer' }])
  })

  it('commits what is pending when closed', async () => {
    const store = openStore()
    const pending = store.create(authors, { attributes: { name: 'Late' }, toOne: {} })
    await store.close()
    expect(created(await pending).attributes.name).toBe('Late')
    expect(inspect().query('SELECT name FROM authors').all()).toEqual([{ name: 'Late' }])
  })
})

describe('SqliteStore.stream', () => {
  const sorts = {
    id: { sort: [{ field: 'id', descending: false }], order: (a: BulkBook, b: BulkBook) => a.id - b.id },
    name: {
      sort: [
        { field: 'name', descending: false },
        { field: 'id', descending: false },
      ],
      order: byName,
    },
    '-name': {
      sort: [
        { field: 'name', descending: true },
        { field: 'id', descending: false },
      ],
      order: byNameDescending,
    },
  } as const
  type SortName = keyof typeof sorts

  const collectionIs = (ids: number[], orNone: boolean) =>
    ({ kind: 'relationship', relationship: 'book_collection', ids, orNone }) as const
  const winter = { kind: 'search', text: 'winter' } as const
  const isWinter = (b: BulkBook) => b.name.startsWith('Winter ')

  /**
   * 2,500 books by 4 authors, interleaved (author 2 has 625), three in four in one of 2
   * collections; titles out of id order, each repeated every 1,200 books.
   */
  const plan = {
    authors: ['Ada Quill', 'Bram Fenwick', 'Cora Lindqvist', 'Dell Marsh'],
    collections: ['Northern Tales', 'Southern Tales'],
    books: 2500,
    authorOf: (i: number) => 1 + ((i * 3) % 4),
    collectionOf: (i: number) => (i % 4 === 3 ? null : 1 + (i % 2)),
  }

  /** A store of its own over the plan's books, for a test that writes. */
  function seeded(): { store: SqliteStore; catalogue: BulkCatalogue } {
    const store = openStore()
    return { store, catalogue: insertCatalogueFile(dbPath, plan) }
  }

  // The reads share one seeded file; a test that writes seeds its own.
  let shared: { store: SqliteStore; catalogue: BulkCatalogue; dir: string }
  beforeAll(() => {
    const dir = mkdtempSync(join(tmpdir(), 'catalogue-stream-'))
    const path = join(dir, 'catalogue.db')
    const store = SqliteStore.open(path, resources)
    shared = { store, catalogue: insertCatalogueFile(path, plan), dir }
  })
  afterAll(async () => {
    await shared.store.close()
    rmSync(shared.dir, { recursive: true, force: true })
  })

  /** Every batch of a stream, each checked against `size`. */
  async function batches(stream: AsyncIterable<readonly StoredRecord[]>, size: number): Promise<StoredRecord[][]> {
    const all: StoredRecord[][] = []
    for await (const batch of stream) all.push([...batch])
    all.forEach((batch, i) => {
      expect(batch.length).toBeGreaterThan(0)
      if (i < all.length - 1) expect(batch).toHaveLength(size)
      else expect(batch.length).toBeLessThanOrEqual(size)
    })
    return all
  }

  const stored = (b: BulkBook): StoredRecord => ({
    id: b.id,
    attributes: { name: b.name },
    toOne: { author: b.author, book_collection: b.collection },
  })

  // Keyset batches where an index gives the order; otherwise the ordered ids read once.
  const cases: [string, StoreFilter[], (b: BulkBook) => boolean, SortName, number][] = [
    ['keyset, no filter', [], () => true, 'id', 1000],
    ['keyset, no filter', [], () => true, 'name', 1000],
    ['keyset, no filter', [], () => true, '-name', 333],
    ['keyset, filter[author]=2', [authorIs(2)], (b) => b.author === 2, 'id', 125],
    ['keyset, filter[author]=2', [authorIs(2)], (b) => b.author === 2, 'name', 100],
    ['keyset, filter[author]=2', [authorIs(2)], (b) => b.author === 2, '-name', 64],
    ['keyset, filter[book_collection]=null', [collectionIs([], true)], (b) => b.collection === null, 'name', 200],
    [
      'keyset, filter[name]',
      [{ kind: 'attribute', attribute: 'name', value: 'River 185' }],
      (b) => b.name === 'River 185',
      'id',
      2,
    ],
    ['ids once, filter[search]=winter', [winter], isWinter, 'id', 100],
    ['ids once, filter[search]=winter', [winter], isWinter, '-name', 150],
    ['ids once, filter[author]=1,3', [authorIs(1, 3)], (b) => b.author === 1 || b.author === 3, '-name', 500],
    ['ids once, filter[author]=1,3', [authorIs(1, 3)], (b) => b.author === 1 || b.author === 3, 'id', 1000],
    [
      'ids once, filter[book_collection]=1,null',
      [collectionIs([1], true)],
      (b) => b.collection === 1 || b.collection === null,
      'name',
      300,
    ],
  ]

  for (const [label, filters, matches, sortName, size] of cases) {
    it(`${label}, sort=${sortName}: every matching record once, in order, in batches of ${size}`, async () => {
      const { store, catalogue } = shared
      const { sort, order } = sorts[sortName]
      const expected = catalogue.books.filter(matches).sort(order).map(stored)
      expect(expected.length).toBeGreaterThan(1)
      const got = await batches(store.stream(books, { filters, sort }, size), size)
      expect(got.length).toBe(Math.ceil(expected.length / size))
      expect(got.flat()).toEqual(expected)
    })
  }

  it('streams a ranked search in the order of the same list read at once', async () => {
    const { store, catalogue } = shared
    // Every word must match: "winter" in a title, "quill" in the name of author 1.
    const query = { filters: [{ kind: 'search', text: 'winter quill' } as const], sort: sorts.id.sort, ranked: true }
    const whole = await store.list(books, { ...query, limit: 10_000 })
    const got = await batches(store.stream(books, query, 40), 40)
    expect(got.flat()).toEqual(whole)
    expect(whole.map((r) => r.id).sort((a, b) => a - b)).toEqual(
      catalogue.books.filter((b) => isWinter(b) && b.author === 1).map((b) => b.id),
    )
  })

  it('yields no batch for a list with no records, on either path', async () => {
    const { store } = shared
    for (const filters of [[authorIs(4000)], [{ kind: 'search', text: 'nowhere' } as const], [authorIs(4000, 4001)]]) {
      expect(await batches(store.stream(books, { filters, sort: sorts.name.sort }, 10), 10)).toEqual([])
    }
  })

  it('leaves out a record deleted while the list streams, on either path', async () => {
    const { store, catalogue } = seeded()
    const deleted = new Set<number>()
    for (const authorIds of [[2], [2, 3]]) {
      const expected = catalogue.books
        .filter((b) => authorIds.includes(b.author) && !deleted.has(b.id))
        .sort(byNameDescending)
      // Last in the order: in the last batch, read after the first has been taken.
      const last = expected.at(-1) as BulkBook
      const stream = store.stream(books, { filters: [authorIs(...authorIds)], sort: sorts['-name'].sort }, 100)
      const got: StoredRecord[] = []
      for await (const batch of stream) {
        if (got.length === 0) expect(await store.delete(books, last.id)).toEqual({ status: 'deleted' })
        got.push(...batch)
      }
      deleted.add(last.id)
      expect(got).toEqual(expected.slice(0, -1).map(stored))
    }
  })
})
