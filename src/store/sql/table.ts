import type { SQLQueryBindings } from 'bun:sqlite'
import type { ResourceDescription, ToOneRelationship } from '../../model/description'
import type { SortKey } from '../../model/query'
import type { Id, StoredRecord } from '../../model/record'
import type { RecordInput } from '../../model/writes'

export type Row = Record<string, string | number | null>
export type Bindings = SQLQueryBindings[]

export function quote(identifier: string): string {
  return `"${identifier.replaceAll('"', '""')}"`
}

export function whereClause(where: readonly string[]): string {
  return where.length === 0 ? '' : ` WHERE ${where.join(' AND ')}`
}

/** The SQL names of one resource's table, derived from its description. */
export class Table {
  readonly name: string
  readonly columns: string
  readonly findSql: string
  readonly existsSql: string
  private readonly attributes: [name: string, column: string][]
  private readonly toOne: [name: string, relationship: ToOneRelationship][]
  private readonly readRecord: (row: Row) => StoredRecord

  constructor(readonly resource: ResourceDescription) {
    this.name = quote(resource.table)
    this.attributes = Object.entries(resource.attributes).map(([name, a]) => [name, a.column])
    this.toOne = []
    for (const [name, relationship] of Object.entries(resource.relationships)) {
      if (relationship.kind === 'to-one') this.toOne.push([name, relationship])
    }
    this.columns = this.columnNames().map(quote).join(', ')
    this.findSql = `SELECT ${this.columns} FROM ${this.name} WHERE "id" = ?`
    this.existsSql = `SELECT 1 AS found FROM ${this.name} WHERE "id" = ?`
    this.readRecord = recordReader(this.attributes, this.toOneColumns())
  }

  /** Every column the description says the table has, `id` first. */
  columnNames(): string[] {
    return ['id', ...this.attributes.map(([, c]) => c), ...this.toOne.map(([, r]) => r.column)]
  }

  /** Each to-one relationship's name and column, in description order. */
  toOneColumns(): readonly (readonly [name: string, column: string])[] {
    return this.toOne.map(([name, relationship]) => [name, relationship.column] as const)
  }

  attributeColumn(attribute: string): string {
    const found = this.attributes.find(([name]) => name === attribute)
    if (!found) throw new Error(`${this.resource.type} has no attribute ${attribute}`)
    return quote(found[1])
  }

  /** `id` or an attribute, as a sort key names it. */
  sortColumn(field: string): string {
    return field === 'id' ? `${this.name}."id"` : this.attributeColumn(field)
  }

  column(relationship: string): string {
    const found = this.toOne.find(([name]) => name === relationship)
    if (!found) throw new Error(`${this.resource.type} has no to-one relationship ${relationship}`)
    return quote(found[1].column)
  }

  /** A row as a record, by a function made once per table from its description (see recordReader). */
  toRecord(row: Row): StoredRecord {
    return this.readRecord(row)
  }

  /** Column names and values for the fields an input sets, in description order. */
  assignments(input: RecordInput): [column: string, value: string | Id | null][] {
    const set: [string, string | Id | null][] = []
    for (const [name, column] of this.attributes) {
      const value = input.attributes[name]
      if (value !== undefined) set.push([column, value])
    }
    for (const [name, relationship] of this.toOne) {
      const value = input.toOne[name]
      if (value !== undefined) set.push([relationship.column, value])
    }
    return set
  }

  /** A whole record's values in the order of columnNames(): its id, attributes and to-one ids. */
  rowOf(record: StoredRecord): (string | Id | null)[] {
    return [record.id, ...this.assignments(record).map(([, value]) => value)]
  }

  /** `ORDER BY` terms for sort keys. */
  orderTerms(sort: readonly SortKey[]): string[] {
    return sort.map((k) => `${this.sortColumn(k.field)} ${k.descending ? 'DESC' : 'ASC'}`)
  }

  /**
   * Keyset condition: the rows after the one whose sort values are `after`, in `sort` order (sort
   * values compared left to right, each key in its own direction). Written as
   * `k1 >= v1 AND (k1 > v1 OR (k2 > v2 OR ...))` rather than a plain OR of cases, so that SQLite
   * sees a range on the first key and starts the index scan there instead of at the beginning.
   */
  keysetCondition(sort: readonly SortKey[], after: readonly (string | number)[], params: Bindings): string {
    const compare = (i: number): string => {
      const key = sort[i] as SortKey
      const column = this.sortColumn(key.field)
      params.push(after[i] as string | number)
      const strict = `${column} ${key.descending ? '<' : '>'} ?`
      if (i === sort.length - 1) return strict
      params.push(after[i] as string | number)
      return `(${strict} OR (${column} = ? AND ${compare(i + 1)}))`
    }
    const first = sort[0] as SortKey
    params.push(after[0] as string | number)
    const range = `${this.sortColumn(first.field)} ${first.descending ? '<=' : '>='} ?`
    return `(${range} AND ${compare(0)})`
  }
}

/**
 * A function that turns a row into a record, written for one table: its objects are literals of
 * one fixed shape, with no loop over the description per row, which a list does thousands of
 * times. The names in its source come from the description (our code), each a JSON string literal.
 */
function recordReader(
  attributeColumns: readonly (readonly [name: string, column: string])[],
  toOneColumns: readonly (readonly [name: string, column: string])[],
): (row: Row) => StoredRecord {
  const field = (name: string, column: string, text: boolean) =>
    `${JSON.stringify(name)}: ${text ? 'String(' : ''}row[${JSON.stringify(column)}]${text ? ')' : ''}`
  const attributes = attributeColumns.map(([name, column]) => field(name, column, true))
  const toOne = toOneColumns.map(([name, column]) => field(name, column, false))
  return new Function(
    'row',
    `return { id: row.id, attributes: { ${attributes.join(', ')} }, toOne: { ${toOne.join(', ')} } }`,
  ) as (row: Row) => StoredRecord
}
