import type { NamedBook } from '../../src/model/imports'
import { resources } from '../../src/resources/registry'
import { PostgresStore } from '../../src/store/postgres/postgres-store'
import { authorOf, collectionOf, type DataSet } from './seed'

/** Books per import batch (one transaction each), as `catalogue import` sends them. */
const BATCH = 1000

/**
 * Fills an empty PostgreSQL database with `set` through the service's own store: the schema is
 * the store's migrations, authors and collections are created one by one (ids 1..n, in order,
 * unused collections included) and the books go in through the store's import, by author and
 * collection name, in batches. Ids come out as SqliteStore's seed gives them, so both backends
 * hold the same records; the bench checks that by asking both services for the same books.
 */
export async function seedPostgres(url: string, set: DataSet): Promise<void> {
  const store = await PostgresStore.open(url, resources)
  try {
    const create = async (type: string, name: string) => {
      const outcome = await store.create(resources.get(type), { attributes: { name }, toOne: {} })
      if (!outcome.ok) throw new Error(`seeding failed: missing ${outcome.missing.join(', ')}`)
    }
    for (let n = 1; n <= set.authors; n++) await create('authors', set.authorName(n))
    for (let n = 1; n <= set.collections; n++) await create('book_collections', `Collection ${n}`)
    const books = store.openImport({ dryRun: false })
    try {
      for (let from = 1; from <= set.books; from += BATCH) {
        const batch: NamedBook[] = []
        for (let n = from; n <= Math.min(set.books, from + BATCH - 1); n++) {
          const collection = collectionOf(set, n)
          batch.push({
            title: set.bookName(n),
            author: set.authorName(authorOf(set, n)),
            collection: collection === null ? null : `Collection ${collection}`,
          })
        }
        const added = await books.add(batch)
        if (added.books !== batch.length || added.authors > 0 || added.collections > 0) {
          throw new Error(`seeding failed: a batch from book ${from} added ${JSON.stringify(added)}`)
        }
      }
    } finally {
      await books.close()
    }
  } finally {
    await store.close()
  }
}
