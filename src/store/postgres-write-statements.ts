import type { ResourceDescription } from '../resources/description'
import type { ResourceRegistry } from '../resources/registry'
import type { PostgresReader } from './postgres-reader'
import { quote, type Row } from './sqlite-table'
import type { DeleteResult, Id, RecordInput, WriteResult } from './store'

/** A row of a write's answer: the record's columns, and the checks' booleans and counts. */
type AnswerRow = Record<string, unknown>

/** A write as one statement: its text and values, and what its one answer row means. */
export interface WriteStatement<T> {
  readonly text: string
  readonly values: readonly unknown[]
  answer(rows: readonly AnswerRow[]): T
}

/** Parameters typed by the column they fill: a text attribute or a bigint reference. */
class Values {
  readonly list: unknown[] = []
  add(value: unknown, type: 'text' | 'bigint'): string {
    this.list.push(value)
    return `$${this.list.length}::${type}`
  }
}

/**
 * The PostgreSQL store's create, update and delete, each one statement that checks what it needs
 * and writes in the same snapshot, so that it holds no lock between round trips: a create takes
 * its id from the table's identity sequence and locks nothing of its own (the foreign keys lock
 * the records it refers to, FOR KEY SHARE, until it commits); an update and a delete lock their
 * row alone. A reference that a concurrent delete removed after the statement's snapshot fails its
 * foreign key (23503), and the write runs again (postgres-writes.ts): it then answers `missing`.
 */
export class PostgresWriteStatements {
  constructor(
    private readonly reader: PostgresReader,
    private readonly registry: ResourceRegistry,
  ) {}

  /**
   * INSERT … SELECT, producing its row only when every reference exists: a refused create calls
   * no nextval, so it leaves no gap. The answer names the references found missing.
   */
  create(resource: ResourceDescription, input: RecordInput): WriteStatement<WriteResult> {
    const table = this.reader.table(resource.type)
    const values = new Values()
    const { checks, names } = this.referenceChecks(resource, input, values)
    const set = this.assigned(resource, input, values)
    const columns = set.map(([column]) => quote(column)).join(', ')
    const selected = set.map(([, param]) => param).join(', ')
    const passed = checks.length === 0 ? '' : ` FROM refs WHERE ${checks.map((_, i) => `refs.r${i}`).join(' AND ')}`
    const text = `WITH refs AS (SELECT ${refColumns(checks)}),
      inserted AS (INSERT INTO ${table.name} (${columns}) SELECT ${selected}${passed} RETURNING ${table.columns})
      SELECT refs.*, inserted.* FROM refs LEFT JOIN inserted ON true`
    return {
      text,
      values: values.list,
      answer: (rows) => {
        const row = rows[0]
        if (row && row.id != null) return { ok: true, record: table.toRecord(row as Row) }
        const missing = names.filter((_, i) => row?.[`r${i}`] !== true)
        if (missing.length === 0) throw new Error(`INSERT INTO ${table.name} returned no row`)
        return { ok: false, missing }
      },
    }
  }

  /**
   * UPDATE … RETURNING of the fields given, when every reference exists: it locks its row and no
   * other (FOR NO KEY UPDATE: books may still be added to an author being renamed). Null when the
   * record does not exist; an input that sets nothing is a plain read.
   */
  update(resource: ResourceDescription, id: Id, input: RecordInput): WriteStatement<WriteResult | null> {
    const table = this.reader.table(resource.type)
    const values = new Values()
    const { checks, names } = this.referenceChecks(resource, input, values)
    const set = this.assigned(resource, input, values)
    const target = values.add(id, 'bigint')
    if (set.length === 0) {
      return {
        text: `SELECT ${table.columns} FROM ${table.name} WHERE "id" = ${target}`,
        values: values.list,
        answer: (rows) => (rows[0] ? { ok: true, record: table.toRecord(rows[0] as Row) } : null),
      }
    }
    const assignments = set.map(([column, param]) => `${quote(column)} = ${param}`).join(', ')
    const passed = checks.length === 0 ? '' : ` AND (SELECT ${checks.map((_, i) => `r${i}`).join(' AND ')} FROM refs)`
    const text = `WITH refs AS (SELECT ${refColumns(checks)}),
      updated AS (UPDATE ${table.name} SET ${assignments} WHERE "id" = ${target}${passed} RETURNING ${table.columns})
      SELECT EXISTS (SELECT 1 FROM ${table.name} WHERE "id" = ${target}) AS found, refs.*, updated.*
        FROM refs LEFT JOIN updated ON true`
    return {
      text,
      values: values.list,
      answer: (rows) => {
        const row = rows[0]
        if (row && row.id != null) return { ok: true, record: table.toRecord(row as Row) }
        if (row?.found !== true) return null
        const missing = names.filter((_, i) => row[`r${i}`] !== true)
        // Found in the statement's snapshot but deleted before the UPDATE reached it: gone.
        return missing.length === 0 ? null : { ok: false, missing }
      },
    }
  }

  /**
   * DELETE … RETURNING when no record that restricts it refers to this one (counted in the same
   * statement); the nullified references are the foreign keys' ON DELETE SET NULL. A book added
   * after the count fails the DELETE's foreign key (23503), and the delete runs again and counts it.
   */
  delete(resource: ResourceDescription, id: Id): WriteStatement<DeleteResult> {
    const table = this.reader.table(resource.type)
    const restricting = this.registry
      .dependents(resource.type)
      .filter((dependent) => dependent.relationship.onTargetDelete === 'restrict')
    const counts = restricting.map(
      ({ resource: by, relationship }, i) =>
        `(SELECT COUNT(*) FROM ${quote(by.table)} WHERE ${quote(relationship.column)} = $1::bigint)::int AS d${i}`,
    )
    const free = counts.length === 0 ? '' : ` AND (SELECT ${counts.map((_, i) => `d${i} = 0`).join(' AND ')} FROM deps)`
    const text = `WITH deps AS (SELECT ${['true AS counted', ...counts].join(', ')}),
      deleted AS (DELETE FROM ${table.name} WHERE "id" = $1::bigint${free} RETURNING "id")
      SELECT EXISTS (SELECT 1 FROM ${table.name} WHERE "id" = $1::bigint) AS found,
        EXISTS (SELECT 1 FROM deleted) AS deleted, deps.* FROM deps`
    return {
      text,
      values: [id],
      answer: (rows): DeleteResult => {
        const row = rows[0]
        if (row?.deleted === true) return { status: 'deleted' }
        if (row?.found !== true) return { status: 'not-found' }
        for (const [i, dependent] of restricting.entries()) {
          const count = Number(row[`d${i}`])
          if (count > 0) return { status: 'restricted', by: dependent.resource, count }
        }
        // Found in the statement's snapshot, deleted by another write before this one reached it.
        return { status: 'not-found' }
      },
    }
  }

  /** Each reference an input sets, as a condition that it exists (false for a required one set to null). */
  private referenceChecks(
    resource: ResourceDescription,
    input: RecordInput,
    values: Values,
  ): { checks: string[]; names: string[] } {
    const references = this.reader.references(resource, input.toOne)
    return {
      checks: references.map(({ type, id }) =>
        id === null
          ? 'false'
          : `EXISTS (SELECT 1 FROM ${this.reader.table(type).name} WHERE "id" = ${values.add(id, 'bigint')})`,
      ),
      names: references.map(({ name }) => name),
    }
  }

  /** The columns an input sets, each with its typed parameter. */
  private assigned(resource: ResourceDescription, input: RecordInput, values: Values): [string, string][] {
    const table = this.reader.table(resource.type)
    const references = new Set(table.toOneColumns().map(([, column]) => column))
    return table
      .assignments(input)
      .map(([column, value]) => [column, values.add(value, references.has(column) ? 'bigint' : 'text')])
  }
}

/** The reference checks as the columns r0, r1… of the `refs` row (one constant column when there are none). */
function refColumns(checks: readonly string[]): string {
  return ['true AS checked', ...checks.map((check, i) => `${check} AS r${i}`)].join(', ')
}
