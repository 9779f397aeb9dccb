import { Database } from 'bun:sqlite'

/**
 * Thousands of records written straight into a test's database file in one transaction: as many
 * HTTP posts would take seconds. The schema's triggers keep the search indexes in step. The file
 * must be fresh (no records yet), so that ids run from 1 in insertion order.
 */

export interface BulkRecord {
  readonly id: number
  readonly name: string
}

export interface BulkBook extends BulkRecord {
  readonly author: number
  readonly collection: number | null
}

export interface BulkCatalogue {
  readonly authors: readonly BulkRecord[]
  readonly collections: readonly BulkRecord[]
  /** In id order. */
  readonly books: readonly BulkBook[]
}

export interface BulkPlan {
  readonly authors: readonly string[]
  readonly collections: readonly string[]
  readonly books: number
  /** The author of book `i` (from 0): an id from 1 to authors.length. */
  readonly authorOf: (i: number) => number
  /** The collection of book `i`, or null. */
  readonly collectionOf: (i: number) => number | null
}

/** Words the titles are made of: a search for one of them matches titles only. */
export const TITLE_WORDS = ['Stone', 'River', 'Winter', 'Glass', 'Orchard', 'Harbour'] as const

/**
 * Title of book `i`: a word and a number, out of id order, with repeats (the same title every 1,200
 * books) so that sorting by name has ties for the id to break. Plain ASCII: SQLite's byte order
 * and JavaScript's string order agree.
 */
export function titleOf(i: number): string {
  return `${TITLE_WORDS[i % TITLE_WORDS.length]} ${String((i * 37) % 400).padStart(3, '0')}`
}

export function insertCatalogue(dbPath: string, plan: BulkPlan): BulkCatalogue {
  const books: BulkBook[] = Array.from({ length: plan.books }, (_, i) => ({
    id: i + 1,
    name: titleOf(i),
    author: plan.authorOf(i),
    collection: plan.collectionOf(i),
  }))
  const db = new Database(dbPath)
  try {
    // One statement per table, its rows as one JSON parameter: a statement per row is several times slower.
    const names = (table: string, list: readonly string[]) =>
      db.run(`INSERT INTO ${table} (name) SELECT value FROM json_each(?) ORDER BY key`, [JSON.stringify(list)])
    db.transaction(() => {
      names('authors', plan.authors)
      names('book_collections', plan.collections)
      db.run(
        `INSERT INTO books (name, author_id, book_collection_id)
         SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?) ORDER BY key`,
        [JSON.stringify(books.map((b) => [b.name, b.author, b.collection]))],
      )
      const last = db.query<{ id: number | null }, []>('SELECT max(id) AS id FROM books').get()
      if (last?.id !== plan.books) throw new Error('insertCatalogue needs a database with no records yet')
    })()
  } finally {
    db.close()
  }
  const named = (names: readonly string[]) => names.map((name, i) => ({ id: i + 1, name }))
  return { authors: named(plan.authors), collections: named(plan.collections), books }
}

/** By name, then id: the order `sort=name` gives. */
export function byName(a: BulkRecord, b: BulkRecord): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : a.id - b.id
}

/** The order `sort=-name` gives: name descending, then id ascending. */
export function byNameDescending(a: BulkRecord, b: BulkRecord): number {
  return a.name < b.name ? 1 : a.name > b.name ? -1 : a.id - b.id
}
