import { expect, setDefaultTimeout } from 'bun:test'
import { SQL } from 'bun'
import type { ResourceDescription } from '../../src/model/description'
import { authors } from '../../src/resources/authors'
import { bookCollections } from '../../src/resources/book-collections'
import { books } from '../../src/resources/books'
import { resources } from '../../src/resources/registry'
import { migratePostgres } from '../../src/store/postgres/migrate'
import { postgresMigrations } from '../../src/store/postgres/migrations'
import { PostgresStore } from '../../src/store/postgres/postgres-store'
import { afterAll, describe, it, POSTGRES_SERVER } from '../support/postgres-tests'
import { scratchDatabases } from '../support/test-database'

// Shared migration 6 on PostgreSQL takes the vocabularies' unique key away
// (src/store/postgres/vocabulary-ddl.ts): two writers adding new words to two vocabularies in
// opposite orders no longer wait for each other (with the key: a deadlock, a second lost), and a
// word two of them add at once is stored twice but forgiven once.

setDefaultTimeout(60_000)

const scratch = scratchDatabases(POSTGRES_SERVER)
afterAll(() => scratch.dropAll())

const unkeyed = postgresMigrations.findIndex((m) => m.name.includes('vocabularies without a unique key'))

async function searchNames(store: PostgresStore, resource: ResourceDescription, text: string): Promise<unknown[]> {
  const page = await store.page(resource, { filters: [{ kind: 'search', text }], sort: [], ranked: true, limit: 20 })
  return page.records.map((r) => r.attributes.name)
}

/**
 * Two transactions, each adding a new word to one vocabulary then the other's new word to the
 * other, in opposite orders; a statement that would wait for the other fails after 3 s (55P03)
 * instead of waiting. Both commit.
 */
async function crossedWrites(url: string): Promise<void> {
  const one = new SQL(url, { max: 1 })
  const two = new SQL(url, { max: 1 })
  try {
    const first = await one.reserve()
    const second = await two.reserve()
    try {
      for (const tx of [first, second]) await tx.unsafe("BEGIN; SET LOCAL lock_timeout = '3s'")
      await first.unsafe("INSERT INTO authors (name) VALUES ('Quillorne')")
      await second.unsafe("INSERT INTO book_collections (name) VALUES ('Vantrezza')")
      await first.unsafe("INSERT INTO book_collections (name) VALUES ('Vantrezza')")
      await second.unsafe("INSERT INTO authors (name) VALUES ('Quillorne')")
      await first.unsafe('COMMIT')
      await second.unsafe('COMMIT')
    } finally {
      first.release()
      second.release()
    }
  } finally {
    await Promise.all([one.close(), two.close()])
  }
}

describe('PostgreSQL vocabularies without a unique key', () => {
  it('is the migration after the merged triggers', () => {
    expect(unkeyed).toBeGreaterThan(0)
    expect(postgresMigrations[unkeyed - 1]?.name).toContain("a write's triggers merged")
  })

  it('lets two transactions add the same new words in opposite orders without waiting, each word forgiven once', async () => {
    const url = await scratch.fresh()
    const store = await PostgresStore.open(url, resources)
    try {
      await crossedWrites(url)
      const sql = new SQL(url, { max: 1 })
      try {
        const [{ stored }] = await sql`SELECT COUNT(*)::int AS stored FROM authors_words WHERE word = 'quillorne'`
        expect(stored).toBe(2)
      } finally {
        await sql.close()
      }
      // One edit off, each type's word: the record found, each once.
      expect(await searchNames(store, authors, 'quilorne')).toEqual(['Quillorne', 'Quillorne'])
      expect(await searchNames(store, bookCollections, 'vantreza')).toEqual(['Vantrezza', 'Vantrezza'])
    } finally {
      await store.close()
    }
  })

  it('keeps the words of a database the keyed vocabularies held, and adds new ones once a transaction', async () => {
    const url = await scratch.fresh()
    const sql = new SQL(url, { max: 1 })
    try {
      await migratePostgres(sql, postgresMigrations.slice(0, unkeyed))
      await sql.unsafe(`INSERT INTO authors (name) VALUES ('Mervyn Peake');
        INSERT INTO books (name, author_id) VALUES ('Gormenghast', 1)`)
      const words = async () =>
        [...(await sql`SELECT word FROM books_words UNION ALL SELECT word FROM authors_words ORDER BY 1`)].map(
          (r) => r.word,
        )
      const before = await words()
      expect(before).toEqual(['gormenghast', 'mervyn', 'peake'])
      const store = await PostgresStore.open(url, resources)
      try {
        expect(await words()).toEqual(before)
        const [{ keys }] = await sql`
          SELECT COUNT(*)::int AS keys FROM pg_constraint WHERE conrelid = 'books_words'::regclass AND contype = 'p'`
        expect(keys).toBe(0)
        const author = await store.create(authors, { attributes: { name: 'Peake Titus' }, toOne: {} })
        if (!author.ok) throw new Error('the author was not created')
        // 'peake' was held already: not stored again; 'titus' is new.
        expect(await words()).toEqual(['gormenghast', 'mervyn', 'peake', 'titus'])
        const book = await store.create(books, {
          attributes: { name: 'Titus Groan' },
          toOne: { author: author.record.id },
        })
        if (!book.ok) throw new Error('the book was not created')
        expect(await searchNames(store, books, 'gormenghst')).toEqual(['Gormenghast'])
        expect(await searchNames(store, books, 'titus groam')).toEqual(['Titus Groan'])
      } finally {
        await store.close()
      }
    } finally {
      await sql.close()
    }
  })
})
