import type { Database } from 'bun:sqlite'
import { books } from '../../resources/books'
import { sortIndexSql, toOnes } from '../sql/sort-indexes'
import { foreignKeyIndexSql } from './ddl'
import { ifNotExists } from './schema'

/**
 * The one index of books an import reads (whether a book is stored, by author and title, see
 * SqliteBookImport): it is kept when the others wait for the import's end.
 */
const PRESENCE_INDEX = 'books_author_name'

/** The names of the indexes of books the generator writes: an index someone else added is never dropped. */
const generatedIndexes = new Set(
  [...sortIndexSql(books), ...toOnes(books).map(([, relationship]) => foreignKeyIndexSql(books, relationship))].map(
    (sql) => /^CREATE INDEX (\S+) ON/.exec(sql)?.[1],
  ),
)

/**
 * The indexes of books an import into a catalogue of no books builds at its end. Row by row, every
 * book goes into each index at a random place, and a batch rewrites most of their pages: at
 * 1,000,000 books that made the import 22x as long as 100,000's, writing 8.3 GB. Built once at the
 * end from the rows in order, the four indexes the import does not read took 2.8 s, and the import
 * 22-23 s instead of 42-43 (14-15x 100,000's, 2.7 GB written; bench/standalone/import-growth.ts).
 *
 * They are dropped in the first batch's transaction, so a failed batch keeps them. A crash before
 * the end leaves them out: the next writer to open the file builds them (checkSchema), and readers
 * answer the same without them meanwhile, only slower.
 */
export class DeferredIndexes {
  /** The indexes dropped and not yet built again, as the file held them. */
  private readonly waiting: { name: string; sql: string }[] = []

  constructor(private readonly db: Database) {}

  /**
   * Drops the indexes of books the generator writes, but the one an import reads; none when that
   * one is missing (renamed, say), as every book would then be looked for by a scan. The caller
   * runs it in the batch's transaction.
   */
  defer(): void {
    const indexes = this.db
      .query<{ name: string; sql: string }, []>(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'books' AND sql IS NOT NULL",
      )
      .all()
      .filter((index) => generatedIndexes.has(index.name))
    if (!indexes.some((index) => index.name === PRESENCE_INDEX)) return
    const dropped = indexes.filter((index) => index.name !== PRESENCE_INDEX)
    for (const index of dropped) this.db.run(`DROP INDEX "${index.name}"`)
    this.waiting.push(...dropped)
  }

  /** Whether some index waits for buildNext. */
  get owed(): boolean {
    return this.waiting.length > 0
  }

  /**
   * Builds the next index; the caller runs it in a transaction of its own, so that the service's
   * writes wait for one index at most (the four took 2.8 s together at 1,000,000 books). One a
   * writer's opening built meanwhile is left as it is.
   */
  buildNext(): void {
    const index = this.waiting[0]
    if (!index) return
    this.db.run(ifNotExists(index.sql))
    this.waiting.shift()
  }
}
