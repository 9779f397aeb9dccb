import { changeFeed, type SharedMigration } from './sql/schema-changes'

/**
 * The migrations written once for both backends, in the descriptions' terms (see
 * docs/schema.md): each backend applies them after its own history, numbered on from its last
 * (SQLite 8, PostgreSQL 10, ...). A fourth type is one entry here, such as
 * `{ name: 'publishers', changes: [createType(publishers), addToOne(books, 'publisher')] }`.
 */
export const sharedMigrations: readonly SharedMigration[] = [
  // GET /api/v1/changes (docs/changes.md): every write records its changes in its transaction.
  { name: 'the change feed: a row for each record a write creates, updates or deletes', changes: [changeFeed()] },
]
