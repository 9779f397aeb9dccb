/**
 * The index the search bench's reference (bench/parts/search/reference.ts) searches, made from the
 * loaded catalogue before the service starts: what one would write with no framework and no
 * ranking of one's own. A book's row holds its title and, copied in, its author's and series'
 * names, so that a word matches any of the three as in the service (whose rows hold the ids, so
 * that a rename rewrites one row: the reference does not pay for that).
 *
 * - SQLite: a file of its own beside the service's, `books` (id, name, author_id,
 *   book_collection_id) and an FTS5 table over title, author and collection with the service's
 *   tokenizer and prefix indexes of 1 to 3 letters, ranked by bm25 with the weights 10, 2 and 1;
 *   merged by `optimize` after the bulk insert.
 * - PostgreSQL: `reference_books` in the catalogue's temporary database, the three names as one
 *   `simple` tsvector weighted A, B and C, under a GIN index; VACUUM ANALYZE after.
 */
import { Database } from 'bun:sqlite'
import { rmSync } from 'node:fs'
import { SQL } from 'bun'
import type { LoadedCatalogue } from './load'

export interface ReferenceIndex {
  /** What the reference process is given: REFERENCE_DB or REFERENCE_DATABASE_URL. */
  readonly env: Record<string, string>
  readonly seconds: number
  readonly remove: () => void
}

function sqliteIndex(serviceFile: string): Omit<ReferenceIndex, 'seconds'> {
  const file = `${serviceFile}.reference`
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true })
  const db = new Database(file, { create: true })
  try {
    db.run('PRAGMA journal_mode = WAL')
    db.run('PRAGMA synchronous = NORMAL')
    db.run('ATTACH DATABASE ? AS service', [serviceFile])
    db.run(`CREATE TABLE books (
      id INTEGER PRIMARY KEY, name TEXT NOT NULL, author_id INTEGER NOT NULL, book_collection_id INTEGER)`)
    db.run(`CREATE VIRTUAL TABLE books_fts USING fts5(
      title, author, collection, tokenize = 'unicode61 remove_diacritics 2', prefix = '1 2 3')`)
    db.run(`INSERT INTO books_fts (books_fts, rank) VALUES ('rank', 'bm25(10.0, 2.0, 1.0)')`)
    db.transaction(() => {
      db.run('INSERT INTO books SELECT id, name, author_id, book_collection_id FROM service.books ORDER BY id')
      db.run(`INSERT INTO books_fts (rowid, title, author, collection)
        SELECT b.id, b.name, a.name, c.name FROM service.books b JOIN service.authors a ON a.id = b.author_id
        LEFT JOIN service.book_collections c ON c.id = b.book_collection_id ORDER BY b.id`)
    })()
    db.run(`INSERT INTO books_fts (books_fts) VALUES ('optimize')`)
    db.run('DETACH DATABASE service')
    db.run('PRAGMA wal_checkpoint(TRUNCATE)')
  } finally {
    db.close()
  }
  return {
    env: { REFERENCE_DB: file },
    remove: () => {
      for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true })
    },
  }
}

async function postgresIndex(url: string): Promise<Omit<ReferenceIndex, 'seconds'>> {
  const sql = new SQL(url, { max: 1 })
  try {
    await sql.unsafe(`CREATE TABLE reference_books (
      id bigint PRIMARY KEY, name text NOT NULL, author_id bigint NOT NULL, book_collection_id bigint,
      words tsvector NOT NULL)`)
    await sql.unsafe(`INSERT INTO reference_books
      SELECT b.id, b.name, b.author_id, b.book_collection_id,
        setweight(to_tsvector('simple', b.name), 'A') || setweight(to_tsvector('simple', a.name), 'B')
          || setweight(to_tsvector('simple', coalesce(c.name, '')), 'C')
      FROM books b JOIN authors a ON a.id = b.author_id LEFT JOIN book_collections c ON c.id = b.book_collection_id`)
    await sql.unsafe('CREATE INDEX reference_books_words ON reference_books USING gin (words)')
    await sql.unsafe('VACUUM ANALYZE reference_books')
  } finally {
    await sql.close()
  }
  // The table goes with the temporary database.
  return { env: { REFERENCE_DATABASE_URL: url }, remove: () => {} }
}

/** Builds the reference's index for a loaded catalogue, timed. */
export async function buildReferenceIndex(catalogue: LoadedCatalogue): Promise<ReferenceIndex> {
  const started = performance.now()
  const made = catalogue.file !== undefined ? sqliteIndex(catalogue.file) : await postgresIndex(catalogue.url)
  return { ...made, seconds: (performance.now() - started) / 1000 }
}
