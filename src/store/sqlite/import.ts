import type { Database, SQLQueryBindings, Statement } from 'bun:sqlite'
import type { ImportCounts, NamedBook } from '../../model/imports'
import type { Id } from '../../model/record'
import { authors } from '../../resources/authors'
import { bookCollections } from '../../resources/book-collections'
import { books } from '../../resources/books'
import { StoreUnavailableError } from '../faults'
import { BatchSizer, type Counts, namesOf } from '../import-batches'
import type { BookImport } from '../store'
import { DeferredIndexes } from './import-indexes'
import { searchIndexName } from './search'
import { SqliteVocabulary, vocabularyFillSql } from './vocabulary'

/** The page cache of the import's connection, in KiB. */
const IMPORT_CACHE_KIB = 16 * 1024
/** WAL pages past which a commit of the import checkpoints (SQLite's default: 1000). */
const IMPORT_CHECKPOINT_PAGES = 16_384
/** Segments of the books' search index that FTS5 lets pile up on a level while importing (its default: 4). */
const IMPORT_AUTOMERGE = 16
const BOOKS_SEARCH = searchIndexName('books')
/**
 * An import writes its words batch by batch while it has added fewer books than this share of the
 * books stored; past it, once at its end from the search indexes' own terms (see `add`).
 */
const WORDS_BY_BATCH_SHARE = 0.1

/**
 * The SQL of an import of books by name (Store.openImport) over the tables of migration 1; the
 * search indexes follow through their triggers. `add` runs inside a transaction the store opened.
 *
 * New rows go in with one INSERT ... SELECT over a JSON array per batch and table, not one INSERT
 * per row: each statement that writes an FTS5 table through a trigger makes FTS5 flush its pending
 * terms, so row by row the search index was written 100,000 times for 100,000 books (10 s instead
 * of 1 s).
 *
 * Ids found by name are kept for one batch only: each batch is its own transaction, and between
 * two of them the service may delete an author or a collection, so an id from an earlier batch
 * could point at nothing. What an import holds in memory is thus bounded by the batch size.
 *
 * A dry run writes only to temporary tables of this connection (what it would create, by name), so
 * that a name or a book met again in a later batch counts once, as in a real import; SQLite keeps
 * temporary tables in a file of its own when they grow, so a dry run of a large file stays small in
 * memory too.
 */
export class SqliteBookImport {
  private readonly statements: Statement[] = []
  private readonly names: Record<'authors' | 'collections', { find: Statement; create: Statement }>
  private readonly bookInCollection: Statement<unknown, [string, string, string]>
  private readonly bookInNone: Statement<unknown, [string, string]>
  private readonly createBooks: Statement<unknown, [string]>
  /** A dry run's record of the books it would add, by names. */
  private readonly dryBook?: Statement<unknown, [string, string, string]>
  private readonly countBooks: Statement<{ books: number }, []>
  /** The words of the names created, for the vocabularies (typos forgiven). */
  private readonly vocabulary: SqliteVocabulary
  /** The books stored when the first batch began (null: before it). */
  storedAtStart: number | null = null
  /** Books this import has added so far. */
  private added = 0
  /** The words of what this import adds are left to `fillVocabularies` at its end. */
  private wordsAtEnd = false
  /** Something was added whose words wait for `fillVocabularies`. */
  wordsOwed = false
  /** The books' indexes left to the import's end (see `add`); the caller builds them (`buildNext`). */
  readonly indexes: DeferredIndexes

  /** The connection's page cache before the import (PRAGMA cache_size), put back by close(). */
  private readonly cacheSize: number
  /** The connection's wal_autocheckpoint before the import (0: a checkpointer thread does it), put back by close(). */
  private readonly checkpointPages: number
  /** The connection's temp_store before the import (PRAGMA temp_store), put back by close(). */
  private readonly tempStore: number
  /** The books' search index's automerge before the import, put back by close(); none for a dry run. */
  private readonly automerge?: number

  constructor(
    private readonly db: Database,
    private readonly dryRun: boolean,
    /**
     * Asked before the search index's setting is written, outside the group commit: never into a
     * file replaced under the connection (file-guard.ts).
     */
    private readonly fileFault: () => StoreUnavailableError | undefined = () => undefined,
  ) {
    const replaced = fileFault()
    if (replaced) throw replaced
    this.vocabulary = new SqliteVocabulary(db)
    this.indexes = new DeferredIndexes(db)
    // SQLite's default cache (2 MB) holds a small part of the pages a batch reads and writes: at a
    // million books they were read back from the file again and again (2 GB read per 100,000 books).
    // 16 MB cut that to about 120 MB; 32 MB measured no faster, and took more memory.
    this.cacheSize = (db.query('PRAGMA cache_size').get() as { cache_size: number }).cache_size
    db.run(`PRAGMA cache_size = -${IMPORT_CACHE_KIB}`)
    // A batch's INSERT of books, with its triggers, inside the batch's transaction, keeps the first
    // content of every page it changes in a statement journal, to undo the statement alone: past
    // 64 KiB in a temporary file (/var/tmp), written and read back through the kernel. At 1,000,000
    // books that was 48,000 writes of 4 KiB in 10 s, and the import wrote 23.7 GB to disk; with the
    // journal in memory, 13.6-13.8 GB (100,000 books: 377 MB, then 241 MB), and the peak RSS stayed
    // at 245 MB. A dry run keeps its temporary tables in a file (a large file's names stay out of
    // memory). Changing the setting drops temporary tables: none are open here.
    this.tempStore = (db.query('PRAGMA temp_store').get() as { temp_store: number }).temp_store
    if (!dryRun) db.run('PRAGMA temp_store = MEMORY')
    // Checkpointing after every batch copied into the file, and flushed, every page the batch wrote,
    // those of every author's place in the indexes included, which the next batch writes again:
    // every few batches, a page written by several is copied once. The WAL grows to about 64 MB
    // plus a batch meanwhile. A connection whose checkpoints a thread of the service makes (0) is
    // left as it is.
    this.checkpointPages = (
      db.query('PRAGMA wal_autocheckpoint').get() as { wal_autocheckpoint: number }
    ).wal_autocheckpoint
    if (this.checkpointPages > 0) db.run(`PRAGMA wal_autocheckpoint = ${IMPORT_CHECKPOINT_PAGES}`)
    // FTS5 writes each batch's terms as a new segment and merges segments four to a level as they
    // pile up: over a million books that merging grew faster than the books (1,000,000 took 13.2
    // times 100,000; 12.2 times with sixteen to a level, and first pages of searches cost the same).
    // Written in the index's own config, so the service's inserts meanwhile merge the same way.
    if (!dryRun) {
      const row = db.query(`SELECT v FROM "${BOOKS_SEARCH}_config" WHERE k = 'automerge'`).get() as { v: number } | null
      this.automerge = row?.v ?? 4
      this.setAutomerge(IMPORT_AUTOMERGE)
    }
    const prepare = <R, P extends SQLQueryBindings[]>(sql: string): Statement<R, P> => {
      const statement = db.prepare<R, P>(sql) as Statement<R, P>
      this.statements.push(statement)
      return statement
    }
    if (dryRun) {
      // Collection '' stands for none: no collection can have that name.
      db.run('CREATE TEMP TABLE dry_import_authors (name TEXT PRIMARY KEY) WITHOUT ROWID')
      db.run('CREATE TEMP TABLE dry_import_collections (name TEXT PRIMARY KEY) WITHOUT ROWID')
      db.run(
        `CREATE TEMP TABLE dry_import_books (title TEXT, author TEXT, collection TEXT,
          PRIMARY KEY (title, author, collection)) WITHOUT ROWID`,
      )
      this.dryBook = prepare('INSERT OR IGNORE INTO temp.dry_import_books (title, author, collection) VALUES (?, ?, ?)')
    }
    const namesOf = (table: string, dryTable: string) => ({
      // The lowest id of each name, through the name indexes of migration 3.
      find: prepare(
        `SELECT name, MIN(id) AS id FROM ${table} WHERE name IN (SELECT value FROM json_each(?)) GROUP BY name`,
      ),
      create: dryRun
        ? prepare(`INSERT OR IGNORE INTO temp.${dryTable} (name) SELECT value FROM json_each(?) RETURNING name`)
        : prepare(`INSERT INTO ${table} (name) SELECT value FROM json_each(?) RETURNING id, name`),
    })
    this.names = {
      authors: namesOf('authors', 'dry_import_authors'),
      collections: namesOf('book_collections', 'dry_import_collections'),
    }
    // A book matches by names, whichever of several same-named authors (or collections) it has.
    // The unary + keeps SQLite from choosing an index on book_collection_id (it took that of
    // author_id alone, and scanned every book of the author) over books_author_name (author_id, name).
    this.bookInCollection = prepare(
      `SELECT 1 FROM books WHERE author_id IN (SELECT id FROM authors WHERE name = ?2) AND name = ?1
        AND +book_collection_id IN (SELECT id FROM book_collections WHERE name = ?3) LIMIT 1`,
    )
    this.bookInNone = prepare(
      `SELECT 1 FROM books WHERE author_id IN (SELECT id FROM authors WHERE name = ?2) AND name = ?1
        AND +book_collection_id IS NULL LIMIT 1`,
    )
    this.countBooks = prepare('SELECT COUNT(*) AS books FROM books')
    this.createBooks = prepare(
      `INSERT INTO books (name, author_id, book_collection_id)
        SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?)`,
    )
  }

  /**
   * The id of each name (the lowest when several records share it), creating those no record has,
   * and which of the names were stored before. In a dry run a name to create has no id (null).
   */
  private resolve(
    kind: 'authors' | 'collections',
    names: Set<string>,
    counts: Counts,
  ): { ids: Map<string, Id | null>; stored: Set<string> } {
    const { find, create } = this.names[kind]
    const ids = new Map<string, Id | null>()
    for (const row of find.all(JSON.stringify([...names])) as { name: string; id: Id }[]) ids.set(row.name, row.id)
    const stored = new Set(ids.keys())
    const missing = [...names].filter((name) => !stored.has(name))
    if (missing.length === 0) return { ids, stored }
    // In a dry run, a name an earlier batch counted is ignored, and not returned.
    const created = create.all(JSON.stringify(missing)) as { name: string; id?: Id }[]
    if (this.wordsAtEnd) this.wordsOwed ||= created.length > 0
    else if (!this.dryBook) this.vocabulary.addTexts(kind === 'authors' ? authors : bookCollections, missing)
    counts[kind] += created.length
    for (const name of missing) ids.set(name, null)
    for (const row of created) if (row.id !== undefined) ids.set(row.name, row.id)
    return { ids, stored }
  }

  /** Adds a batch; the caller runs it in one transaction. */
  add(batch: readonly NamedBook[]): ImportCounts {
    if (this.storedAtStart === null) {
      this.storedAtStart = this.countBooks.get()?.books ?? 0
      if (this.storedAtStart === 0 && !this.dryBook) this.indexes.defer()
    }
    // The words of a batch cost some 6-10 µs a title here (split and folded in JS, then a statement
    // a new word); those of the whole catalogue, read from the search indexes' terms at the end,
    // under 1 µs a book stored (0.5-0.9 s at 1,000,000). A large import thus leaves its words to
    // the end: at 1,000,000 books they took 5-11 s of the import, and each batch's extra time made
    // the next batch smaller (import-batches.ts), so its index pages were written more often.
    this.wordsAtEnd ||=
      !this.dryBook && this.added + batch.length > WORDS_BY_BATCH_SHARE * (this.storedAtStart + this.added)
    const counts: Counts = { books: 0, present: 0, authors: 0, collections: 0 }
    const names = namesOf(batch)
    const authors = this.resolve('authors', names.authors, counts)
    const collections = this.resolve('collections', names.collections, counts).ids
    const seen = new Set<string>()
    const rows: [string, Id | null, Id | null][] = []
    for (const book of batch) {
      const key = JSON.stringify([book.title, book.author, book.collection])
      if (seen.has(key)) {
        counts.present++
        continue
      }
      seen.add(key)
      // A book of an author created just now cannot be stored yet (this batch's own repeats aside).
      const present =
        authors.stored.has(book.author) &&
        (book.collection === null
          ? this.bookInNone.get(book.title, book.author)
          : this.bookInCollection.get(book.title, book.author, book.collection)) !== null
      if (present) {
        counts.present++
        continue
      }
      if (this.dryBook) {
        const { changes } = this.dryBook.run(book.title, book.author, book.collection ?? '')
        counts[changes > 0 ? 'books' : 'present']++
        continue
      }
      const collection = book.collection === null ? null : (collections.get(book.collection) ?? null)
      rows.push([book.title, authors.ids.get(book.author) ?? null, collection])
    }
    if (rows.length > 0) {
      this.createBooks.run(JSON.stringify(rows))
      if (this.wordsAtEnd) this.wordsOwed = true
      else
        this.vocabulary.addTexts(
          books,
          rows.map(([title]) => title),
        )
      counts.books += rows.length
      this.added += rows.length
    }
    return counts
  }

  /**
   * Adds the words the import left to its end to the vocabularies, from the search indexes' own
   * terms as the migration that made them does (every word stored, those of earlier writes
   * included: they are there already, and ignored). The caller runs it in one transaction.
   */
  fillVocabularies(): void {
    for (const resource of [authors, bookCollections, books]) {
      for (const sql of vocabularyFillSql(resource, searchIndexName(resource.table))) this.db.run(sql)
    }
    this.wordsOwed = false
  }

  /** Finalizes the statements; a dry run drops its temporary tables. */
  close(): void {
    for (const statement of this.statements) statement.finalize()
    this.db.run(`PRAGMA cache_size = ${this.cacheSize}`)
    if (!this.dryRun) this.db.run(`PRAGMA temp_store = ${this.tempStore}`)
    if (this.checkpointPages > 0) this.db.run(`PRAGMA wal_autocheckpoint = ${this.checkpointPages}`)
    if (this.automerge !== undefined && !this.fileFault()) this.setAutomerge(this.automerge)
    if (this.dryRun) {
      for (const table of ['dry_import_authors', 'dry_import_collections', 'dry_import_books']) {
        this.db.run(`DROP TABLE IF EXISTS temp.${table}`)
      }
    }
  }

  private setAutomerge(segments: number): void {
    this.db.query(`INSERT INTO "${BOOKS_SEARCH}" ("${BOOKS_SEARCH}", rank) VALUES ('automerge', ?)`).run(segments)
  }
}

/**
 * Store.openImport on SQLite: each batch is one queued write (`write`, the store's group commit):
 * one transaction (BEGIN IMMEDIATE, waiting out busy_timeout for the service's writes) committed to
 * disk before `add` resolves, so that an import stopped half-way keeps the batches it finished, and
 * the service's own writes wait for one batch at most: batches grow with the table, within a budget
 * of time (import-batches.ts).
 */
export function sqliteImport(
  db: Database,
  dryRun: boolean,
  write: <T>(work: () => T) => Promise<T>,
  closed: () => void,
  fileFault: () => StoreUnavailableError | undefined,
): BookImport {
  const importer = new SqliteBookImport(db, dryRun, fileFault)
  const sizer = new BatchSizer()
  return {
    get batchSize() {
      return sizer.size
    },
    add: async (batch: readonly NamedBook[]): Promise<ImportCounts> => {
      const started = performance.now()
      const counts = await write(() => importer.add(batch))
      if (importer.storedAtStart !== null) sizer.counted(importer.storedAtStart)
      sizer.done(batch.length, performance.now() - started, dryRun ? 0 : counts.books)
      return counts
    },
    close: async () => {
      let failure: unknown
      try {
        // Whatever ended the import, the words of the batches it committed are written before it
        // is over: a search forgives them from then on.
        if (importer.wordsOwed) await write(() => importer.fillVocabularies())
      } catch (error) {
        failure = error
      }
      try {
        // And its indexes, whether or not the words could be written. One that cannot be built now
        // (the database failing, as it may have failed the import) is left to the next writer's
        // opening of the file, which builds it (checkSchema).
        while (importer.indexes.owed) await write(() => importer.indexes.buildNext())
      } catch (error) {
        if (!(error instanceof StoreUnavailableError)) failure ??= error
      }
      try {
        importer.close()
      } finally {
        closed()
      }
      if (failure !== undefined) throw failure
    },
  }
}
