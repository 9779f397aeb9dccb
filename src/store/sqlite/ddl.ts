import type { ResourceDescription, ToOneRelationship } from '../../model/description'
import { type ResourceRegistry, searchOf } from '../../resources/registry'
import { sortIndexSql, toOnes } from '../sql/sort-indexes'
import { Table } from '../sql/table'
import { addToOneColumnSql, type ToOneDialect, toOneColumnSql } from '../sql/to-one-columns'
import { feedTablesSql, feedTriggerSql } from './feed-ddl'
import { indexColumns, searchIndexName } from './search'
import { vocabularyTableSql } from './vocabulary'

/**
 * The SQLite schema of a resource type, written from its description: what `createType` runs, the
 * parts the migrations that added a part to every type run, and what the start-up check
 * (schema.ts) builds in memory to compare the file with. Names are the descriptions' own
 * (snake_case, never quoted), as the hand-written migrations had them.
 */

type Lookup = Pick<ResourceRegistry, 'get'>

/**
 * The table (AUTOINCREMENT, so that the id of a deleted record is never handed out again) and an
 * index on each to-one column, for the foreign key's checks and the related records of one record.
 */
export function tableSql(resource: ResourceDescription, lookup: Lookup): string[] {
  const columns = [
    'id INTEGER PRIMARY KEY AUTOINCREMENT',
    ...Object.values(resource.attributes).map((a) => `${a.column} TEXT${a.required ? ' NOT NULL' : ''}`),
    ...toOnes(resource).map(([, r]) => toOneColumnSql(r, lookup, toOneDialect)),
  ]
  return [
    `CREATE TABLE ${resource.table} (\n  ${columns.join(',\n  ')}\n);`,
    ...toOnes(resource).map(([, r]) => foreignKeyIndexSql(resource, r)),
  ]
}

/** The index of a reference column: what a delete of its target looks up. */
export function foreignKeyIndexSql(resource: ResourceDescription, relationship: ToOneRelationship): string {
  return `CREATE INDEX ${resource.table}_${relationship.column} ON ${resource.table} (${relationship.column});`
}

const toOneDialect: ToOneDialect = { idType: 'INTEGER', foreignKeyIndexSql }

/** The columns of a type's search index, or none when it has no search. */
function searchColumns(resource: ResourceDescription, lookup: Lookup): string[] {
  const search = searchOf(resource)
  return search ? indexColumns(new Table(resource), search, lookup).map((c) => c.column) : []
}

/**
 * The FTS5 index of a searched type: unicode61 with remove_diacritics folds case and accents
 * ("emile" finds "Émile"); prefix indexes for words of one to three letters make a short prefix
 * one list, read as far as needed (migration 6). `fill`: index the rows the table holds.
 */
export function searchIndexSql(resource: ResourceDescription, lookup: Lookup, fill: boolean): string[] {
  const columns = searchColumns(resource, lookup)
  if (columns.length === 0) return []
  const index = searchIndexName(resource.table)
  const list = columns.join(', ')
  const created = `CREATE VIRTUAL TABLE ${index} USING fts5(${list}, tokenize = 'unicode61 remove_diacritics 2', prefix = '1 2 3');`
  if (!fill) return [created]
  return [
    created,
    `INSERT INTO ${index} (rowid, ${list}) SELECT id, ${list} FROM ${resource.table};`,
    `INSERT INTO ${index} (${index}) VALUES ('optimize');`,
  ]
}

/**
 * The triggers that keep the search index in step inside the very transaction (and savepoint) of
 * each write; the update one also when a delete sets a to-one column to NULL through its foreign key.
 */
export function searchTriggerSql(resource: ResourceDescription, lookup: Lookup): string[] {
  const columns = searchColumns(resource, lookup)
  if (columns.length === 0) return []
  const table = resource.table
  const index = searchIndexName(table)
  const list = columns.join(', ')
  return [
    `CREATE TRIGGER ${index}_insert AFTER INSERT ON ${table} BEGIN
  INSERT INTO ${index} (rowid, ${list}) VALUES (new.id, ${columns.map((c) => `new.${c}`).join(', ')});
END;`,
    `CREATE TRIGGER ${index}_update AFTER UPDATE OF ${list} ON ${table} BEGIN
  UPDATE ${index} SET ${columns.map((c) => `${c} = new.${c}`).join(', ')} WHERE rowid = new.id;
END;`,
    `CREATE TRIGGER ${index}_delete AFTER DELETE ON ${table} BEGIN
  DELETE FROM ${index} WHERE rowid = old.id;
END;`,
  ]
}

/** The triggers that add one to data_version's count with every row written (for version()). */
export function changeCountSql(resource: ResourceDescription): string[] {
  return ['insert', 'update', 'delete'].map(
    (event) => `CREATE TRIGGER ${resource.table}_count_${event} AFTER ${event.toUpperCase()} ON ${resource.table} BEGIN
  UPDATE data_version SET changes = changes + 1;
END;`,
  )
}

/** The triggers that keep the type's row of record_counts: the total of an unfiltered page. */
export function recordCountTriggerSql(resource: ResourceDescription): string[] {
  const table = resource.table
  return (
    [
      ['insert', '+'],
      ['delete', '-'],
    ] as const
  ).map(
    ([event, sign]) => `CREATE TRIGGER ${table}_records_${event} AFTER ${event.toUpperCase()} ON ${table} BEGIN
  UPDATE record_counts SET records = records ${sign} 1 WHERE table_name = '${table}';
END;`,
  )
}

/** The type's row of record_counts, counted from what the table holds. */
export function recordCountRowSql(resource: ResourceDescription): string {
  return `INSERT INTO record_counts (table_name, records) SELECT '${resource.table}', COUNT(*) FROM ${resource.table};`
}

/** The tables every type's triggers write to (migrations 4 and 7): made once, before any type. */
export const sharedTablesSql = [
  `CREATE TABLE data_version (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  generation TEXT NOT NULL,
  changes INTEGER NOT NULL
);`,
  'CREATE TABLE record_counts (table_name TEXT PRIMARY KEY, records INTEGER NOT NULL) WITHOUT ROWID;',
]

/**
 * Everything a type has: what `createType` runs, and what the check compares the file with.
 * `feed`: the change feed exists (a migration made it), so the type records its changes.
 */
export function typeSql(resource: ResourceDescription, lookup: Lookup, feed: boolean, vocabulary: boolean): string[] {
  return [
    ...tableSql(resource, lookup),
    ...sortIndexSql(resource),
    ...searchIndexSql(resource, lookup, false),
    ...searchTriggerSql(resource, lookup),
    ...changeCountSql(resource),
    ...recordCountTriggerSql(resource),
    recordCountRowSql(resource),
    ...(feed ? feedTriggerSql(resource) : []),
    ...(vocabulary ? vocabularyTableSql(resource) : []),
  ]
}

/**
 * An optional to-one relationship added to a type's table: its column (SQLite adds a column with a
 * foreign key when its default is NULL), the index on it and the sort indexes of the related records.
 */
export function addToOneSql(resource: ResourceDescription, name: string, lookup: Lookup): string[] {
  return addToOneColumnSql(resource, name, lookup, toOneDialect)
}

/** The whole schema the descriptions of `registry` say: the shared tables, the feed's, then every type. */
export function schemaSql(registry: ResourceRegistry): string {
  return [...sharedTablesSql, ...feedTablesSql, ...registry.all.flatMap((r) => typeSql(r, registry, true, true))].join(
    '\n',
  )
}
