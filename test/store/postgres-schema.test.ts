import { expect, setDefaultTimeout } from 'bun:test'
import { SQL } from 'bun'
import type { ResourceDescription } from '../../src/model/description'
import { authors } from '../../src/resources/authors'
import { bookCollections } from '../../src/resources/book-collections'
import { books } from '../../src/resources/books'
import { ResourceRegistry, resources } from '../../src/resources/registry'
import { commitFlushFunction } from '../../src/store/postgres/merged-triggers-ddl'
import { PostgresStore } from '../../src/store/postgres/postgres-store'
import { afterAll, beforeEach, describe, it, POSTGRES_SERVER } from '../support/postgres-tests'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

// The schema check of PostgresStore.open (src/store/postgres/schema.ts), as test/store/sqlite-schema
// has it for SQLite: a description ahead of its migration, or a schema changed by hand, stops the
// start with a sentence naming what is missing, before any request is answered.

/** The server the tests use: POSTGRES_TEST_URL, the local one or a throwaway cluster (postgres-tests.ts). */
const SERVER = POSTGRES_SERVER
const admin = new SQL(SERVER, { max: 1 })
const created: string[] = []
let url: string
let direct: SQL | undefined

function urlOf(name: string): string {
  const at = new URL(SERVER)
  at.pathname = `/${name}`
  return at.toString()
}

/** A fresh database, migrated as the service would migrate it, and a plain connection to it. */
beforeEach(async () => {
  await direct?.close()
  const name = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`
  await admin.unsafe(`CREATE DATABASE ${name}`)
  created.push(name)
  url = urlOf(name)
  await (await PostgresStore.open(url, resources, { poolSize: 1 })).close()
  direct = new SQL(url, { max: 1 })
})

afterAll(async () => {
  await direct?.close()
  for (const name of created) await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await admin.close()
})

/** The error PostgresStore.open throws; fails the test when it opens. */
async function refusal(registry: ResourceRegistry): Promise<Error> {
  let store: PostgresStore
  try {
    store = await PostgresStore.open(url, registry, { poolSize: 1 })
  } catch (error) {
    if (error instanceof Error) return error
    throw error
  }
  await store.close()
  throw new Error('expected PostgresStore.open to refuse the database, but it opened')
}

function registryWithBooks(changed: ResourceDescription): ResourceRegistry {
  return new ResourceRegistry([authors, bookCollections, changed])
}

describe('PostgresStore.open schema check', () => {
  it('opens the migrated database with the service descriptions', async () => {
    const store = await PostgresStore.open(url, resources, { poolSize: 1 })
    await store.ready()
    await store.close()
  })

  it('refuses a description with an attribute its table lacks, naming table and column', async () => {
    const withIsbn: ResourceDescription = {
      ...books,
      attributes: { ...books.attributes, isbn: { ...books.attributes.name, column: 'isbn' } },
    } as ResourceDescription
    const error = await refusal(registryWithBooks(withIsbn))
    expect(error.message).toBe('table books lacks the column(s) isbn that books describes')
  })

  it('refuses a table renamed by hand, and does not answer a 503 for it: it is not a fault of the database', async () => {
    await direct?.unsafe('ALTER TABLE book_collections RENAME TO shelves')
    const error = await refusal(resources)
    expect(error.message).toBe('the database has no table book_collections for book_collections')
    expect(error.constructor.name).toBe('Error')
  })

  it('refuses a table whose ids the database no longer generates, naming it', async () => {
    await direct?.unsafe('ALTER TABLE book_collections ALTER COLUMN id DROP IDENTITY')
    const error = await refusal(resources)
    expect(error.message).toBe('table book_collections does not generate its ids (an identity column, migration 7)')
  })

  it('refuses a table whose changes no longer reach version(), naming the trigger', async () => {
    await direct?.unsafe('DROP TRIGGER books_truncate ON books')
    const error = await refusal(resources)
    expect(error.message).toBe(
      'the database has no trigger books_truncate, so changes to books would not reach version()',
    )
  })

  it('refuses a count trigger that was disabled, as one that is gone', async () => {
    await direct?.unsafe('ALTER TABLE authors DISABLE TRIGGER authors_commit')
    const error = await refusal(resources)
    expect(error.message).toBe(
      'the database has no trigger authors_commit, so changes to authors would not reach version()',
    )
  })

  it('refuses a searched attribute without its search index', async () => {
    await direct?.unsafe('DROP INDEX authors_name_search')
    const error = await refusal(resources)
    expect(error.message).toBe('the database has no search index on authors.name_search, which authors searches')
  })

  it('refuses a searched attribute without its stored search words (migration 9)', async () => {
    await direct?.unsafe('ALTER TABLE books DROP COLUMN name_search')
    const error = await refusal(resources)
    expect(error.message).toBe('table books lacks the column name_search that searches read (migration 9)')
  })

  it('refuses a searched type whose page totals are no longer kept: its feed trigger counts its records', async () => {
    await direct?.unsafe('DROP TRIGGER books_feed ON books')
    const error = await refusal(resources)
    expect(error.message).toBe('the database has no trigger books_feed, so the page totals of books would be wrong')
  })

  it('refuses search totals that lack a slot, where the commits of some connections would be lost', async () => {
    await direct?.unsafe("DELETE FROM search_totals WHERE table_name = 'books' AND slot = 5")
    const error = await refusal(resources)
    expect(error.message).toBe(
      'search_totals holds 7 of the 8 slots of books, so the page totals of books would be wrong',
    )
  })

  it('refuses a table whose TRUNCATE would no longer clear its totals', async () => {
    await direct?.unsafe('DROP TRIGGER authors_search_truncate ON authors')
    const error = await refusal(resources)
    expect(error.message).toBe(
      'the database has no trigger authors_search_truncate, so the page totals of authors would be wrong',
    )
  })

  it('refuses a flush of the search totals that leaves a searched table out of its list', async () => {
    const flush = commitFlushFunction(resources.all.filter((r) => r.type !== 'books'))
    await direct?.unsafe(flush.sql)
    const error = await refusal(resources)
    expect(error.message).toStartWith("the function flush_commit() is not as the descriptions' schema writes it")
    expect(error.message).toContain("ARRAY['authors', 'book_collections', 'books']")
  })

  it("refuses a feed trigger that runs another type's feed function", async () => {
    await direct?.unsafe(`DROP TRIGGER books_feed ON books;
      CREATE TRIGGER books_feed BEFORE INSERT OR UPDATE OR DELETE ON books
        FOR EACH ROW EXECUTE FUNCTION authors_feed()`)
    const error = await refusal(resources)
    expect(error.message).toBe(
      "the trigger books_feed runs authors_feed(), but the descriptions' schema runs books_feed()",
    )
  })

  it('refuses a table without the order check of its changes in the feed', async () => {
    await direct?.unsafe('DROP TRIGGER book_collections_feed_order ON book_collections')
    const error = await refusal(resources)
    expect(error.message).toBe(
      "the database has no trigger book_collections_feed_order on book_collections, which the descriptions' schema holds",
    )
  })
})
