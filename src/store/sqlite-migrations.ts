/**
 * Versioned schema migrations for the SQLite store. Applied in order on start, each in its own
 * transaction; a migration, once released, is never edited: add a new one instead.
 */
export interface Migration {
  readonly version: number
  readonly name: string
  readonly sql: string
}

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
]
