import { changeFeed, feedHistory, type SharedMigration, searchVocabulary } from './sql/schema-changes'

/**
 * The migrations written once for both backends, in the descriptions' terms (see
 * docs/schema.md): each backend applies them after its own history, numbered on from its last
 * (SQLite 8 and 9, PostgreSQL 10 and 11, ...). A fourth type is one entry here, such as
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
]
