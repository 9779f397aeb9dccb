import type { Database } from 'bun:sqlite'
import { type ResourceRegistry, searchOf } from '../../resources/registry'
import { Table } from '../sql/table'
import { indexColumns, searchIndexName } from './search'

/**
 * Refuses to start on a database whose tables do not hold what the resource descriptions say:
 * every described column, the triggers that count its changes for version(), a search index of
 * exactly the searched attributes, and its row of record_counts with the triggers that keep it. Without this, a description ahead of its migration answered
 * wrong data (SQLite takes an unknown double-quoted column name for a string literal).
 */
export function checkSchema(db: Database, registry: ResourceRegistry): void {
  const columnsOf = (table: string) =>
    db
      .query<{ name: string }, [string]>('SELECT name FROM pragma_table_info(?)')
      .all(table)
      .map((c) => c.name)
  for (const resource of registry.all) {
    const present = new Set(columnsOf(resource.table))
    if (present.size === 0) throw new Error(`the database has no table ${resource.table} for ${resource.type}`)
    const absent = new Table(resource).columnNames().filter((c) => !present.has(c))
    if (absent.length > 0) {
      throw new Error(
        `table ${resource.table} lacks the column(s) ${absent.join(', ')} that ${resource.type} describes`,
      )
    }
    const search = searchOf(resource)
    if (!search) continue
    const wanted = indexColumns(new Table(resource), search, registry).map((c) => c.column)
    const index = searchIndexName(resource.table)
    const indexed = columnsOf(index)
    if (indexed.join(',') !== wanted.join(',')) {
      throw new Error(
        `the search index ${index} holds (${indexed.join(', ')}), but ${resource.type} searches (${wanted.join(', ')})`,
      )
    }
  }
  // version() counts the changes of every data table: a table its migration left out of the count
  // would let a streamed answer keep a tag its data no longer has.
  for (const resource of registry.all) {
    for (const event of ['insert', 'update', 'delete']) {
      const trigger = `${resource.table}_count_${event}`
      if (!db.query('SELECT 1 FROM sqlite_master WHERE type = ? AND name = ?').get('trigger', trigger)) {
        throw new Error(
          `the database has no trigger ${trigger}, so changes to ${resource.table} would not reach version()`,
        )
      }
    }
  }
  // A page's total of an unfiltered list is its table's row of record_counts (migration 7): a table
  // without its row or its triggers would answer a wrong total.
  for (const resource of registry.all) {
    if (!db.query('SELECT 1 FROM record_counts WHERE table_name = ?').get(resource.table)) {
      throw new Error(`record_counts has no row for ${resource.table}, so its pages would have no total`)
    }
    for (const event of ['insert', 'delete']) {
      const trigger = `${resource.table}_records_${event}`
      if (!db.query('SELECT 1 FROM sqlite_master WHERE type = ? AND name = ?').get('trigger', trigger)) {
        throw new Error(
          `the database has no trigger ${trigger}, so the total of a page of ${resource.table} would be wrong`,
        )
      }
    }
  }
}
