import { expect, setDefaultTimeout } from 'bun:test'
import { SQL } from 'bun'
import type { StoredRecord } from '../../src/model/record'
import type { WriteResult } from '../../src/model/writes'
import { resources } from '../../src/resources/registry'
import { migratePostgres } from '../../src/store/postgres/migrate'
import { postgresMigrations } from '../../src/store/postgres/migrations'
import { PostgresStore } from '../../src/store/postgres/postgres-store'
import type { Store } from '../../src/store/store'
import { afterAll, afterEach, describe, it, POSTGRES_SERVER } from '../support/postgres-tests'
import { scratchDatabases } from '../support/test-database'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/*
 * The PostgreSQL store's writes side by side (issue 23): ids from identity sequences, which no
 * transaction holds, and writes that lock only the rows they write (and the foreign keys' FOR KEY
 * SHARE on what they refer to). Each test holds a lock in a transaction of its own and shows which
 * writes wait for it and which do not. The store under test has a STATEMENT_TIMEOUT of 5 s: a write
 * that waited on the held lock would fail with StoreUnavailableError instead of answering.
 */

const authors = resources.get('authors')
const collections = resources.get('book_collections')
const books = resources.get('books')

const scratch = scratchDatabases(POSTGRES_SERVER)
const { admin } = scratch
const freshDatabase = () => scratch.fresh()
const closing: { close(): Promise<void> }[] = []

afterEach(async () => {
  for (const opened of closing.splice(0).reverse()) await opened.close()
})

afterAll(() => scratch.dropAll())

async function open(url: string): Promise<Store> {
  const store = await PostgresStore.open(url, resources, { poolSize: 4, statementTimeoutMs: 5000 })
  closing.push(store)
  return store
}

/** A connection of the test's own, as another client of the database would be. */
function connect(url: string): SQL {
  const sql = new SQL(url, { max: 1 })
  closing.push(sql)
  return sql
}

function created(result: WriteResult | null | 'stale'): StoredRecord {
  if (result === null || result === 'stale' || !result.ok) throw new Error(`write refused: ${JSON.stringify(result)}`)
  return result.record
}

const named = (name: string, toOne: Record<string, number | null> = {}) => ({ attributes: { name }, toOne })
/** The same, for an operation of an atomic batch (references as `{ id }`). */
const inBatch = (name: string, toOne: Record<string, number> = {}) => ({
  attributes: { name },
  toOne: Object.fromEntries(Object.entries(toOne).map(([relationship, id]) => [relationship, { id }])),
})

/** Resolves once a statement of this database waits for a lock (pg_stat_activity). */
async function someoneWaitsForALock(url: string): Promise<void> {
  const database = new URL(url).pathname.slice(1)
  for (let attempt = 0; attempt < 200; attempt++) {
    const [row] = await admin`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = ${database} AND wait_event_type = 'Lock'`
    if (row.n > 0) return
    await Bun.sleep(25)
  }
  throw new Error('no statement waits for a lock')
}

describe('PostgresStore writes side by side', () => {
  it('lets creates and atomic batches of a table go on while another create of that table waits for its author', async () => {
    const url = await freshDatabase()
    const store = await open(url)
    const held = created(await store.create(authors, named('Held')))
    const free = created(await store.create(authors, named('Free')))
    const holder = await connect(url).reserve()
    try {
      await holder`BEGIN`
      await holder`SELECT 1 FROM authors WHERE id = ${held.id} FOR UPDATE`
      // Its foreign key waits for the author's lock, after it took its id.
      const waiting = store.create(books, named('Waits', { author: held.id }))
      await someoneWaitsForALock(url)
      const plain = created(await store.create(books, named('Goes on', { author: free.id })))
      const batch = await store.atomic([
        { kind: 'create', resource: books, input: inBatch('In a batch', { author: free.id }) },
        { kind: 'create', resource: authors, input: inBatch('Also new') },
      ])
      expect(batch.ok).toBe(true)
      await holder`ROLLBACK`
      // Ids increase in the order they are handed out, not in the order of the commits.
      expect(created(await waiting).id).toBeLessThan(plain.id)
    } finally {
      holder.release()
    }
    expect(
      (await store.list(books, { filters: [], sort: [{ field: 'id', descending: false }], limit: 10 })).map(
        (b) => b.attributes.name,
      ),
    ).toEqual(['Waits', 'Goes on', 'In a batch'])
  })

  it('renames an author, with or without an expectation, while a book of theirs is being added', async () => {
    const url = await freshDatabase()
    const store = await open(url)
    const author = created(await store.create(authors, named('Author')))
    const collection = created(await store.create(collections, named('Shelf')))
    const book = created(await store.create(books, named('Book', { author: author.id })))
    const holder = await connect(url).reserve()
    try {
      // Another client's create, not yet committed: its foreign key holds the author FOR KEY SHARE.
      await holder`BEGIN`
      await holder`INSERT INTO books (id, name, author_id) VALUES (1000, 'Pending', ${author.id})`
      expect(created(await store.update(authors, author.id, named('Renamed'))).attributes.name).toBe('Renamed')
      const expected = await store.update(authors, author.id, named('Renamed again'), { expect: () => true })
      expect(created(expected).attributes.name).toBe('Renamed again')
      expect(created(await store.update(collections, collection.id, named('Shelf 2'))).attributes.name).toBe('Shelf 2')
      expect(created(await store.update(books, book.id, named('Book 2'))).attributes.name).toBe('Book 2')
      expect(await store.delete(books, book.id)).toEqual({ status: 'deleted' })
      // A delete of the author does wait for that create: it ends when the create's transaction does.
      const deleting = store.delete(authors, author.id)
      await someoneWaitsForALock(url)
      await holder`COMMIT`
      expect(await deleting).toEqual({ status: 'restricted', by: books, count: 1 })
    } finally {
      holder.release()
    }
  })

  it('updates and deletes books, alone or in a batch, while a write still open changes another book and adds one', async () => {
    const url = await freshDatabase()
    const store = await open(url)
    const author = created(await store.create(authors, named('Author')))
    const [locked, renamed, deleted] = [
      created(await store.create(books, named('Locked', { author: author.id }))),
      created(await store.create(books, named('Renamed', { author: author.id }))),
      created(await store.create(books, named('Deleted', { author: author.id }))),
    ]
    const holder = await connect(url).reserve()
    try {
      await holder`BEGIN`
      await holder`UPDATE books SET name = 'Being changed' WHERE id = ${locked.id}`
      await holder`INSERT INTO books (id, name, author_id) VALUES (1000, 'Pending', ${author.id})`
      expect(created(await store.update(books, renamed.id, named('New name'))).attributes.name).toBe('New name')
      expect(await store.delete(books, deleted.id)).toEqual({ status: 'deleted' })
      const batch = await store.atomic([
        { kind: 'update', resource: books, target: { id: renamed.id }, input: inBatch('Newer name') },
        { kind: 'update', resource: authors, target: { id: author.id }, input: inBatch('Renamed author') },
        { kind: 'create', resource: books, input: inBatch('Added', { author: author.id }) },
      ])
      expect(batch.ok).toBe(true)
    } finally {
      await holder`ROLLBACK`
      holder.release()
    }
  })
})

describe('migration 7: ids from identity columns', () => {
  it('starts each table past both its old counter and its largest id, and drops the counters', async () => {
    const url = await freshDatabase()
    const direct = connect(url)
    await migratePostgres(
      direct,
      postgresMigrations.filter((migration) => migration.version < 7),
    )
    // The last author (5) and collection (3) deleted: counters past the rows; a book stored by hand past its counter.
    await direct`INSERT INTO authors (id, name) VALUES (1, 'A'), (2, 'B')`
    await direct`INSERT INTO books (id, name, author_id) VALUES (1, 'One', 1), (9, 'Nine', 2)`
    await direct`UPDATE record_ids SET last_id = CASE table_name WHEN 'authors' THEN 5 WHEN 'book_collections' THEN 3 ELSE 4 END`
    const store = await open(url)
    expect(created(await store.create(authors, named('Next'))).id).toBe(6)
    expect(created(await store.create(collections, named('Next'))).id).toBe(4)
    expect(created(await store.create(books, named('Next', { author: 1 }))).id).toBe(10)
    const [counters] = await direct`SELECT to_regclass('record_ids') IS NULL AS gone`
    expect(counters.gone).toBe(true)
  })

  it('starts a fresh database at 1', async () => {
    const store = await open(await freshDatabase())
    expect(created(await store.create(authors, named('First'))).id).toBe(1)
  })
})

describe("migration 8: a book's author and collection indexed with its id", () => {
  it('rebuilds both indexes on a database that holds books, under the same names, and the pages of an author read alike', async () => {
    const url = await freshDatabase()
    const direct = connect(url)
    await migratePostgres(
      direct,
      postgresMigrations.filter((migration) => migration.version < 8),
    )
    await direct`INSERT INTO authors (name) VALUES ('A'), ('B')`
    await direct`INSERT INTO book_collections (name) VALUES ('C')`
    await direct`INSERT INTO books (name, author_id, book_collection_id)
      SELECT 'Book ' || n, 1 + n % 2, CASE WHEN n % 3 = 0 THEN NULL ELSE 1 END FROM generate_series(1, 50) AS n`
    const store = await open(url)
    const indexes = await direct`SELECT indexname::text AS name, indexdef::text AS definition FROM pg_indexes
      WHERE tablename = 'books' AND indexname IN ('books_author_id', 'books_book_collection_id') ORDER BY indexname`
    expect(
      indexes.map((row: { name: string; definition: string }) => [row.name, row.definition.split(' USING ')[1]]),
    ).toEqual([
      ['books_author_id', 'btree (author_id, id)'],
      ['books_book_collection_id', 'btree (book_collection_id, id)'],
    ])
    const page = await store.page(books, {
      filters: [{ kind: 'relationship', relationship: 'author', ids: [2], orNone: false }],
      sort: [{ field: 'id', descending: false }],
      limit: 3,
      offset: 2,
    })
    expect({ ids: page.records.map((record) => record.id), total: page.total }).toEqual({ ids: [5, 7, 9], total: 25 })
  })
})
