import { longWordsSql } from './postgres/long-words'
import { plpgsqlPrefixSql, plpgsqlWordsSql } from './postgres/shared-functions'
import {
  changeFeed,
  feedHistory,
  handSql,
  mergedTriggers,
  recordTotals,
  type SharedMigration,
  searchVocabulary,
  unkeyedVocabularies,
} from './sql/schema-changes'

/**
 * The migrations written once for both backends, in the descriptions' terms (see
 * docs/schema.md): each backend applies them after its own history, numbered on from its last
 * (SQLite 8, 9 and 10, PostgreSQL 10, 11 and 12, ...). A fourth type is one entry here, such as
 * `{ name: 'publishers', changes: [createType(publishers), addToOne(books, 'publisher')] }`.
 */
export const sharedMigrations: readonly SharedMigration[] = [
  // GET /api/v1/changes (docs/changes.md): every write records its changes in its transaction.
  { name: 'the change feed: a row for each record a write creates, updates or deletes', changes: [changeFeed()] },
  // A position a client holds is of one history of one database: a restored or copied one starts over.
  {
    name: "the change feed's history: positions of a restored, copied or re-created database are gone",
    changes: [feedHistory()],
  },
  // filter[search] forgives typos (docs/search.md): a misspelled word's candidates are read here.
  {
    name: 'the search vocabularies: the words of each searched type, for the typos a search forgives',
    changes: [searchVocabulary()],
  },
  // PostgreSQL: a write cost the database 2.5-3 times what it costs with a plain table and a text
  // index (bench/standalone/postgres-write-cost.ts): the search words of a row were computed three
  // to four times, and parsed twice each time. SQLite has nothing to change.
  {
    name: 'writes cheaper on PostgreSQL: search words computed once a row written, page totals of records alone',
    changes: [handSql({ sqlite: '', postgres: plpgsqlWordsSql }), recordTotals()],
  },
  // PostgreSQL: what was left of a write's cost beside a plain table was its triggers, each about
  // 40-50 µs of PL/pgSQL and executor starts (src/store/postgres/merged-triggers-ddl.ts); and
  // search_prefix() was an SQL function parsed at every use, as search_words() was. SQLite has
  // nothing to change.
  {
    name: "writes cheaper on PostgreSQL: a write's triggers merged, search_prefix() in PL/pgSQL",
    changes: [mergedTriggers(), handSql({ sqlite: '', postgres: plpgsqlPrefixSql })],
  },
  // PostgreSQL: two transactions adding new words to two vocabularies in opposite orders (an
  // atomic batch creating an author then a collection, another the other way) deadlocked on the
  // unique key, each waiting for the other's insert: a second lost before one was run again.
  {
    name: 'search vocabularies without a unique key on PostgreSQL: writers adding the same new words never wait',
    changes: [unkeyedVocabularies()],
  },
  // PostgreSQL: a word of more than 2,047 bytes (a name of one long word; a search's) failed the
  // write or the search with a 500, its text search's limit; now cut to it (postgres/long-words.ts).
  {
    name: "search words cut to PostgreSQL's 2,047 bytes: a name or a search of one long word no longer fails",
    changes: [handSql({ sqlite: '', postgres: longWordsSql })],
  },
]
