import { resources } from '../src/resources/registry'
import { SqliteStore } from '../src/store/sqlite'
import type { Id } from '../src/store/store'

export const SEED = { authors: 100, collections: 20, books: 10_000 } as const

/** Which collection book `n` (1-based) is in: every tenth book is in none, to exercise `"data": null`. */
export function collectionOf(n: number): Id | null {
  return n % 10 === 0 ? null : ((n - 1) % SEED.collections) + 1
}

/** Round-robin, so every author has the same number of books (100 with the default counts). */
export function authorOf(n: number): Id {
  return ((n - 1) % SEED.authors) + 1
}

/**
 * Fills a fresh database file through the store, as the service itself would, so the rows and
 * the schema are exactly what the service writes. Ids come out 1..N in insertion order.
 */
export async function seed(path: string): Promise<void> {
  const store = SqliteStore.open(path, resources)
  try {
    const authors = resources.get('authors')
    const collections = resources.get('book_collections')
    const books = resources.get('books')
    for (let n = 1; n <= SEED.authors; n++) {
      await created(store.create(authors, { attributes: { name: `Author ${n}` }, toOne: {} }))
    }
    for (let n = 1; n <= SEED.collections; n++) {
      await created(store.create(collections, { attributes: { name: `Collection ${n}` }, toOne: {} }))
    }
    for (let n = 1; n <= SEED.books; n++) {
      const toOne = { author: authorOf(n), book_collection: collectionOf(n) }
      await created(store.create(books, { attributes: { name: `Book ${n}: a bench title` }, toOne }))
    }
  } finally {
    // Closing the last connection checkpoints the WAL into the main file, so it can be copied.
    await store.close()
  }
}

async function created(result: ReturnType<SqliteStore['create']>): Promise<void> {
  const outcome = await result
  if (!outcome.ok) throw new Error(`seeding failed: missing ${outcome.missing.join(', ')}`)
}
