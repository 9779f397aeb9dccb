import type { ResourceDescription } from '../../model/description'

/**
 * The change feed's schema on SQLite (src/store/change-log.ts): a row in `changes` for every row a
 * write inserts, updates or deletes, by triggers in the writing transaction (and savepoint), so a
 * write rolled back leaves none. One writer at a time: the id, one more than the largest in the
 * table, is the order of the commits. Pruning always keeps the newest row, so an id is never
 * handed out again (a plain rowid: AUTOINCREMENT's sqlite_sequence would be one more page written
 * by every commit). `change_horizon` holds the newest position pruned: a read after an older one
 * has missed changes (410).
 */
export const feedTablesSql = [
  `CREATE TABLE changes (
  id INTEGER PRIMARY KEY,
  type TEXT NOT NULL,
  record_id INTEGER NOT NULL,
  op TEXT NOT NULL,
  at INTEGER NOT NULL
);`,
  `CREATE TABLE change_horizon (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  pruned INTEGER NOT NULL
);`,
  'INSERT INTO change_horizon (id, pruned) VALUES (1, 0);',
]

/**
 * The triggers that record a type's changes (a foreign key's SET NULL is an update: it fires too).
 * A delete is recorded BEFORE the row goes, so that it comes before the updates its foreign keys'
 * SET NULL makes, as on PostgreSQL, where those run after the statement's row triggers.
 */
export function feedTriggerSql(resource: ResourceDescription): string[] {
  const table = resource.table
  return (
    [
      ['insert', 'AFTER', 'create', 'new'],
      ['update', 'AFTER', 'update', 'new'],
      ['delete', 'BEFORE', 'delete', 'old'],
    ] as const
  ).map(
    ([event, when, op, row]) => `CREATE TRIGGER ${table}_feed_${event} ${when} ${event.toUpperCase()} ON ${table} BEGIN
  INSERT INTO changes (type, record_id, op, at) VALUES ('${resource.type}', ${row}.id, '${op}', unixepoch());
END;`,
  )
}
