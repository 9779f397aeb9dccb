import { expect, setDefaultTimeout } from 'bun:test'
import { SQL } from 'bun'
import type { ImportCounts, NamedBook } from '../../src/model/imports'
import type { ListQuery } from '../../src/model/query'
import type { Id, StoredRecord } from '../../src/model/record'
import type { WriteResult } from '../../src/model/writes'
import { resources } from '../../src/resources/registry'
import { StoreUnavailableError } from '../../src/store/faults'
import { postgresMigrations } from '../../src/store/postgres/migrations'
import { PostgresStore } from '../../src/store/postgres/postgres-store'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'
import type { Store } from '../../src/store/store'
import { afterAll, afterEach, beforeAll, describe, it, POSTGRES_SERVER } from '../support/postgres-tests'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

const authors = resources.get('authors')
const collections = resources.get('book_collections')
const books = resources.get('books')

/** The server the tests use: POSTGRES_TEST_URL, the local one or a throwaway cluster (postgres-tests.ts). */
const SERVER = POSTGRES_SERVER
const admin = new SQL(SERVER, { max: 1 })
/** A database of this file's own, dropped after it. */
const database = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`
let databaseUrl: string
const opened: Store[] = []
/** The databases of single tests, dropped after the file. */
const dropAfterAll: string[] = []

function urlOf(name: string): string {
  const url = new URL(SERVER)
  url.pathname = `/${name}`
  return url.toString()
}

beforeAll(async () => {
  await admin.unsafe(`CREATE DATABASE ${database}`)
  databaseUrl = urlOf(database)
})

afterEach(async () => {
  for (const store of opened.splice(0)) await store.close()
})

afterAll(async () => {
  for (const name of [database, ...dropAfterAll]) await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await admin.close()
})

async function open(url = databaseUrl): Promise<PostgresStore> {
  const store = await PostgresStore.open(url, resources, { poolSize: 4 })
  opened.push(store)
  return store
}

/** A fresh, empty database for a test that needs one (ids from 1, migrations not yet run). */
async function freshDatabase(): Promise<string> {
  const name = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`
  await admin.unsafe(`CREATE DATABASE ${name}`)
  dropAfterAll.push(name)
  return urlOf(name)
}

function created(result: WriteResult): StoredRecord {
  if (!result.ok) throw new Error(`write refused: missing ${result.missing.join(', ')}`)
  return result.record
}

const byName: ListQuery = {
  filters: [],
  sort: [
    { field: 'name', descending: false },
    { field: 'id', descending: false },
  ],
  limit: 1000,
}

describe('PostgresStore', () => {
  it('creates, finds, updates and deletes a record', async () => {
    const store = await open()
    const author = created(await store.create(authors, { attributes: { name: 'Ursula K. Le Guin' }, toOne: {} }))
    expect(await store.find(authors, author.id)).toEqual(author)
    const book = created(
      await store.create(books, {
        attributes: { name: 'A Wizard of Earthsea' },
        toOne: { author: author.id, book_collection: null },
      }),
    )
    expect(book.toOne).toEqual({ author: author.id, book_collection: null })
    const renamed = await store.update(books, book.id, { attributes: { name: 'The Tombs of Atuan' }, toOne: {} })
    expect(renamed).toEqual({ ok: true, record: { ...book, attributes: { name: 'The Tombs of Atuan' } } })
    expect(await store.update(books, 999_999, { attributes: { name: 'x' }, toOne: {} })).toBeNull()
    expect(await store.delete(books, book.id)).toEqual({ status: 'deleted' })
    expect(await store.find(books, book.id)).toBeNull()
    expect(await store.delete(books, book.id)).toEqual({ status: 'not-found' })
  })

  it('never hands out the id of a deleted record again', async () => {
    const store = await open(await freshDatabase())
    const first = created(await store.create(authors, { attributes: { name: 'A' }, toOne: {} }))
    const second = created(await store.create(authors, { attributes: { name: 'B' }, toOne: {} }))
    await store.delete(authors, second.id)
    const third = created(await store.create(authors, { attributes: { name: 'C' }, toOne: {} }))
    expect([first.id, second.id, third.id]).toEqual([1, 2, 3])
  })

  it('hands out each id once to concurrent creates; an atomic batch rolled back leaves a gap, its ids never handed out again', async () => {
    const store = await open(await freshDatabase())
    const made = await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.create(authors, { attributes: { name: `N${i}` }, toOne: {} })),
    )
    expect(made.map((result) => created(result).id).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1),
    )
    const failed = await store.atomic([
      { kind: 'create', resource: authors, lid: 'x', input: { attributes: { name: 'Rolled back' }, toOne: {} } },
      { kind: 'delete', resource: authors, target: { id: 999 } },
    ])
    expect(failed).toEqual({ ok: false, index: 1, failure: { kind: 'not-found' } })
    // The batch took 21 from the identity sequence, which its rollback does not give back.
    expect(created(await store.create(authors, { attributes: { name: 'Next' }, toOne: {} })).id).toBe(22)
  })

  it('runs atomic batches that create in opposite orders side by side, none failing', async () => {
    const store = await open()
    const author = { kind: 'create', resource: authors, input: { attributes: { name: 'A' }, toOne: {} } } as const
    const collection = {
      kind: 'create',
      resource: collections,
      input: { attributes: { name: 'C' }, toOne: {} },
    } as const
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, (_, i) => store.atomic(i % 2 === 0 ? [author, collection] : [collection, author])),
    )
    for (const outcome of outcomes) expect(outcome.ok).toBe(true)
  })

  it('runs creates, deletes and atomic batches over the same author side by side without an error', async () => {
    const store = await open()
    for (let round = 0; round < 5; round++) {
      const author = created(await store.create(authors, { attributes: { name: `Busy ${round}` }, toOne: {} }))
      const outcomes = await Promise.all([
        store.create(books, { attributes: { name: 'Plain' }, toOne: { author: author.id } }),
        store.atomic([
          {
            kind: 'create',
            resource: books,
            input: { attributes: { name: 'Batch' }, toOne: { author: { id: author.id } } },
          },
          { kind: 'delete', resource: authors, target: { id: author.id } },
        ]),
        store.delete(authors, author.id),
      ])
      // Whatever the order, each answers with a result, never an error.
      expect(outcomes).toHaveLength(3)
    }
  })

  it('sorts names byte by byte, exactly as the SQLite store does', async () => {
    const names = [
      'b',
      'B',
      'a',
      'A',
      'É',
      'e',
      'E',
      'é',
      'Z',
      'z',
      '😀',
      'ß',
      'ss',
      'Ä',
      'a b',
      'a-b',
      'ab',
      '1',
      '',
      ' ',
    ]
    const postgres = await open(await freshDatabase())
    const sqlite = SqliteStore.open(':memory:', resources)
    try {
      for (const name of names) {
        await postgres.create(authors, { attributes: { name }, toOne: {} })
        await sqlite.create(authors, { attributes: { name }, toOne: {} })
      }
      for (const descending of [false, true]) {
        const query: ListQuery = {
          ...byName,
          sort: [
            { field: 'name', descending },
            { field: 'id', descending: false },
          ],
        }
        const fromPostgres = (await postgres.list(authors, query)).map((r) => r.attributes.name)
        const fromSqlite = (await sqlite.list(authors, query)).map((r) => r.attributes.name)
        expect(fromPostgres).toEqual(fromSqlite)
      }
      // Keyset pages in that order, two at a time, give the same list.
      const pages: string[] = []
      let after: (string | number)[] | undefined
      for (;;) {
        const page = await postgres.list(authors, { ...byName, limit: 2, after })
        pages.push(...page.map((r) => r.attributes.name as string))
        const last = page.at(-1)
        if (!last) break
        after = [last.attributes.name as string, last.id]
      }
      expect(pages).toEqual((await sqlite.list(authors, byName)).map((r) => r.attributes.name as string))
    } finally {
      await sqlite.close()
    }
  })

  it('stores U+0000 in a name, which PostgreSQL text cannot hold, and sorts and finds it as SQLite does', async () => {
    const names = ['a\u0000b', 'a\u0001', 'a\u0001b', 'a', 'a\u0000', 'a\u0002', 'a\u0001\u0001', 'ab']
    const postgres = await open(await freshDatabase())
    const sqlite = SqliteStore.open(':memory:', resources)
    try {
      for (const name of names) {
        await postgres.create(authors, { attributes: { name }, toOne: {} })
        await sqlite.create(authors, { attributes: { name }, toOne: {} })
      }
      expect(await postgres.list(authors, byName)).toEqual(await sqlite.list(authors, byName))
      const exact = { ...byName, filters: [{ kind: 'attribute' as const, attribute: 'name', value: 'a\u0000b' }] }
      expect((await postgres.list(authors, exact)).map((r) => r.id)).toEqual([1])
      const after = { ...byName, after: ['a\u0001', 2], limit: 2 }
      expect(await postgres.list(authors, after)).toEqual(await sqlite.list(authors, after))
    } finally {
      await sqlite.close()
    }
  })

  describe('references', () => {
    it('reports a missing author instead of failing on the foreign key', async () => {
      const store = await open()
      expect(
        await store.create(books, {
          attributes: { name: 'Orphan' },
          toOne: { author: 987_654, book_collection: null },
        }),
      ).toEqual({ ok: false, missing: ['author'] })
      expect(await store.create(books, { attributes: { name: 'Orphan' }, toOne: { author: null } })).toEqual({
        ok: false,
        missing: ['author'],
      })
    })

    it('refuses to delete an author who still has books, and clears a deleted collection from its books', async () => {
      const store = await open()
      const author = created(await store.create(authors, { attributes: { name: 'Kept' }, toOne: {} }))
      const collection = created(await store.create(collections, { attributes: { name: 'Gone' }, toOne: {} }))
      const book = created(
        await store.create(books, {
          attributes: { name: 'T' },
          toOne: { author: author.id, book_collection: collection.id },
        }),
      )
      expect(await store.delete(authors, author.id)).toEqual({ status: 'restricted', by: books, count: 1 })
      expect(await store.delete(collections, collection.id)).toEqual({ status: 'deleted' })
      expect((await store.find(books, book.id))?.toOne.book_collection).toBeNull()
    })

    it('answers "restricted", not an error, when a book is added while its author is deleted', async () => {
      const store = await open()
      for (let round = 0; round < 10; round++) {
        const author = created(await store.create(authors, { attributes: { name: `Race ${round}` }, toOne: {} }))
        const [deleted, added] = await Promise.all([
          store.delete(authors, author.id),
          store.create(books, { attributes: { name: 'Late' }, toOne: { author: author.id } }),
        ])
        // Either the delete came first (the book finds no author) or the book did (the delete is refused).
        if (deleted.status === 'deleted') expect(added).toEqual({ ok: false, missing: ['author'] })
        else expect(deleted).toEqual({ status: 'restricted', by: books, count: 1 })
      }
    })
  })

  describe('lists', () => {
    it('filters, counts and reads members and related records', async () => {
      const store = await open(await freshDatabase())
      const author = created(await store.create(authors, { attributes: { name: 'Le Guin' }, toOne: {} }))
      const other = created(await store.create(authors, { attributes: { name: 'Tolkien' }, toOne: {} }))
      const ids: Id[] = []
      for (const name of ['c', 'a', 'b']) {
        ids.push(created(await store.create(books, { attributes: { name }, toOne: { author: author.id } })).id)
      }
      await store.create(books, { attributes: { name: 'z' }, toOne: { author: other.id } })
      const filtered: ListQuery = {
        ...byName,
        filters: [{ kind: 'relationship', relationship: 'author', ids: [author.id], orNone: false }],
        limit: 2,
      }
      const page = await store.page(books, filtered)
      expect(page.total).toBe(3)
      expect(page.records.map((r) => r.attributes.name)).toEqual(['a', 'b'])
      expect((await store.list(books, { ...filtered, offset: 2 })).map((r) => r.attributes.name)).toEqual(['c'])
      expect(
        await store.list(books, { ...byName, filters: [{ kind: 'attribute', attribute: 'name', value: 'z' }] }),
      ).toHaveLength(1)
      expect(await store.members(authors, 'books', [author.id, other.id, 424242])).toEqual(
        new Map([
          [author.id, ids],
          [other.id, [4]],
        ]),
      )
      const plan = new Map([['author', { include: true, children: new Map() }]])
      const found = await store.findWithRelated(books, ids[0] as Id, plan)
      expect(found?.graph.included.map((i) => i.record)).toEqual([author])
      expect(await store.findMany(books, [ids[2] as Id, 999, ids[0] as Id])).toHaveLength(2)
      const streamed: string[] = []
      for await (const batch of store.stream(books, { filters: [], sort: byName.sort }, 2)) {
        streamed.push(...batch.map((r) => r.attributes.name as string))
      }
      expect(streamed).toEqual(['a', 'b', 'c', 'z'])
    })

    it('changes the members of a to-many relationship in one transaction', async () => {
      const store = await open()
      const author = created(await store.create(authors, { attributes: { name: 'From' }, toOne: {} }))
      const to = created(await store.create(authors, { attributes: { name: 'To' }, toOne: {} }))
      const book = created(await store.create(books, { attributes: { name: 'Moved' }, toOne: { author: author.id } }))
      expect(await store.changeToMany(authors, to.id, 'books', [book.id, 999_999], 'add')).toEqual({
        status: 'missing',
        ids: [999_999],
      })
      expect(await store.changeToMany(authors, to.id, 'books', [book.id], 'add')).toEqual({
        status: 'changed',
        members: [book.id],
      })
      expect(await store.changeToMany(authors, 999_999, 'books', [], 'add')).toEqual({ status: 'not-found' })
      expect(await store.changeToMany(authors, to.id, 'books', [], 'replace', { expect: () => false })).toBe('stale')
    })
  })

  describe('search', () => {
    const catalogue = [
      { title: 'The Left Hand of Darkness', author: 'Ursula Le Guin', collection: 'Hainish Cycle' },
      { title: 'Les Misérables', author: 'Victor Hugo', collection: null },
      { title: 'Darkness Visible', author: 'William Golding', collection: null },
      { title: 'Hand in Hand', author: 'Émile Zola', collection: 'Darkness Series' },
      { title: 'Zola and Ursula', author: 'Anon', collection: null },
    ]
    const queries = [
      'dark',
      'DARK hand',
      'miserables',
      'emile',
      'ursula',
      'le guin',
      'hain left',
      'zola',
      'nothing',
      '',
      '***',
      'darkness series',
    ]

    async function fill(store: Store): Promise<void> {
      for (const entry of catalogue) {
        const author = created(await store.create(authors, { attributes: { name: entry.author }, toOne: {} }))
        const collection = entry.collection
          ? created(await store.create(collections, { attributes: { name: entry.collection }, toOne: {} })).id
          : null
        await store.create(books, {
          attributes: { name: entry.title },
          toOne: { author: author.id, book_collection: collection },
        })
      }
    }

    it('matches every word as a prefix of the title, the author or the collection, as the SQLite store does', async () => {
      const postgres = await open(await freshDatabase())
      const sqlite = SqliteStore.open(':memory:', resources)
      try {
        await fill(postgres)
        await fill(sqlite)
        for (const text of queries) {
          const query = { filters: [{ kind: 'search' as const, text }], sort: [{ field: 'id', descending: false }] }
          expect({ text, ids: await postgres.matchingIds(books, query) }).toEqual({
            text,
            ids: await sqlite.matchingIds(books, query),
          })
        }
      } finally {
        await sqlite.close()
      }
    })

    it('splits words at every character that is not a letter or a digit, as the SQLite index does', async () => {
      const names = [
        'foo.bar',
        'a_b',
        'x/y',
        'C++ Primer',
        '3.14 pi',
        'user@example.com',
        "l'été",
        'NAÏVE',
        '日本語の本',
        'ΣΟΦΙΑ',
        'ПРИВЕТ мир',
        'e-mail',
        'v1.2.3',
        'İstanbul',
      ]
      const words = [
        'bar',
        'foo',
        'b',
        'y',
        'c',
        'primer',
        '14',
        'example',
        'com',
        'ete',
        'l',
        'naive',
        '日本',
        'σοφ',
        'привет',
        'мир',
        'mail',
        '2',
        '1',
        'istanbul',
        'x y',
      ]
      const postgres = await open(await freshDatabase())
      const sqlite = SqliteStore.open(':memory:', resources)
      try {
        for (const name of names) {
          await postgres.create(authors, { attributes: { name }, toOne: {} })
          await sqlite.create(authors, { attributes: { name }, toOne: {} })
        }
        for (const text of words) {
          const query = { filters: [{ kind: 'search' as const, text }], sort: [{ field: 'id', descending: false }] }
          expect({ text, ids: await postgres.matchingIds(authors, query) }).toEqual({
            text,
            ids: await sqlite.matchingIds(authors, query),
          })
        }
        // Beyond SQLite: unaccent also spells out ß, Œ and ligatures.
        await postgres.create(authors, { attributes: { name: 'Straße Œuvre' }, toOne: {} })
        const expanded = await postgres.list(authors, {
          ...byName,
          filters: [{ kind: 'search', text: 'strasse oeuvre' }],
        })
        expect(expanded.map((r) => r.attributes.name)).toEqual(['Straße Œuvre'])
      } finally {
        await sqlite.close()
      }
    })

    it('ranks as the SQLite store does: a title match before a collection-only match, ties by id', async () => {
      const postgres = await open(await freshDatabase())
      const sqlite = SqliteStore.open(':memory:', resources)
      try {
        await fill(postgres)
        await fill(sqlite)
        const ranked = async (store: Store, text: string) =>
          (
            await store.list(books, {
              filters: [{ kind: 'search', text }],
              sort: [{ field: 'id', descending: false }],
              ranked: true,
              limit: 10,
            })
          ).map((r) => r.attributes.name)
        // One book of five is in the "Darkness Series", two titles say "darkness": a title (10) outweighs a collection (1).
        expect(await ranked(postgres, 'darkness')).toEqual([
          'The Left Hand of Darkness',
          'Darkness Visible',
          'Hand in Hand',
        ])
        for (const text of queries)
          expect({ text, ranked: await ranked(postgres, text) }).toEqual({ text, ranked: await ranked(sqlite, text) })
        // A search with no words matches nothing, ranked or not (no ORDER BY of a column position).
        for (const text of ['', '***']) expect(await ranked(postgres, text)).toEqual([])
      } finally {
        await sqlite.close()
      }
    })
  })

  describe('import', () => {
    const batches: NamedBook[][] = [
      [
        { title: 'A Wizard of Earthsea', author: 'Ursula K. Le Guin', collection: 'Earthsea' },
        { title: 'The Tombs of Atuan', author: 'Ursula K. Le Guin', collection: 'Earthsea' },
        { title: 'Germinal', author: 'Émile Zola', collection: null },
        { title: 'Germinal', author: 'Émile Zola', collection: null },
      ],
      [
        { title: 'Germinal', author: 'Émile Zola', collection: null },
        { title: 'Germinal', author: 'Émile Zola', collection: 'Rougon-Macquart' },
        { title: 'Kindred', author: 'Octavia E. Butler', collection: null },
      ],
    ]

    async function importAll(store: Store, dryRun: boolean): Promise<ImportCounts[]> {
      const importer = store.openImport({ dryRun })
      const counts: ImportCounts[] = []
      try {
        for (const batch of batches) counts.push(await importer.add(batch))
      } finally {
        await importer.close()
      }
      return counts
    }

    async function contents(store: Store) {
      const all = { ...byName, sort: [{ field: 'id', descending: false }] }
      return {
        authors: await store.list(authors, all),
        collections: await store.list(collections, all),
        books: await store.list(books, all),
      }
    }

    it('adds, counts and skips books as the SQLite import does, dry run and real, twice', async () => {
      const postgres = await open(await freshDatabase())
      const sqlite = SqliteStore.open(':memory:', resources)
      try {
        for (const dryRun of [true, false, false, true]) {
          expect({ dryRun, counts: await importAll(postgres, dryRun) }).toEqual({
            dryRun,
            counts: await importAll(sqlite, dryRun),
          })
          expect(await contents(postgres)).toEqual(await contents(sqlite))
        }
        expect((await contents(postgres)).books).toHaveLength(5)
      } finally {
        await sqlite.close()
      }
    })

    it('makes the planner statistics of the tables it grows as the books double, not waiting for autovacuum', async () => {
      const url = await freshDatabase()
      const store = await open(url)
      const importer = store.openImport({ dryRun: false })
      try {
        for (let batch = 0; batch < 3; batch++) {
          await importer.add(
            Array.from({ length: 4000 }, (_, i) => ({
              title: `Book ${batch * 4000 + i}`,
              author: `Author ${i % 50}`,
              collection: null,
            })),
          )
        }
      } finally {
        await importer.close()
      }
      const sql = new SQL(url, { max: 1 })
      try {
        // Made after the second batch (8000 books, past 5000 since none; autovacuum, where it is on,
        // may have made them again since).
        const [stats] = await sql`
          SELECT c.reltuples::int AS books, (SELECT COUNT(*)::int FROM pg_stats WHERE tablename = 'books') AS columns,
              (SELECT COUNT(*)::int FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'books') AS described
            FROM pg_class AS c WHERE c.oid = 'books'::regclass`
        // Every column has its statistics (the ids, the name, its stored search words, the references).
        expect(stats.columns).toBe(stats.described)
        expect(stats.books).toBeGreaterThanOrEqual(8000)
      } finally {
        await sql.close()
      }
    })
  })

  describe('search totals (the records of each table, kept by triggers)', () => {
    /** The totals as stored, against a recount of the rows themselves. */
    async function totalsAndRecount(url: string) {
      const sql = new SQL(url, { max: 1 })
      try {
        const stored = await sql`
          SELECT table_name, SUM(records)::int AS records FROM search_totals GROUP BY table_name ORDER BY table_name`
        const recount = await sql`
          SELECT 'authors' AS table_name, COUNT(*)::int AS records FROM authors
          UNION ALL SELECT 'book_collections', COUNT(*)::int FROM book_collections
          UNION ALL SELECT 'books', COUNT(*)::int FROM books
          ORDER BY table_name`
        return { stored: [...stored], recount: [...recount] }
      } finally {
        await sql.close()
      }
    }

    it('match a recount after imports, renames, deletes, a savepoint rolled back, a failed batch and a TRUNCATE', async () => {
      const url = await freshDatabase()
      const store = await open(url)
      const importer = store.openImport({ dryRun: false })
      await importer.add(
        Array.from({ length: 300 }, (_, i) => ({
          title: `Title ${i} of the long night`,
          author: `Author ${i % 7}`,
          collection: i % 3 === 0 ? null : `Shelf ${i % 5}`,
        })),
      )
      await importer.close()
      const check = async () => {
        const { stored, recount } = await totalsAndRecount(url)
        expect(stored).toEqual(recount)
      }
      await check()
      await store.update(books, 3, { attributes: { name: 'A much longer title than it was before' }, toOne: {} })
      await store.update(books, 4, { attributes: {}, toOne: { book_collection: null } })
      await store.update(authors, 1, { attributes: { name: 'Renamed author with many words' }, toOne: {} })
      expect((await store.delete(books, 5)).status).toBe('deleted')
      expect((await store.delete(collections, 1)).status).toBe('deleted')
      await check()
      const failed = await store.atomic([
        {
          kind: 'create',
          resource: books,
          lid: 'a',
          input: { attributes: { name: 'Never stored' }, toOne: { author: { id: 1 } } },
        },
        { kind: 'delete', resource: books, target: { id: 999_999 } },
      ])
      expect(failed.ok).toBe(false)
      await check()
      const sql = new SQL(url, { max: 1 })
      try {
        // Written by hand: many rows in one statement, a savepoint undone, then one TRUNCATE.
        await sql.begin(async (tx) => {
          await tx`UPDATE books SET name = name || ' again' WHERE id <= 100`
          await tx
            .savepoint(async (sp) => {
              await sp`DELETE FROM books WHERE id > 200`
              throw new Error('undone')
            })
            .catch(() => {})
          await tx`INSERT INTO authors (id, name) VALUES (1000, 'Hand written')`
        })
        await check()
        await sql.begin(async (tx) => {
          // (A TRUNCATE must come before any change of the same table in its transaction.)
          await tx`INSERT INTO book_collections (id, name) VALUES (1000, 'Kept beside the truncate')`
          await tx`TRUNCATE books`
        })
        await check()
      } finally {
        await sql.close()
      }
    })
  })

  describe('page totals (the sum of the search_totals slots)', () => {
    it('are exact while three instances create, delete and fail atomic batches at once, each on its own connections', async () => {
      const url = await freshDatabase()
      const instances = [await open(url), await open(url), await open(url)]
      const [first] = instances as [PostgresStore]
      const author = created(await first.create(authors, { attributes: { name: 'A' }, toOne: {} }))
      const byId = [{ field: 'id', descending: false }] as const
      const total = async (store: Store) => (await store.page(books, { filters: [], sort: byId, limit: 1 })).total
      // Each instance: 40 creates, a delete of every other of them, and two batches that fail.
      await Promise.all(
        instances.map(async (store, n) => {
          const ids = await Promise.all(
            Array.from(
              { length: 40 },
              async (_, i) =>
                created(
                  await store.create(books, { attributes: { name: `Book ${n}.${i}` }, toOne: { author: author.id } }),
                ).id,
            ),
          )
          const failing = () =>
            store.atomic([
              {
                kind: 'create',
                resource: books,
                input: { attributes: { name: 'Undone' }, toOne: { author: { id: author.id } } },
              },
              { kind: 'delete', resource: books, target: { id: 999_999 } },
            ])
          await Promise.all([
            ...ids.filter((_, i) => i % 2 === 0).map((id) => store.delete(books, id)),
            failing(),
            failing(),
          ])
        }),
      )
      // 3 × (40 created - 20 deleted): every instance reads it.
      for (const store of instances) expect(await total(store)).toBe(60)
      const sql = new SQL(url, { max: 1 })
      try {
        const [row] = await sql`SELECT (SELECT SUM(records) FROM search_totals WHERE table_name = 'books')::int AS kept,
          (SELECT COUNT(*) FROM books)::int AS counted,
          (SELECT COUNT(*) FROM search_totals WHERE table_name = 'books' AND records <> 0)::int AS slots`
        expect(row.kept).toBe(row.counted)
        // The writes went through several connections, so several slots: none waited for one row.
        expect(row.slots).toBeGreaterThan(1)
      } finally {
        await sql.close()
      }
    })
  })

  describe('migrations', () => {
    it('migrates once when five stores start together on an empty database, STATEMENT_TIMEOUT not applying to it', async () => {
      const url = await freshDatabase()
      // A statement timeout far shorter than a migration: it does not apply to migrating.
      const stores = await Promise.all(
        Array.from({ length: 5 }, async () => {
          const store = await PostgresStore.open(url, resources, { poolSize: 2, statementTimeoutMs: 1 })
          opened.push(store)
          return store
        }),
      )
      const check = new SQL(url, { max: 1 })
      try {
        const rows = await check`SELECT version FROM schema_migrations ORDER BY version`
        expect(rows.map((r: { version: number }) => r.version)).toEqual(postgresMigrations.map((m) => m.version))
      } finally {
        await check.close()
      }
      expect(stores).toHaveLength(5)
    })
  })

  describe('faults', () => {
    it('is ready on a migrated database, and not once the schema is behind this build', async () => {
      const store = await open()
      await store.ready()
      const behind = await PostgresStore.open(databaseUrl, resources, {
        migrations: [...postgresMigrations, { version: 99, name: 'later', sql: 'SELECT 1' }],
      })
      opened.push(behind)
      const check = new SQL(databaseUrl, { max: 1 })
      try {
        await check`DELETE FROM schema_migrations WHERE version = 99`
      } finally {
        await check.close()
      }
      const error = await behind.ready().catch((e: unknown) => e)
      expect(error).toBeInstanceOf(StoreUnavailableError)
      expect((error as StoreUnavailableError).code).toBe('MIGRATIONS_PENDING')
    })

    it('fails with StoreUnavailableError when the server cannot be reached', async () => {
      const error = await PostgresStore.open('postgres://postgres@127.0.0.1:1/test', resources, {
        connectTimeoutSeconds: 2,
      }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(StoreUnavailableError)
    })

    it('answers StoreUnavailableError when its connections are cut, and recovers by itself', async () => {
      const store = await open()
      await store.find(authors, 1)
      await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${database} AND pid <> pg_backend_pid()`
      const failures: unknown[] = []
      let recovered = false
      for (let attempt = 0; attempt < 20 && !recovered; attempt++) {
        try {
          await store.find(authors, 1)
          recovered = true
        } catch (error) {
          failures.push(error)
          await Bun.sleep(100)
        }
      }
      expect(recovered).toBe(true)
      for (const failure of failures) expect(failure).toBeInstanceOf(StoreUnavailableError)
    })
  })
})
