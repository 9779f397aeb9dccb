import { Database } from 'bun:sqlite'
import { SQL } from 'bun'
import type { NamedBook } from '../../src/model/imports'
import { authors as authorsType } from '../../src/resources/authors'
import { bookCollections } from '../../src/resources/book-collections'
import { books as booksType } from '../../src/resources/books'
import type { DatabaseLocation } from '../../src/store/open'
import { SqliteVocabulary } from '../../src/store/sqlite/vocabulary'
import type { Store } from '../../src/store/store'

/**
 * Thousands of records written straight into a test's database (a SQLite file or a PostgreSQL
 * database) in one transaction: as many HTTP posts would take seconds, and the Store's import finds
 * records by name (books with the same title, author and collection would count as one). The
 * search indexes follow by themselves (SQLite's triggers, PostgreSQL's expression indexes). The
 * database must be fresh (no records yet), so that ids run from 1 in insertion order.
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
  /** The title of book `i`; titleOf by default. */
  readonly titleOf?: (i: number) => string
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

/** Writes the plan into the database of a test app (`t.database`) and returns what it wrote. */
export async function insertCatalogue(
  where: { readonly database: DatabaseLocation },
  plan: BulkPlan,
): Promise<BulkCatalogue> {
  const catalogue = planned(plan)
  const { database } = where
  if (database.kind === 'sqlite') insertIntoFile(database.path, catalogue)
  else await insertIntoPostgres(database.url, catalogue)
  return catalogue
}

/**
 * Books added through the Store's import, into a database that already holds records: each book's
 * author and collection found by name (or created). Books equal in title, author and collection
 * count as one.
 */
export async function importBooks(t: { openStore(): Promise<Store> }, books: readonly NamedBook[]): Promise<void> {
  const store = await t.openStore()
  const run = store.openImport({ dryRun: false })
  try {
    const counts = await run.add(books)
    if (counts.books !== books.length) throw new Error(`importBooks added ${counts.books} of ${books.length} books`)
  } finally {
    await run.close()
    await store.close()
  }
}

/** The same into a SQLite file the caller opened a store on (the store tests). */
export function insertCatalogueFile(dbPath: string, plan: BulkPlan): BulkCatalogue {
  const catalogue = planned(plan)
  insertIntoFile(dbPath, catalogue)
  return catalogue
}

function planned(plan: BulkPlan): BulkCatalogue {
  const named = (names: readonly string[]) => names.map((name, i) => ({ id: i + 1, name }))
  const books = Array.from({ length: plan.books }, (_, i) => ({
    id: i + 1,
    name: (plan.titleOf ?? titleOf)(i),
    author: plan.authorOf(i),
    collection: plan.collectionOf(i),
  }))
  return { authors: named(plan.authors), collections: named(plan.collections), books }
}

const names = (records: readonly BulkRecord[]) => JSON.stringify(records.map((record) => record.name))
const bookRows = (books: readonly BulkBook[]) => JSON.stringify(books.map((b) => [b.name, b.author, b.collection]))

function insertIntoFile(dbPath: string, { authors, collections, books }: BulkCatalogue): void {
  const db = new Database(dbPath)
  try {
    // One statement per table, its rows as one JSON parameter: a statement per row is several times slower.
    const insertNames = (table: string, records: readonly BulkRecord[]) =>
      db.run(`INSERT INTO ${table} (name) SELECT value FROM json_each(?) ORDER BY key`, [names(records)])
    db.transaction(() => {
      insertNames('authors', authors)
      insertNames('book_collections', collections)
      db.run(
        `INSERT INTO books (name, author_id, book_collection_id)
         SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?) ORDER BY key`,
        [bookRows(books)],
      )
      const last = db.query<{ id: number | null }, []>('SELECT max(id) AS id FROM books').get()
      if ((last?.id ?? 0) !== books.length) throw new Error('insertCatalogue needs a database with no records yet')
      // The store writes a record's words into its type's vocabulary (typos forgiven) as it writes the record.
      const vocabulary = new SqliteVocabulary(db)
      vocabulary.addTexts(
        authorsType,
        authors.map((r) => r.name),
      )
      vocabulary.addTexts(
        bookCollections,
        collections.map((r) => r.name),
      )
      vocabulary.addTexts(
        booksType,
        books.map((b) => b.name),
      )
    })()
  } finally {
    db.close()
  }
}

async function insertIntoPostgres(url: string, { authors, collections, books }: BulkCatalogue): Promise<void> {
  const sql = new SQL(url, { max: 1 })
  try {
    await sql.begin(async (tx) => {
      const [counted] =
        await tx`SELECT (SELECT count(*) FROM books)::int + (SELECT is_called::int FROM books_id_seq) AS n`
      if (counted?.n !== 0) throw new Error('insertCatalogue needs a database with no records yet')
      // Ids given outright, and the identity sequences (where the store takes ids from) moved past them.
      const moveIdentity = (table: string, last: number) =>
        last > 0 ? tx.unsafe(`SELECT setval(pg_get_serial_sequence($1, 'id'), $2)`, [table, last]) : Promise.resolve()
      const insertNames = async (table: string, records: readonly BulkRecord[]) => {
        await tx.unsafe(
          `INSERT INTO ${table} (id, name) SELECT n, value FROM json_array_elements_text($1::text::json) WITH ORDINALITY AS t(value, n)`,
          [names(records)],
        )
        await moveIdentity(table, records.length)
      }
      await insertNames('authors', authors)
      await insertNames('book_collections', collections)
      await tx.unsafe(
        `INSERT INTO books (id, name, author_id, book_collection_id)
         SELECT n, value ->> 0, (value ->> 1)::bigint, (value ->> 2)::bigint
         FROM json_array_elements($1::text::json) WITH ORDINALITY AS t(value, n)`,
        [bookRows(books)],
      )
      await moveIdentity('books', books.length)
    })
  } finally {
    await sql.close()
  }
}

/** By name, then id: the order `sort=name` gives. */
export function byName(a: BulkRecord, b: BulkRecord): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : a.id - b.id
}

/** The order `sort=-name` gives: name descending, then id ascending. */
export function byNameDescending(a: BulkRecord, b: BulkRecord): number {
  return a.name < b.name ? 1 : a.name > b.name ? -1 : a.id - b.id
}
