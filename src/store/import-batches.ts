import type { ImportCounts, NamedBook } from '../model/imports'

/**
 * The batches of an import of books: the counts they add to and the names they look up (both
 * backends, at the end), and their size.
 *
 * How many books the next batch of a SQLite import holds (BookImport.batchSize): the first batches
 * hold IMPORT_BATCH_SIZE; as the table grows, so do they, up to MAX_IMPORT_BATCH_SIZE and to what
 * the last batch's pace fits in LOCK_BUDGET_MS. (PostgreSQL's batches stay at IMPORT_BATCH_SIZE: a
 * commit there writes WAL records, not the pages the batch changed.)
 *
 * Why they grow: a SQLite commit writes its rows and every index page its books land on. The name
 * indexes (books by name, by author and name, by collection and name) take each book at another
 * place, so a batch of B books in a table of N writes about min(B, N / 100) pages of each, and at a
 * fixed B the pages written per book grow with the table until each book writes pages of its own:
 * 5000-book batches wrote 0.4 WAL pages a book at 100,000 books and 0.8 at 1,000,000, and the
 * import of a million books took 19 to 28 times that of 100,000. A batch that grows with the
 * table (a twentieth of it) keeps the pages written per book about constant, hence an import time
 * that grows with the file and not with the table.
 *
 * Why they stop growing: a batch holds the write lock, and the service's writes wait for
 * it (BUSY_TIMEOUT at most). The next batch holds what the last one's pace fits in the budget (never
 * fewer than the first batches' size): smaller on a slow disk or a busy machine.
 */

/** Books in each batch while the table holds fewer than TABLE_SHARE times as many. */
export const IMPORT_BATCH_SIZE = 5000
/** The most books a batch grows to. */
export const MAX_IMPORT_BATCH_SIZE = 25_000
/** A batch is at most this fraction of the books stored. */
const TABLE_SHARE = 20
/** What a batch should take at most, from add() to its commit. */
export const LOCK_BUDGET_MS = 1000

/** The size of the next batch, given the books stored and how long the last batch of `books` took. */
export function nextBatchSize(stored: number, last?: { readonly books: number; readonly ms: number }): number {
  const byTable = Math.min(MAX_IMPORT_BATCH_SIZE, Math.floor(stored / TABLE_SHARE))
  // What fits the budget, at the last batch's pace.
  const byTime = last && last.ms > 0 ? Math.floor((last.books * LOCK_BUDGET_MS) / last.ms) : byTable
  return Math.max(IMPORT_BATCH_SIZE, Math.min(byTable, byTime))
}

/** The batch size of one import, from the books its table holds and the pace of its last batch. */
export class BatchSizer {
  /** Books in the table, as last counted plus those added since (null: not counted yet). */
  private stored: number | null = null
  private last: { books: number; ms: number } | undefined

  /** How many books the next batch should hold. */
  get size(): number {
    return nextBatchSize(this.stored ?? 0, this.last)
  }

  /** The table's books when the import began (the first count given is kept). */
  counted(books: number): void {
    this.stored ??= books
  }

  /** A batch of `books` lines took `ms` and added `added` books. */
  done(books: number, ms: number, added: number): void {
    this.last = { books, ms }
    if (this.stored !== null) this.stored += added
  }
}

/** An import's counts while its batches add to them. */
export type Counts = { -readonly [K in keyof ImportCounts]: ImportCounts[K] }

/** The names of the authors and of the collections a batch's books name, each once: what both backends look up. */
export function namesOf(batch: readonly NamedBook[]): { authors: Set<string>; collections: Set<string> } {
  const authors = new Set<string>()
  const collections = new Set<string>()
  for (const book of batch) {
    authors.add(book.author)
    if (book.collection !== null) collections.add(book.collection)
  }
  return { authors, collections }
}
