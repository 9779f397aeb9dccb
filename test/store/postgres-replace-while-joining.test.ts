import { expect, setDefaultTimeout } from 'bun:test'
import { SQL } from 'bun'
import type { StoredRecord } from '../../src/model/record'
import type { WriteResult } from '../../src/model/writes'
import { resources } from '../../src/resources/registry'
import { PostgresStore } from '../../src/store/postgres/postgres-store'
import type { Store } from '../../src/store/store'
import { afterAll, afterEach, describe, it, POSTGRES_SERVER } from '../support/postgres-tests'
import { scratchDatabases } from '../support/test-database'

// Databases and a write held up on purpose for a few seconds: Bun's 5 s default is too short.
setDefaultTimeout(60_000)

/*
 * A collection's books replaced (PATCH /book_collections/{id}/relationships/books) while books keep
 * joining the collection (POST /books naming it). The replace locks the books it names, then the
 * collection; each time it waits for a named book's lock another write holds, a book is created in
 * the collection meanwhile: a row a younger transaction wrote. Dropping it, the feed's order check
 * failed the attempt (40001), again at each run, until the replace gave up with
 * StoreUnavailableError (503) after WRITE_RETRY_DEADLINE_MS. It counts as made before those creates
 * (the feed's order) and leaves the books in the collection (docs/postgres.md, "Contention and
 * retries").
 */

const authors = resources.get('authors')
const collections = resources.get('book_collections')
const books = resources.get('books')

const scratch = scratchDatabases(POSTGRES_SERVER)
const { admin } = scratch
const closing: { close(): Promise<void> }[] = []

afterEach(async () => {
  for (const opened of closing.splice(0).reverse()) await opened.close()
})

afterAll(() => scratch.dropAll())

function created(result: WriteResult | null | 'stale'): StoredRecord {
  if (result === null || result === 'stale' || !result.ok) throw new Error(`write refused: ${JSON.stringify(result)}`)
  return result.record
}

const named = (name: string, toOne: Record<string, number | null> = {}) => ({ attributes: { name }, toOne })

/** Whether a statement of this database waits for a lock now (pg_stat_activity). */
async function waitsForALock(database: string): Promise<boolean> {
  const [row] = await admin`SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE datname = ${database} AND wait_event_type = 'Lock'`
  return row.n > 0
}

describe('PostgresStore: replacing the books of a collection that books keep joining', () => {
  it('answers the replace, however many books join the collection while it waits for a named book, and leaves those books in it', async () => {
    const url = await scratch.fresh()
    const database = new URL(url).pathname.slice(1)
    const store: Store = await PostgresStore.open(url, resources, { poolSize: 4, statementTimeoutMs: 5000 })
    closing.push(store)
    const author = created(await store.create(authors, named('Author')))
    const collection = created(await store.create(collections, named('Series')))
    const first = created(await store.create(books, named('First', { author: author.id })))
    const second = created(await store.create(books, named('Second', { author: author.id })))

    // Another client of the database holds the second named book, again and again.
    const other = new SQL(url, { max: 1 })
    const held = await other.reserve()
    closing.push({
      close: async () => {
        held.release()
        await other.close()
      },
    })
    const hold = async () => {
      await held`BEGIN`
      await held`SELECT id FROM books WHERE id = ${second.id} FOR UPDATE`
    }
    await hold()

    const joined: number[] = []
    let outcome: unknown = null
    const replace = store.changeToMany(collections, collection.id, 'books', [first.id, second.id], 'replace').then(
      (result) => (outcome = { answered: result }),
      (error: unknown) => (outcome = { failed: String(error) }),
    )
    // Each time the replace waits for the held book, a book joins the collection, then the hold
    // ends and begins again: for 8 s at most, longer than the retries' deadline of 5 s.
    for (const until = performance.now() + 8_000; outcome === null && performance.now() < until; ) {
      if (!(await waitsForALock(database))) {
        await Bun.sleep(5)
        continue
      }
      joined.push(
        created(await store.create(books, named('Joins', { author: author.id, book_collection: collection.id }))).id,
      )
      await held`COMMIT`
      await Bun.sleep(2)
      await hold()
    }
    await held`COMMIT`
    await replace
    expect(outcome).toMatchObject({ answered: { status: 'changed' } })
    // The replace counts as made before the books joined (the feed's order): they stay, beside the named ones.
    expect(joined.length).toBeGreaterThan(0)
    const members = (await store.members(collections, 'books', [collection.id])).get(collection.id) ?? []
    expect([...members].sort((a, b) => a - b)).toEqual([first.id, second.id, ...joined].sort((a, b) => a - b))
  })
})
