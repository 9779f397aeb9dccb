import type { Statement } from 'bun:sqlite'
import type { StoreFilter } from '../../model/query'
import type { Id } from '../../model/record'
import type { Bindings, Row, Table } from '../sql/table'

/** Where SqliteCounter.driver starts counting the filters' ranges: a page's worth, and some. */
const FIRST_BOUND = 256

/** A filter on a column of the table itself: an attribute's value, or a to-one relationship's ids. */
export type ColumnFilter = Exclude<StoreFilter, { kind: 'search' }>

/** Whether every filter is on a column (none is a search), so that each has an index of its own. */
export function onColumns(filters: readonly StoreFilter[]): filters is readonly ColumnFilter[] {
  return filters.every((filter) => filter.kind !== 'search')
}

/**
 * The SQL condition of a column filter; its parameters are pushed in order. `indexed` false writes
 * the column as `+column`, which SQLite reads row by row rather than from its index: so that of
 * several filters, the one whose index range is the narrowest drives the read (see SqliteCounter.driver).
 */
export function columnCondition(table: Table, filter: ColumnFilter, params: Bindings, indexed = true): string {
  const plus = indexed ? '' : '+'
  if (filter.kind === 'attribute') {
    params.push(filter.value)
    return `${plus}${table.name}.${table.attributeColumn(filter.attribute)} = ?`
  }
  // Qualified: a search joins its index, whose columns share the table's names.
  const column = `${plus}${table.name}.${table.column(filter.relationship)}`
  const any: string[] = []
  if (filter.ids.length === 1) {
    // Equality, not IN: SQLite then reads the column's index already in id order, with no sort.
    any.push(`${column} = ?`)
    params.push(filter.ids[0] as Id)
  } else if (filter.ids.length > 1) {
    any.push(`${column} IN (SELECT value FROM json_each(?))`)
    params.push(JSON.stringify(filter.ids))
  }
  if (filter.orNone) any.push(`${column} IS NULL`)
  return any.length === 0 ? '0' : `(${any.join(' OR ')})`
}

/**
 * How many records a list of column filters has, at the cost of the narrowest of its filters'
 * index ranges, never of the table: the total of a page. A search is not counted here.
 */
export class SqliteCounter {
  constructor(private readonly statement: (sql: string) => Statement<Row, Bindings>) {}

  /**
   * With no filter, the table's row of record_counts (migration 7: kept by triggers in every
   * writing transaction, so exact in the reader's snapshot); with filters, their rows counted in
   * the index of one of them: `driver`'s when given (the others checked row by row).
   */
  count(table: Table, filters: readonly ColumnFilter[], driver?: ColumnFilter): number {
    if (filters.length === 0) {
      const kept = this.statement('SELECT records FROM record_counts WHERE table_name = ?').get(table.resource.table)
      if (kept) return kept.records as number
    }
    const [only] = filters
    if (filters.length === 1 && only?.kind === 'relationship' && only.ids.length > 0 && only.orNone) {
      // Some ids or none: two ranges of the column's index, which hold no row in common. Counted as
      // one (SQLite's OR of two indexes), each row found would be kept in a set to drop doubles.
      return (
        this.counted(table, [{ ...only, orNone: false }], undefined) +
        this.counted(table, [{ ...only, ids: [] }], undefined)
      )
    }
    return this.counted(table, filters, driver)
  }

  /**
   * Of several filters, the one whose index range is the narrowest. Without statistics (no
   * ANALYZE) SQLite cannot tell an author's 1,000 books from a collection's 200,000, and may read
   * the wider range row by row. So each range is counted in its own index (no row is read), all of
   * them up to a bound that grows sixteenfold until one ends below it: the counting costs a small
   * multiple of the narrowest range, whatever the widest. Undefined for fewer than two filters.
   */
  driver(table: Table, filters: readonly ColumnFilter[]): ColumnFilter | undefined {
    if (filters.length < 2) return undefined
    for (let bound = FIRST_BOUND; ; bound *= 16) {
      const rows = filters.map((filter) => {
        const params: Bindings = []
        const where = columnCondition(table, filter, params)
        const sql = `SELECT COUNT(*) AS count FROM (SELECT 1 FROM ${table.name} WHERE ${where} LIMIT ?)`
        return this.statement(sql).get(...params, bound)?.count as number
      })
      const least = Math.min(...rows)
      if (least < bound) return filters[rows.indexOf(least)]
    }
  }

  private counted(table: Table, filters: readonly ColumnFilter[], driver: ColumnFilter | undefined): number {
    const params: Bindings = []
    const where = filters.map((filter) => columnCondition(table, filter, params, !driver || filter === driver))
    const clause = where.length === 0 ? '' : ` WHERE ${where.join(' AND ')}`
    const row = this.statement(`SELECT COUNT(*) AS count FROM ${table.name}${clause}`).get(...params)
    return row?.count as number
  }
}
