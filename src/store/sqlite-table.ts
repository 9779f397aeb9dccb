import type { SQLQueryBindings } from 'bun:sqlite'
import type { ResourceDescription, ToOneRelationship } from '../resources/description'
import type { Id, RecordInput, SortKey, StoredRecord } from './store'

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
  }

  /** Every column the description says the table has, `id` first. */
  columnNames(): string[] {
    return ['id', ...this.attributes.map(([, c]) => c), ...this.toOne.map(([, r]) => r.column)]
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

  toRecord(row: Row): StoredRecord {
    const attributes: Record<string, string> = {}
    for (const [name, column] of this.attributes) attributes[name] = String(row[column])
    const toOne: Record<string, Id | null> = {}
    for (const [name, relationship] of this.toOne) toOne[name] = row[relationship.column] as Id | null
    return { id: row.id as Id, attributes, toOne }
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
