import { expect, setDefaultTimeout } from 'bun:test'
import { SQL } from 'bun'
import { authors } from '../../src/resources/authors'
import { books } from '../../src/resources/books'
import { resources } from '../../src/resources/registry'
import { migratePostgres } from '../../src/store/postgres/migrate'
import { postgresMigrations } from '../../src/store/postgres/migrations'
import { PostgresStore } from '../../src/store/postgres/postgres-store'
import { afterAll, describe, it, POSTGRES_SERVER } from '../support/postgres-tests'

// Shared migration 5 on PostgreSQL merges a write's triggers (src/store/postgres/merged-triggers-
// ddl.ts): a database that older triggers wrote keeps its feed, its page totals and its version
// across it, and the writes after it are counted and recorded as before.

setDefaultTimeout(60_000)

const admin = new SQL(POSTGRES_SERVER, { max: 1 })
const databases: string[] = []
afterAll(async () => {
  for (const name of databases) await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await admin.close()
})

const OLD_WRITES = `
  INSERT INTO authors (name) VALUES ('Mervyn Peake'), ('Ursula Le Guin');
  INSERT INTO book_collections (name) VALUES ('Castle Chronicles');
  INSERT INTO books (name, author_id, book_collection_id) VALUES ('Titus Groan', 1, 1), ('The Dispossessed', 2, NULL), ('Room 1984', 2, NULL);
  UPDATE books SET name = 'Gormenghast' WHERE id = 1;
  DELETE FROM books WHERE id = 3;
`

/** The stored totals of each table beside a recount, and the feed's changes in order. */
async function state(sql: SQL) {
  const totals = await sql`
    SELECT table_name, SUM(records)::int AS records FROM search_totals GROUP BY table_name ORDER BY table_name`
  const recount = await sql`
    SELECT 'authors' AS table_name, COUNT(*)::int AS records FROM authors
    UNION ALL SELECT 'book_collections', COUNT(*)::int FROM book_collections
    UNION ALL SELECT 'books', COUNT(*)::int FROM books ORDER BY table_name`
  const changes = await sql`SELECT type, record_id::int AS id, op FROM changes ORDER BY xid, seq`
  const [{ commits }] = await sql`SELECT SUM(commits)::int AS commits FROM data_version`
  return { totals: [...totals], recount: [...recount], changes: [...changes], commits: commits as number }
}

describe("PostgreSQL's migration merging a write's triggers", () => {
  it('keeps the feed, the page totals and the commit count of a database the older triggers wrote', async () => {
    const name = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`
    await admin.unsafe(`CREATE DATABASE ${name}`)
    databases.push(name)
    const url = new URL(POSTGRES_SERVER)
    url.pathname = `/${name}`
    const sql = new SQL(url.toString(), { max: 1 })
    try {
      const merged = postgresMigrations.findIndex((m) => m.name.includes("a write's triggers merged"))
      expect(merged).toBeGreaterThan(0)
      await migratePostgres(sql, postgresMigrations.slice(0, merged))
      // Each statement its own transaction, as the service writes.
      for (const statement of OLD_WRITES.split(';').filter((s) => s.trim() !== '')) await sql.unsafe(statement)
      const before = await state(sql)
      expect(before.totals).toEqual(before.recount)
      expect(before.commits).toBe(5)

      const store = await PostgresStore.open(url.toString(), resources)
      try {
        const after = await state(sql)
        expect(after).toEqual(before)
        const author = await store.create(authors, { attributes: { name: 'Susanna Clarke' }, toOne: {} })
        if (!author.ok) throw new Error('the author was not created')
        const book = await store.create(books, {
          attributes: { name: 'Piranesi' },
          toOne: { author: author.record.id },
        })
        if (!book.ok) throw new Error('the book was not created')
        await store.update(books, 2, { attributes: { name: 'The Word for World Is Forest' }, toOne: {} })
        expect((await store.delete(books, 1)).status).toBe('deleted')
        const written = await state(sql)
        expect(written.totals).toEqual(written.recount)
        expect(written.commits).toBe(before.commits + 4)
        expect(written.changes.slice(before.changes.length)).toEqual([
          { type: 'authors', id: 3, op: 'create' },
          { type: 'books', id: 4, op: 'create' },
          { type: 'books', id: 2, op: 'update' },
          { type: 'books', id: 1, op: 'delete' },
        ])
        // The new words are in the vocabulary: forgiven at once.
        const page = await store.page(books, {
          filters: [{ kind: 'search', text: 'piranesy' }],
          sort: [],
          ranked: true,
          limit: 20,
        })
        expect(page.records.map((r) => r.attributes.name)).toEqual(['Piranesi'])
      } finally {
        await store.close()
      }
    } finally {
      await sql.close()
    }
  })
})
