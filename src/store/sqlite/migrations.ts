import type { Database } from 'bun:sqlite'
import type { ResourceDescription } from '../../model/description'
import { authors } from '../../resources/authors'
import { bookCollections } from '../../resources/book-collections'
import { books } from '../../resources/books'
import { sharedMigrations } from '../shared-migrations'
import { createType, type SchemaChange, SchemaState, type SharedMigration } from '../sql/schema-changes'
import { sortIndexSql } from '../sql/sort-indexes'
import {
  addToOneSql,
  changeCountSql,
  recordCountRowSql,
  recordCountTriggerSql,
  searchIndexSql,
  sharedTablesSql,
  tableSql,
  typeSql,
} from './ddl'
import { feedTablesSql, feedTriggerSql } from './feed-ddl'
import { searchIndexName } from './search'
import { vocabularyFillSql, vocabularyTableSql } from './vocabulary'

/**
 * Versioned schema migrations for the SQLite store. Applied in order on start, each in its own
 * transaction; a migration, once released, is never edited: add a new one instead (to
 * src/store/shared-migrations.ts, written once for both backends in the descriptions' terms).
 */
export interface Migration {
  readonly version: number
  readonly name: string
  readonly sql: string
  /** What SQL cannot do (SQLite has no Unicode normalization), run after `sql` in the same transaction. */
  readonly rewrite?: (db: Database) => void
}

/** A part of SQLite's own history: SQL written for the types that exist when it runs. */
type Part = (state: SchemaState) => string[]

interface HistoryEntry {
  readonly version: number
  readonly name: string
  readonly parts: readonly (Part | SchemaChange)[]
  readonly rewrite?: (db: Database, types: readonly ResourceDescription[]) => void
}

/** A part the generator writes for one type, for every type that exists then. */
function eachType(part: (resource: ResourceDescription, state: SchemaState) => string[]): Part {
  return (state) => state.all.flatMap((resource) => part(resource, state))
}

/** The types a first migration brings in, with only their tables (the rest came in later migrations). */
function tables(...resources: ResourceDescription[]): Part {
  return (state) => resources.flatMap((resource) => tableSql(state.apply(createType(resource)) ?? resource, state))
}

function handWritten(sql: string): Part {
  return () => [sql]
}

/**
 * Migration 5: the names of each table in Unicode NFC. Only names with a character beyond ASCII
 * (more bytes than characters) can change, so only those are read.
 */
function composeNames(db: Database, types: readonly ResourceDescription[]): void {
  for (const resource of types) {
    for (const attribute of Object.values(resource.attributes)) {
      if (!attribute.isName) continue
      const [table, column] = [resource.table, attribute.column]
      const update = db.query(`UPDATE ${table} SET ${column} = ? WHERE id = ?`)
      const rows = db
        .query<{ id: number; name: string }, []>(
          `SELECT id, ${column} AS name FROM ${table} WHERE length(CAST(${column} AS BLOB)) <> length(${column})`,
        )
        .all()
      for (const { id, name } of rows) {
        const composed = name.isWellFormed() ? name.normalize('NFC') : name
        if (composed !== name) update.run(composed, id)
      }
    }
  }
}

const history: readonly HistoryEntry[] = [
  {
    version: 1,
    name: 'create authors, book collections and books',
    parts: [tables(authors, bookCollections, books)],
  },
  {
    version: 2,
    name: 'full-text search of authors, collections and books',
    // unicode61 with remove_diacritics folds case and accents: "emile" finds "Émile". Triggers keep
    // the indexes in step inside the very transaction (and savepoint) of each write, renames of an
    // author or a collection included; a collection's delete reaches books_search through the
    // foreign key's SET NULL, which fires the books update trigger.
    // (The search index of that time, which the generator no longer writes: by hand.)
    parts: [
      handWritten(`
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
    `),
    ],
  },
  {
    version: 3,
    name: 'search rows hold related ids, not related names; name indexes',
    // A book's search row held copies of its author's and collection's names, so renaming an
    // author rewrote the row of every one of their books. Now it holds their ids (which no rename
    // changes) and a search matches names in the authors' and collections' own indexes, then those
    // ids in the books' (the search fields of the books description, checked at start). The name
    // indexes serve sorting by name, keyset pages in that order, and filter[name].
    parts: [
      handWritten(`
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

    `),
      eachType(sortIndexSql),
    ],
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
    parts: [
      handWritten(sharedTablesSql[0] as string),
      handWritten('INSERT INTO data_version (id, generation, changes) VALUES (1, lower(hex(randomblob(8))), 0);'),
      eachType(changeCountSql),
    ],
  },
  {
    version: 5,
    name: 'names in Unicode NFC, as the service stores them since',
    // Names were stored as sent, so `É` sent decomposed (E and an accent) made another name than `É`
    // that filter[name] and the import told apart. The service now stores names in NFC; this brings
    // the names earlier versions stored to that form, so that every name is found by either.
    parts: [],
    rewrite: composeNames,
  },
  {
    version: 6,
    name: 'search indexes with prefix indexes for words of one to three letters',
    // A prefix query (`"b"*`) merged the lists of every word it begins, all of them before the first
    // match came out: at 1,000,000 books `b` took 15 ms to its first 20 matches and ten one-letter
    // words 250 ms; with the prefix index a short prefix is one list, read as far as needed
    // (0.01 ms). The index grows by about half.
    parts: [
      eachType((resource, state) => {
        const made = searchIndexSql(resource, state, true)
        return made.length === 0 ? [] : [`DROP TABLE ${searchIndexName(resource.table)};`, ...made]
      }),
    ],
  },
  {
    version: 7,
    name: 'record_counts: the records of each table, kept by triggers, for the total of a page',
    // A page's meta.total counted the whole table (COUNT(*) steps through an index: 13 ms at a
    // million books, for a page read in well under one). The count is now kept in the writing
    // transaction, so a reader's snapshot holds the exact count of the rows it sees. SQLite has one
    // writer at a time: one row per table waits for nobody. Counted here from what the file holds.
    parts: [
      handWritten(sharedTablesSql[1] as string),
      eachType((resource) => [recordCountRowSql(resource), ...recordCountTriggerSql(resource)]),
    ],
  },
]

/** A change in the descriptions' terms, in SQLite's SQL. */
function changeSql(change: SchemaChange, state: SchemaState): string[] {
  const resource = state.apply(change)
  switch (change.kind) {
    case 'create-type':
      return typeSql(change.resource, state, state.feed, state.vocabulary)
    case 'add-to-one':
      return addToOneSql(resource ?? change.resource, change.relationship, state)
    case 'add-index':
      return [`CREATE INDEX ${change.name} ON ${change.resource.table} (${change.columns.join(', ')});`]
    case 'sql':
      return [change.sqlite]
    case 'change-feed':
      return [...feedTablesSql, ...state.all.flatMap(feedTriggerSql)]
    case 'feed-history':
      // Nothing to keep: a SQLite position is a row of the file, and each opening moves the next
      // id past its time (sqlite/change-history.ts). The migration is recorded all the same, so
      // that both backends number the shared migrations alike.
      return []
    case 'search-vocabulary':
      return state.all.flatMap((type) => [
        ...vocabularyTableSql(type),
        ...vocabularyFillSql(type, searchIndexName(type.table)),
      ])
    case 'record-totals':
      // record_counts (migration 7) has always counted records alone.
      return []
    case 'merged-triggers':
      // PostgreSQL's triggers alone; SQLite's stay as they are (recorded so that both backends
      // number the shared migrations alike).
      return []
    case 'unkeyed-vocabularies':
      // One writer at a time: SQLite's vocabularies keep their key (recorded all the same).
      return []
  }
}

/** SQLite's own history, then the shared migrations numbered on from its last. */
export function sqliteMigrationsWith(shared: readonly SharedMigration[]): Migration[] {
  const last = history.at(-1)?.version ?? 0
  const entries: HistoryEntry[] = [
    ...history,
    ...shared.map((m, i) => ({ version: last + 1 + i, name: m.name, parts: m.changes })),
  ]
  const state = new SchemaState(entries.flatMap((e) => e.parts.filter((p) => typeof p !== 'function')))
  return entries.map((entry) => {
    const sql = entry.parts.flatMap((part) => (typeof part === 'function' ? part(state) : changeSql(part, state)))
    const types = state.all
    const rewrite = entry.rewrite
    return {
      version: entry.version,
      name: entry.name,
      sql: sql.join('\n'),
      ...(rewrite ? { rewrite: (db: Database) => rewrite(db, types) } : {}),
    }
  })
}

export const sqliteMigrations: readonly Migration[] = sqliteMigrationsWith(sharedMigrations)
