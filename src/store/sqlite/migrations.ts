import type { Database } from 'bun:sqlite'
import { resources, searchOf } from '../../resources/registry'
import { Table } from '../sql/table'
import { indexColumns, searchIndexName } from './search'

/**
 * Versioned schema migrations for the SQLite store. Applied in order on start, each in its own
 * transaction; a migration, once released, is never edited: add a new one instead.
 */
export interface Migration {
  readonly version: number
  readonly name: string
  readonly sql: string
  /** What SQL cannot do (SQLite has no Unicode normalization), run after `sql` in the same transaction. */
  readonly rewrite?: (db: Database) => void
}

/**
 * Migration 5: the names of each table in Unicode NFC. Only names with a character beyond ASCII
 * (more bytes than characters) can change, so only those are read.
 */
function composeNames(db: Database): void {
  for (const table of ['authors', 'book_collections', 'books']) {
    const update = db.query(`UPDATE ${table} SET name = ? WHERE id = ?`)
    const rows = db
      .query<{ id: number; name: string }, []>(
        `SELECT id, name FROM ${table} WHERE length(CAST(name AS BLOB)) <> length(name)`,
      )
      .all()
    for (const { id, name } of rows) {
      const composed = name.isWellFormed() ? name.normalize('NFC') : name
      if (composed !== name) update.run(composed, id)
    }
  }
}

/** Migration 4's triggers: one per data table and event, each adding one to data_version's count. */
const countTriggers = ['authors', 'book_collections', 'books']
  .flatMap((table) =>
    ['insert', 'update', 'delete'].map(
      (event) => `CREATE TRIGGER ${table}_count_${event} AFTER ${event.toUpperCase()} ON ${table} BEGIN
        UPDATE data_version SET changes = changes + 1;
      END;`,
    ),
  )
  .join('\n      ')

/**
 * Migration 6: each search index made again with FTS5's prefix indexes for words of one to three
 * letters, from the search fields of the descriptions. A prefix query (`"b"*`) merges the lists of
 * every word it begins, all of them before the first match comes out: at 1,000,000 books `b` took
 * 15 ms to its first 20 matches and ten one-letter words 250 ms; with the prefix index a short
 * prefix is one list, read as far as needed (0.01 ms). The index grows by about half.
 */
const prefixedSearchIndexes = resources.all
  .flatMap((resource) => {
    const search = searchOf(resource)
    if (!search) return []
    const columns = indexColumns(new Table(resource), search, resources).map((c) => c.column)
    const index = searchIndexName(resource.table)
    return [
      `DROP TABLE ${index};`,
      `CREATE VIRTUAL TABLE ${index} USING fts5(${columns.join(', ')}, tokenize = 'unicode61 remove_diacritics 2', prefix = '1 2 3');`,
      `INSERT INTO ${index} (rowid, ${columns.join(', ')}) SELECT id, ${columns.join(', ')} FROM ${resource.table};`,
      `INSERT INTO ${index} (${index}) VALUES ('optimize');`,
    ]
  })
  .join('\n      ')

/**
 * Migration 7's triggers: each table's row in record_counts, one more with every row inserted and
 * one fewer with every row deleted, in the writing transaction (and savepoint) itself.
 */
const recordCountTriggers = resources.all
  .map((resource) => resource.table)
  .flatMap((table) =>
    (
      [
        ['insert', '+'],
        ['delete', '-'],
      ] as const
    ).map(
      ([event, sign]) => `CREATE TRIGGER ${table}_records_${event} AFTER ${event.toUpperCase()} ON ${table} BEGIN
        UPDATE record_counts SET records = records ${sign} 1 WHERE table_name = '${table}';
      END;`,
    ),
  )
  .join('\n      ')

export const sqliteMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'create authors, book collections and books',
    // AUTOINCREMENT so that the id of a deleted record is never handed out again.
    sql: `
      CREATE TABLE authors (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL
      );
      CREATE TABLE book_collections (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL
      );
      CREATE TABLE books (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        author_id INTEGER NOT NULL REFERENCES authors (id) ON DELETE RESTRICT,
        book_collection_id INTEGER REFERENCES book_collections (id) ON DELETE SET NULL
      );
      CREATE INDEX books_author_id ON books (author_id);
      CREATE INDEX books_book_collection_id ON books (book_collection_id);
    `,
  },
  {
    version: 2,
    name: 'full-text search of authors, collections and books',
    // unicode61 with remove_diacritics folds case and accents: "emile" finds "Émile". Triggers keep
    // the indexes in step inside the very transaction (and savepoint) of each write, renames of an
    // author or a collection included; a collection's delete reaches books_search through the
    // foreign key's SET NULL, which fires the books update trigger.
    sql: `
      CREATE VIRTUAL TABLE authors_search USING fts5(name, tokenize = 'unicode61 remove_diacritics 2');
      CREATE VIRTUAL TABLE book_collections_search USING fts5(name, tokenize = 'unicode61 remove_diacritics 2');
      CREATE VIRTUAL TABLE books_search USING fts5(
        name, author_name, collection_name, tokenize = 'unicode61 remove_diacritics 2'
      );
      -- Relevance: a match in the title counts most, then the author's name, then the collection's.
      INSERT INTO books_search (books_search, rank) VALUES ('rank', 'bm25(10.0, 2.0, 1.0)');
      INSERT INTO authors_search (rowid, name) SELECT id, name FROM authors;
      INSERT INTO book_collections_search (rowid, name) SELECT id, name FROM book_collections;
      INSERT INTO books_search (rowid, name, author_name, collection_name)
        SELECT b.id, b.name, a.name, c.name FROM books AS b
        JOIN authors AS a ON a.id = b.author_id
        LEFT JOIN book_collections AS c ON c.id = b.book_collection_id;

      CREATE TRIGGER authors_search_insert AFTER INSERT ON authors BEGIN
        INSERT INTO authors_search (rowid, name) VALUES (new.id, new.name);
      END;
      CREATE TRIGGER authors_search_update AFTER UPDATE OF name ON authors BEGIN
        UPDATE authors_search SET name = new.name WHERE rowid = new.id;
        UPDATE books_search SET author_name = new.name WHERE rowid IN (SELECT id FROM books WHERE author_id = new.id);
      END;
      CREATE TRIGGER authors_search_delete AFTER DELETE ON authors BEGIN
        DELETE FROM authors_search WHERE rowid = old.id;
      END;

      CREATE TRIGGER book_collections_search_insert AFTER INSERT ON book_collections BEGIN
        INSERT INTO book_collections_search (rowid, name) VALUES (new.id, new.name);
      END;
      CREATE TRIGGER book_collections_search_update AFTER UPDATE OF name ON book_collections BEGIN
        UPDATE book_collections_search SET name = new.name WHERE rowid = new.id;
        UPDATE books_search SET collection_name = new.name
          WHERE rowid IN (SELECT id FROM books WHERE book_collection_id = new.id);
      END;
      CREATE TRIGGER book_collections_search_delete AFTER DELETE ON book_collections BEGIN
        DELETE FROM book_collections_search WHERE rowid = old.id;
      END;

      CREATE TRIGGER books_search_insert AFTER INSERT ON books BEGIN
        INSERT INTO books_search (rowid, name, author_name, collection_name) VALUES (
          new.id, new.name,
          (SELECT name FROM authors WHERE id = new.author_id),
          (SELECT name FROM book_collections WHERE id = new.book_collection_id)
        );
      END;
      CREATE TRIGGER books_search_update AFTER UPDATE ON books BEGIN
        UPDATE books_search SET
          name = new.name,
          author_name = (SELECT name FROM authors WHERE id = new.author_id),
          collection_name = (SELECT name FROM book_collections WHERE id = new.book_collection_id)
        WHERE rowid = new.id;
      END;
      CREATE TRIGGER books_search_delete AFTER DELETE ON books BEGIN
        DELETE FROM books_search WHERE rowid = old.id;
      END;
    `,
  },
  {
    version: 3,
    name: 'search rows hold related ids, not related names; name indexes',
    // A book's search row held copies of its author's and collection's names, so renaming an
    // author rewrote the row of every one of their books. Now it holds their ids (which no rename
    // changes) and a search matches names in the authors' and collections' own indexes, then those
    // ids in the books' (the search fields of the books description, checked at start). The name
    // indexes serve sorting by name, keyset pages in that order, and filter[name].
    sql: `
      DROP TRIGGER authors_search_update;
      DROP TRIGGER book_collections_search_update;
      DROP TRIGGER books_search_insert;
      DROP TRIGGER books_search_update;
      DROP TABLE books_search;
      CREATE VIRTUAL TABLE books_search USING fts5(
        name, author_id, book_collection_id, tokenize = 'unicode61 remove_diacritics 2'
      );
      INSERT INTO books_search (rowid, name, author_id, book_collection_id)
        SELECT id, name, author_id, book_collection_id FROM books;

      CREATE TRIGGER authors_search_update AFTER UPDATE OF name ON authors BEGIN
        UPDATE authors_search SET name = new.name WHERE rowid = new.id;
      END;
      CREATE TRIGGER book_collections_search_update AFTER UPDATE OF name ON book_collections BEGIN
        UPDATE book_collections_search SET name = new.name WHERE rowid = new.id;
      END;
      CREATE TRIGGER books_search_insert AFTER INSERT ON books BEGIN
        INSERT INTO books_search (rowid, name, author_id, book_collection_id)
          VALUES (new.id, new.name, new.author_id, new.book_collection_id);
      END;
      -- Also when a collection's delete sets book_collection_id to NULL through the foreign key.
      CREATE TRIGGER books_search_update AFTER UPDATE OF name, author_id, book_collection_id ON books BEGIN
        UPDATE books_search SET name = new.name, author_id = new.author_id, book_collection_id = new.book_collection_id
          WHERE rowid = new.id;
      END;

      CREATE INDEX authors_name ON authors (name, id);
      CREATE INDEX book_collections_name ON book_collections (name, id);
      CREATE INDEX books_name ON books (name, id);
      -- The books of an author or a collection in name order (in id order: the indexes of migration 1).
      CREATE INDEX books_author_name ON books (author_id, name, id);
      CREATE INDEX books_book_collection_name ON books (book_collection_id, name, id);
    `,
  },
  {
    version: 4,
    name: 'data_version: a generation and a count of changes, the same for every connection, for version()',
    // version() tags streamed answers. SQLite's own PRAGMA data_version is per connection, so each
    // process of --workers (and each instance) gave its own tag for the same data and a client's
    // revalidation landing on another process got 200, not 304. This row is what every connection
    // reads alike: triggers add one to \`changes\` with every row written to the data tables, in the
    // writing transaction itself (so a reader sees the new count exactly with the new data), and each
    // start of the service draws a new \`generation\` (a file put back from a backup comes back with an
    // old count: the new generation keeps its tags from matching those given before).
    sql: `
      CREATE TABLE data_version (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        generation TEXT NOT NULL,
        changes INTEGER NOT NULL
      );
      INSERT INTO data_version (id, generation, changes) VALUES (1, lower(hex(randomblob(8))), 0);
      ${countTriggers}
    `,
  },
  {
    version: 5,
    name: 'names in Unicode NFC, as the service stores them since',
    // Names were stored as sent, so `É` sent decomposed (E and an accent) made another name than `É`
    // that filter[name] and the import told apart. The service now stores names in NFC; this brings
    // the names earlier versions stored to that form, so that every name is found by either.
    sql: '',
    rewrite: composeNames,
  },
  {
    version: 6,
    name: 'search indexes with prefix indexes for words of one to three letters',
    sql: prefixedSearchIndexes,
  },
  {
    version: 7,
    name: 'record_counts: the records of each table, kept by triggers, for the total of a page',
    // A page's meta.total counted the whole table (COUNT(*) steps through an index: 13 ms at a
    // million books, for a page read in well under one). The count is now kept in the writing
    // transaction, so a reader's snapshot holds the exact count of the rows it sees. SQLite has one
    // writer at a time: one row per table waits for nobody. Counted here from what the file holds.
    sql: `
      CREATE TABLE record_counts (table_name TEXT PRIMARY KEY, records INTEGER NOT NULL) WITHOUT ROWID;
      INSERT INTO record_counts (table_name, records)
        ${resources.all.map((r) => `SELECT '${r.table}', COUNT(*) FROM ${r.table}`).join(' UNION ALL ')};
      ${recordCountTriggers}
    `,
  },
]
