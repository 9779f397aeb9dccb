import type { Database } from 'bun:sqlite'
import type { Migration } from '../../../src/store/sqlite/migrations'

/**
 * The SQLite migrations as they were written by hand before the schema was drawn from the
 * descriptions, each one's SQL text as it ran (the loops over the registry resolved): the
 * reference the generated migrations are compared with (schema-history.test.ts). Never edited.
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

export const handWrittenSqliteMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'create authors, book collections and books',
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
    sql: `
      CREATE TABLE data_version (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        generation TEXT NOT NULL,
        changes INTEGER NOT NULL
      );
      INSERT INTO data_version (id, generation, changes) VALUES (1, lower(hex(randomblob(8))), 0);
      CREATE TRIGGER authors_count_insert AFTER INSERT ON authors BEGIN
        UPDATE data_version SET changes = changes + 1;
      END;
      CREATE TRIGGER authors_count_update AFTER UPDATE ON authors BEGIN
        UPDATE data_version SET changes = changes + 1;
      END;
      CREATE TRIGGER authors_count_delete AFTER DELETE ON authors BEGIN
        UPDATE data_version SET changes = changes + 1;
      END;
      CREATE TRIGGER book_collections_count_insert AFTER INSERT ON book_collections BEGIN
        UPDATE data_version SET changes = changes + 1;
      END;
      CREATE TRIGGER book_collections_count_update AFTER UPDATE ON book_collections BEGIN
        UPDATE data_version SET changes = changes + 1;
      END;
      CREATE TRIGGER book_collections_count_delete AFTER DELETE ON book_collections BEGIN
        UPDATE data_version SET changes = changes + 1;
      END;
      CREATE TRIGGER books_count_insert AFTER INSERT ON books BEGIN
        UPDATE data_version SET changes = changes + 1;
      END;
      CREATE TRIGGER books_count_update AFTER UPDATE ON books BEGIN
        UPDATE data_version SET changes = changes + 1;
      END;
      CREATE TRIGGER books_count_delete AFTER DELETE ON books BEGIN
        UPDATE data_version SET changes = changes + 1;
      END;
    `,
  },
  {
    version: 5,
    name: 'names in Unicode NFC, as the service stores them since',
    sql: ``,
    rewrite: composeNames,
  },
  {
    version: 6,
    name: 'search indexes with prefix indexes for words of one to three letters',
    sql: `DROP TABLE authors_search;
      CREATE VIRTUAL TABLE authors_search USING fts5(name, tokenize = 'unicode61 remove_diacritics 2', prefix = '1 2 3');
      INSERT INTO authors_search (rowid, name) SELECT id, name FROM authors;
      INSERT INTO authors_search (authors_search) VALUES ('optimize');
      DROP TABLE book_collections_search;
      CREATE VIRTUAL TABLE book_collections_search USING fts5(name, tokenize = 'unicode61 remove_diacritics 2', prefix = '1 2 3');
      INSERT INTO book_collections_search (rowid, name) SELECT id, name FROM book_collections;
      INSERT INTO book_collections_search (book_collections_search) VALUES ('optimize');
      DROP TABLE books_search;
      CREATE VIRTUAL TABLE books_search USING fts5(name, author_id, book_collection_id, tokenize = 'unicode61 remove_diacritics 2', prefix = '1 2 3');
      INSERT INTO books_search (rowid, name, author_id, book_collection_id) SELECT id, name, author_id, book_collection_id FROM books;
      INSERT INTO books_search (books_search) VALUES ('optimize');`,
  },
  {
    version: 7,
    name: 'record_counts: the records of each table, kept by triggers, for the total of a page',
    sql: `
      CREATE TABLE record_counts (table_name TEXT PRIMARY KEY, records INTEGER NOT NULL) WITHOUT ROWID;
      INSERT INTO record_counts (table_name, records)
        SELECT 'authors', COUNT(*) FROM authors UNION ALL SELECT 'book_collections', COUNT(*) FROM book_collections UNION ALL SELECT 'books', COUNT(*) FROM books;
      CREATE TRIGGER authors_records_insert AFTER INSERT ON authors BEGIN
        UPDATE record_counts SET records = records + 1 WHERE table_name = 'authors';
      END;
      CREATE TRIGGER authors_records_delete AFTER DELETE ON authors BEGIN
        UPDATE record_counts SET records = records - 1 WHERE table_name = 'authors';
      END;
      CREATE TRIGGER book_collections_records_insert AFTER INSERT ON book_collections BEGIN
        UPDATE record_counts SET records = records + 1 WHERE table_name = 'book_collections';
      END;
      CREATE TRIGGER book_collections_records_delete AFTER DELETE ON book_collections BEGIN
        UPDATE record_counts SET records = records - 1 WHERE table_name = 'book_collections';
      END;
      CREATE TRIGGER books_records_insert AFTER INSERT ON books BEGIN
        UPDATE record_counts SET records = records + 1 WHERE table_name = 'books';
      END;
      CREATE TRIGGER books_records_delete AFTER DELETE ON books BEGIN
        UPDATE record_counts SET records = records - 1 WHERE table_name = 'books';
      END;
    `,
  },
]
