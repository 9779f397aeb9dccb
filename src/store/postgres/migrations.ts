import type { ResourceDescription } from '../../model/description'
import { authors } from '../../resources/authors'
import { bookCollections } from '../../resources/book-collections'
import { books } from '../../resources/books'
import { sharedMigrations } from '../shared-migrations'
import { createType, type SchemaChange, SchemaState, type SharedMigration } from '../sql/schema-changes'
import { sortIndexSql, toOnes } from '../sql/sort-indexes'
import {
  addToOneSql,
  commitTriggers,
  foreignKeyIndexSql,
  searchColumnSql,
  searchTotalStatementTriggers,
  tableSql,
  typeSql,
} from './ddl'
import { feedHistorySql, feedTablesSql, feedTypeSql } from './feed-ddl'
import { mergedTriggersMigrationSql } from './merged-triggers-ddl'
import type { PostgresMigration } from './migrate'
import { recordTotalsMigrationSql } from './record-totals-ddl'
import { flushFunction, wordFunctions } from './search-totals-ddl'
import {
  clearSearchTotalsSql,
  dataVersionSql,
  pendSearchTotalsSql,
  searchFunctionsSql,
  searchTotalsSql,
} from './shared-functions'
import {
  unkeyVocabularySql,
  vocabularyFillSql,
  vocabularyFunctions,
  vocabularyTableSql,
  vocabularyTriggers,
} from './vocabulary-ddl'

/**
 * PostgreSQL's own history of migrations, each said in what the generator (ddl.ts) writes for the
 * types that exist then, with hand SQL for the shared functions and what the generator no longer
 * writes; then the shared migrations (src/store/shared-migrations.ts), numbered on from 9.
 */

/** A part of the history: SQL written for the types that exist when it runs. */
type Part = (state: SchemaState) => string[]

interface HistoryEntry {
  readonly version: number
  readonly name: string
  readonly parts: readonly (Part | SchemaChange)[]
}

function eachType(part: (resource: ResourceDescription, state: SchemaState) => string[]): Part {
  return (state) => state.all.flatMap((resource) => part(resource, state))
}

/** The types a first migration brings in, with only their tables (the rest came in later migrations). */
function tables(...resources: ResourceDescription[]): Part {
  return (state) => resources.map((resource) => tableSql(state.apply(createType(resource)) ?? resource, state, 'plain'))
}

function handWritten(sql: string): Part {
  return () => [sql]
}

/** The names of the types there are, as an SQL array of text. */
function tableArray(state: SchemaState): string {
  return `ARRAY[${state.all.map((r) => `'${r.table}'`).join(', ')}]`
}

const history: readonly HistoryEntry[] = [
  {
    version: 1,
    name: 'authors, book collections and books, with name and search indexes',
    // Ids come from record_ids, one counter row per table, moved in the inserting transaction: a
    // deleted record's id is never handed out again, and a write rolled back (an atomic batch that
    // failed) gives its ids back, as SQLite's AUTOINCREMENT does; a sequence would leave a gap that
    // tells the backends apart. Inserts into one table thus commit one after the other, as SQLite's do.
    // COLLATE "C": names compare byte by byte, as SQLite's BINARY does, so lists sort the same.
    // search_vector() and search_prefix() split words and fold case and accents as the SQLite index
    // does (unicode61 remove_diacritics); unaccent also expands ß, Œ, Æ and ligatures (ss, oe, ae).
    // An expression index needs IMMUTABLE functions, and unaccent() is only STABLE (its rules file
    // could change: then REINDEX), so they are wrapped, naming unaccent's schema outright so that
    // they do not depend on the search_path of whoever calls them.
    parts: [
      handWritten(searchFunctionsSql),
      tables(authors, bookCollections, books),
      (state) => [
        `INSERT INTO record_ids (table_name, last_id) VALUES ${state.all.map((r) => `('${r.table}', 0)`).join(', ')};`,
      ],
      // The to-one indexes of that time (migration 8 puts the id beside the column).
      eachType((resource) =>
        toOnes(resource).map(
          ([, r]) => `CREATE INDEX ${resource.table}_${r.column} ON ${resource.table} (${r.column});`,
        ),
      ),
      eachType(sortIndexSql),
      // The search indexes of that time, on an expression (migration 9 stores the words instead).
      eachType((r) => [`CREATE INDEX ${r.table}_search ON ${r.table} USING gin (search_vector(name));`]),
    ],
  },
  {
    version: 2,
    name: 'data_version: the commits that changed this database, for version()',
    // Every transaction that changes authors, collections or books adds one to a slot of
    // data_version as it commits; version() reads the sum, which thus changes exactly when this
    // database's data does, in the same commit (a reader sees the new sum only with the new data).
    // The trigger is deferred to the commit, and counts once a transaction (a transaction-local
    // setting marks it counted): the slot's row is locked only from there to the end of the
    // commit, after every other lock the transaction takes, so no two writes deadlock on it.
    // Eight slots, one per backend pid modulo 8, so that concurrent commits seldom wait for each other.
    parts: [handWritten(dataVersionSql), eachType((resource) => commitTriggers(resource).map((t) => t.sql))],
  },
  {
    version: 3,
    name: 'search_totals and bm25 functions: ranking as SQLite FTS5 bm25 does',
    // What FTS5's bm25 reads from its index besides the row: the rows of a table and the tokens of
    // all of them (a book's: its title's words, one for its author, one for a collection). Kept per
    // slot as data_version is (a row per backend pid modulo 8, so that concurrent commits seldom
    // wait for each other), by a trigger deferred to the commit. search_fold() is a search word as
    // search_prefix() compares it, to count a row's words that begin with it; bm25_idf() and
    // bm25_term() are FTS5's arithmetic (sqlite/ext/fts5/fts5_aux.c), in float8 as its C is, in the
    // same order, so that equal inputs give bit-equal scores (src/store/postgres/search.ts).
    // The row triggers of that time went with migration 5: all by hand, as written then.
    parts: [handWritten(searchTotalsSql)],
  },
  {
    version: 4,
    name: 'data_generation: what version() gives besides the count, the same for every instance',
    // version() tags streamed answers. It was this process's own opening and the count, so each
    // instance (and each worker) gave its own tag for the same data, and a revalidation reaching
    // another one got 200, not 304. The generation is the database's instead: every instance reads
    // the same. Each start of an instance draws a new one (PostgresStore.open), so that a database
    // restored from a dump, whose counts went back, never gives again a tag given before.
    parts: [
      handWritten(`
      CREATE TABLE data_generation (
        only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
        generation text NOT NULL
      );
      INSERT INTO data_generation (generation) VALUES (gen_random_uuid()::text);
    `),
    ],
  },
  {
    version: 5,
    name: 'search_totals counted a statement at a time: a bulk write adds its change once',
    // Migration 3's row trigger added each changed row to the slot's totals at the commit: a
    // transaction changing many rows updated one row many times, each update following the row's
    // growing version chain (a 1,000-book import batch committed in 98 ms instead of 4 ms). Now each
    // statement sums its change from its transition tables into a transaction-local setting (undone
    // with a savepoint rolled back, as the rows are), and a deferred trigger writes the sums once, at
    // the commit, after every other lock of the transaction, as data_version counts once. (Hand-written
    // SQL that sets these constraints IMMEDIATE would flush before its statement's own sum: the
    // service never does.)
    parts: [
      handWritten(pendSearchTotalsSql),
      // The words a row adds to its table's total, each kind of type's once; then the flush.
      (state) => [...new Set(state.all.flatMap(wordFunctions).map((fn) => fn.sql))],
      (state) => [flushFunction(state.all).sql],
      handWritten(clearSearchTotalsSql),
      eachType((resource) => [
        ...searchTotalStatementTriggers(resource).map((t) => t.sql),
        `CREATE CONSTRAINT TRIGGER ${resource.table}_search_totals AFTER INSERT OR UPDATE OR DELETE ON ${resource.table}
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION flush_search_totals();`,
      ]),
    ],
  },
  {
    version: 6,
    name: 'names in Unicode NFC, as the service stores them since',
    // As SQLite's migration 5: names stored by earlier versions decomposed are composed, so that
    // filter[name] and the import find a name whichever form it was sent in. normalize() needs a
    // UTF8 database; under another encoding names were stored as sent and stay so.
    parts: [
      (state) => {
        const updates = state.all.flatMap((r) =>
          Object.values(r.attributes)
            .filter((a) => a.isName)
            .map(
              (a) =>
                `UPDATE ${r.table} SET ${a.column} = normalize(${a.column}, NFC) WHERE ${a.column} IS NOT NFC NORMALIZED;`,
            ),
        )
        return [
          `DO $migration$
BEGIN
  IF pg_catalog.current_setting('server_encoding') = 'UTF8' THEN
    ${updates.join('\n    ')}
  END IF;
END
$migration$;`,
        ]
      },
    ],
  },
  {
    version: 7,
    name: 'ids from identity columns: creates of a table no longer wait for each other',
    // Migration 1's counter rows in record_ids were locked by every create of a table until its
    // commit reached the disk: the creates of a table, across every instance, committed one at a
    // time (573 POSTs a second on a 2-core machine, where plain inserts reach 8,000). Each id now
    // comes from its table's identity sequence, which no transaction holds: ids stay unique,
    // increasing in the order handed out and never handed out again, but a write rolled back (an
    // atomic batch that failed) leaves a gap, which SQLite's AUTOINCREMENT does not. Each sequence
    // starts past both its counter and the table's largest id, so no id given before comes again.
    // record_ids goes: an instance of an older build still running would take ids from it that the
    // sequences hand out too; without it, its creates fail (42P01: a 503) until it is replaced.
    parts: [
      (state) => [
        `DO $migration$
DECLARE
  tbl text;
  next_id bigint;
BEGIN
  FOREACH tbl IN ARRAY ${tableArray(state)} LOOP
    EXECUTE format('SELECT GREATEST((SELECT last_id FROM record_ids WHERE table_name = %L), (SELECT MAX(id) FROM %I), 0) + 1',
      tbl, tbl) INTO next_id;
    EXECUTE format('ALTER TABLE %I ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (START WITH %s)', tbl, next_id);
  END LOOP;
END
$migration$;`,
        'DROP TABLE record_ids;',
      ],
    ],
  },
  {
    version: 8,
    name: "a book's author and collection indexed with its id: their pages read in id order",
    // A btree on author_id alone holds an author's books in the order of their places on disk, not
    // of their ids: a page of an author's books in id order (the default) walked the primary key
    // instead, testing every book until it had 20 (at a million books, 110 ms for an author whose
    // only book is the last). With the id beside it, the index holds them in id order, as SQLite's
    // (whose index entries end with the rowid) always did: the page reads its 20 entries and stops,
    // and the total of a filtered page is still counted in the index alone. Same names as before,
    // and as SQLite's; the foreign keys' checks use them as they did.
    parts: [
      eachType((resource) =>
        toOnes(resource).flatMap(([, r]) => [
          `DROP INDEX ${resource.table}_${r.column};`,
          foreignKeyIndexSql(resource, r),
        ]),
      ),
    ],
  },
  {
    version: 9,
    name: 'search words stored beside each searched attribute, indexed by GIN: searches that stop at their first page',
    // A search page is read in id order and stops at its first matches (src/store/postgres/search.ts):
    // that tests rows one by one, which the stored words make cheap. In place of migration 1's
    // expression index, which indexed the same words. Adding the column rewrites the table once
    // (about 15 s for 1,000,000 books).
    parts: [eachType((resource) => [...searchColumnSql(resource), `DROP INDEX IF EXISTS ${resource.table}_search;`])],
  },
]

/** A change in the descriptions' terms, in PostgreSQL's SQL. */
function changeSql(change: SchemaChange, state: SchemaState): string[] {
  const resource = state.apply(change)
  switch (change.kind) {
    case 'create-type':
      return typeSql(resource ?? change.resource, state, state.all, state)
    case 'add-to-one':
      return addToOneSql(resource ?? change.resource, change.relationship, state)
    case 'add-index':
      return [`CREATE INDEX ${change.name} ON ${change.resource.table} (${change.columns.join(', ')});`]
    case 'sql':
      return [change.postgres]
    case 'change-feed':
      return [...feedTablesSql, ...state.all.flatMap(feedTypeSql)]
    case 'feed-history':
      return feedHistorySql
    case 'search-vocabulary':
      return state.all.flatMap((type) => [
        ...vocabularyTableSql(type, 'keyed'),
        ...vocabularyFunctions(type, 'computed', 'keyed').map((fn) => fn.sql),
        ...vocabularyTriggers(type).map((t) => t.sql),
        ...vocabularyFillSql(type),
      ])
    case 'record-totals':
      return recordTotalsMigrationSql(
        state.all,
        state.all.flatMap(wordFunctions).map((fn) => fn.name),
      )
    case 'merged-triggers':
      return mergedTriggersMigrationSql(state.all)
    case 'unkeyed-vocabularies':
      return state.all.flatMap(unkeyVocabularySql)
  }
}

/** PostgreSQL's own history, then the shared migrations numbered on from its last. */
export function postgresMigrationsWith(shared: readonly SharedMigration[]): PostgresMigration[] {
  const last = history.at(-1)?.version ?? 0
  const entries: HistoryEntry[] = [
    ...history,
    ...shared.map((m, i) => ({ version: last + 1 + i, name: m.name, parts: m.changes })),
  ]
  const state = new SchemaState(entries.flatMap((e) => e.parts.filter((p) => typeof p !== 'function')))
  return entries.map((entry) => ({
    version: entry.version,
    name: entry.name,
    sql: entry.parts.flatMap((part) => (typeof part === 'function' ? part(state) : changeSql(part, state))).join('\n'),
  }))
}

export const postgresMigrations: readonly PostgresMigration[] = postgresMigrationsWith(sharedMigrations)
