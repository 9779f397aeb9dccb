import type { ReservedSQL } from 'bun'
import type { ImportCounts, NamedBook } from '../../model/imports'
import type { Id } from '../../model/record'
import { type Counts, namesOf } from '../import-batches'
import type { Queryable } from './reader'
import { encodeText } from './text'

/** The fewest books added before the statistics are made again. */
const ANALYZE_AFTER_BOOKS = 5000

/** Where the names of each kind live, and where a dry run records those it would create. */
const tables = {
  authors: { table: 'authors', dry: 'dry_import_authors' },
  collections: { table: 'book_collections', dry: 'dry_import_collections' },
} as const

/**
 * An import of books by name (Store.openImport) with the semantics of the SQLite one
 * (src/store/sqlite/import.ts), in bulk: per batch a few statements over arrays (`unnest`), never
 * one per book, each batch one transaction on a connection the import holds for itself.
 *
 * Ids found by name are kept for one batch only (between two batches the service may delete an
 * author). A dry run records what it would create in temporary tables, so that a name or a book
 * met again in a later batch counts once, as in a real import. It runs in one transaction from
 * its first batch to close(), rolled back there: its temporary tables live in that transaction,
 * which keeps one server connection even behind a pooler in transaction mode (PgBouncer), where a
 * session's tables would stay on whichever connection the next batch did not get.
 */
export class PostgresBookImport {
  private prepared: Promise<void> | null = null
  /** Books in the table when its statistics were last read or made (null: not read yet). */
  private analyzedAt: number | null = null
  /** Books this import added since. */
  private addedSince = 0

  constructor(
    private readonly connection: ReservedSQL,
    private readonly dryRun: boolean,
  ) {}

  private prepare(): Promise<void> {
    this.prepared ??= this.dryRun
      ? (async () => {
          // Collection '' stands for none: no collection can have that name.
          await this.connection.unsafe(`
            BEGIN;
            CREATE TEMP TABLE dry_import_authors (name text COLLATE "C" PRIMARY KEY) ON COMMIT DROP;
            CREATE TEMP TABLE dry_import_collections (name text COLLATE "C" PRIMARY KEY) ON COMMIT DROP;
            CREATE TEMP TABLE dry_import_books (title text COLLATE "C", author text COLLATE "C",
              collection text COLLATE "C", PRIMARY KEY (title, author, collection)) ON COMMIT DROP;
          `)
        })()
      : Promise.resolve()
    return this.prepared
  }

  /** Adds a batch in one transaction (a dry run's, in the one transaction of the whole run). */
  async add(batch: readonly NamedBook[]): Promise<ImportCounts> {
    await this.prepare()
    if (this.dryRun) return this.addIn(this.connection, batch)
    this.analyzedAt ??= await this.knownBooks()
    const counts = await this.connection.begin((tx) => this.addIn(tx, batch))
    this.addedSince += counts.books
    if (this.addedSince >= Math.max(ANALYZE_AFTER_BOOKS, this.analyzedAt)) await this.analyze()
    return counts
  }

  /** The books the planner's statistics count (0 for a table never analyzed). */
  private async knownBooks(): Promise<number> {
    const [row] = await this.connection.unsafe(
      `SELECT GREATEST(reltuples, 0)::bigint AS books FROM pg_class WHERE oid = 'books'::regclass`,
    )
    return Number((row as { books: string } | undefined)?.books ?? 0)
  }

  /**
   * Fresh statistics for the tables the import grows, each time the books have doubled since the
   * last: without them the planner takes a table that grew from nothing for a small one, and the
   * check of which books are present seq-scanned every book once a batch (an import of a million
   * books went quadratic: 60 s per 100,000 at the end), and a stream catching up on the import's
   * changes had each read of 1,000 sort every change after its position. ANALYZE reads a sample of fixed size and
   * also drops the connection's cached plans made with the old figures; autovacuum would do it too,
   * but a minute late, if it is on at all. It takes no lock the service's reads or writes wait for;
   * a role that does not own the tables gets a warning, and the import goes on without.
   */
  private async analyze(): Promise<void> {
    await this.connection.unsafe('ANALYZE books, authors, book_collections, changes')
    this.analyzedAt = await this.knownBooks()
    this.addedSince = 0
  }

  /**
   * The id of each name (the lowest when several records share it), creating those no record has,
   * and which of the names were stored before. In a dry run a name to create has no id (null).
   */
  private async resolve(
    tx: Queryable,
    kind: keyof typeof tables,
    names: Set<string>,
    counts: Counts,
  ): Promise<{ ids: Map<string, Id | null>; stored: Set<string> }> {
    const { table, dry } = tables[kind]
    const ids = new Map<string, Id | null>()
    const found = await tx.unsafe(
      `SELECT name, MIN(id) AS id FROM ${table} WHERE name = ANY($1::text[]) GROUP BY name`,
      [[...names]],
    )
    for (const row of found as { name: string; id: string }[]) ids.set(row.name, Number(row.id))
    const stored = new Set(ids.keys())
    const missing = [...names].filter((name) => !stored.has(name))
    if (missing.length === 0) return { ids, stored }
    const created = (await tx.unsafe(
      this.dryRun
        ? `INSERT INTO pg_temp.${dry} (name) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING RETURNING name`
        : // Ids from the table's identity, increasing in the order of the names (no lock: a
          // concurrent create's id may fall between two of them).
          `INSERT INTO ${table} (name) SELECT x.name FROM unnest($1::text[]) WITH ORDINALITY AS x (name, i) ORDER BY x.i
          RETURNING id, name`,
      [missing],
    )) as { name: string; id?: string }[]
    counts[kind] += created.length
    for (const name of missing) ids.set(name, null)
    for (const row of created) if (row.id !== undefined) ids.set(row.name, Number(row.id))
    return { ids, stored }
  }

  private async addIn(tx: Queryable, given: readonly NamedBook[]): Promise<ImportCounts> {
    // Compared and stored as PostgreSQL holds them (postgres/text.ts).
    const batch = given.map((book) => ({
      title: encodeText(book.title),
      author: encodeText(book.author),
      collection: book.collection === null ? null : encodeText(book.collection),
    }))
    const counts: Counts = { books: 0, present: 0, authors: 0, collections: 0 }
    const names = namesOf(batch)
    const authors = await this.resolve(tx, 'authors', names.authors, counts)
    const collections = (await this.resolve(tx, 'collections', names.collections, counts)).ids
    // This batch's repeats count as present; the others are looked up all at once.
    const seen = new Set<string>()
    const unique: NamedBook[] = []
    for (const book of batch) {
      const key = JSON.stringify([book.title, book.author, book.collection])
      if (seen.has(key)) counts.present++
      else {
        seen.add(key)
        unique.push(book)
      }
    }
    // A book of an author created just now cannot be stored yet.
    const candidates = unique.filter((book) => authors.stored.has(book.author))
    const present = new Set<number>()
    if (candidates.length > 0) {
      const rows = await tx.unsafe(
        `SELECT x.i FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS x (title, author, collection, i)
          WHERE EXISTS (
            SELECT 1 FROM books AS b JOIN authors AS a ON a.id = b.author_id
            LEFT JOIN book_collections AS c ON c.id = b.book_collection_id
            WHERE b.name = x.title AND a.name = x.author
              AND (CASE WHEN x.collection IS NULL THEN b.book_collection_id IS NULL ELSE c.name = x.collection END)
          )`,
        [candidates.map((b) => b.title), candidates.map((b) => b.author), candidates.map((b) => b.collection)],
      )
      for (const row of rows as { i: string }[]) present.add(Number(row.i) - 1)
    }
    const presentBooks = new Set(candidates.filter((_, i) => present.has(i)))
    const toAdd = unique.filter((book) => !presentBooks.has(book))
    counts.present += presentBooks.size
    if (toAdd.length === 0) return counts
    if (this.dryRun) {
      const added = await tx.unsafe(
        `INSERT INTO pg_temp.dry_import_books (title, author, collection)
          SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) ON CONFLICT DO NOTHING RETURNING title`,
        [toAdd.map((b) => b.title), toAdd.map((b) => b.author), toAdd.map((b) => b.collection ?? '')],
      )
      counts.books += added.length
      counts.present += toAdd.length - added.length
      return counts
    }
    await tx.unsafe(
      `INSERT INTO books (name, author_id, book_collection_id)
        SELECT x.name, x.author, x.collection
        FROM unnest($1::text[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS x (name, author, collection, i)
        ORDER BY x.i`,
      [
        toAdd.map((b) => b.title),
        toAdd.map((b) => authors.ids.get(b.author) ?? null),
        toAdd.map((b) => (b.collection === null ? null : (collections.get(b.collection) ?? null))),
      ],
    )
    counts.books += toAdd.length
    return counts
  }

  /** Ends a dry run's transaction, its temporary tables with it, and gives the connection back to the pool. */
  async close(): Promise<void> {
    try {
      if (this.dryRun && this.prepared) await this.connection.unsafe('ROLLBACK')
    } finally {
      this.connection.release()
    }
  }
}
