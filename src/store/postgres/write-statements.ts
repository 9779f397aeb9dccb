import type { ResourceDescription } from '../../model/description'
import type { Id } from '../../model/record'
import type { DeleteResult, RecordInput, WriteResult } from '../../model/writes'
import type { ResourceRegistry } from '../../resources/registry'
import { quote } from '../sql/table'
import type { PostgresReader, Queryable } from './reader'

/** Parameters typed by the column they fill: a text attribute or a bigint reference. */
class Values {
  readonly list: unknown[] = []
  add(value: unknown, type: 'text' | 'bigint'): string {
    this.list.push(value)
    return `$${this.list.length}::${type}`
  }
}

/** Times a write is tried when a reference it lacked appears, or a record it counted goes, before it answers. */
const ATTEMPTS = 3

/**
 * The PostgreSQL store's create, update and delete: each one statement that checks what it needs
 * in its own snapshot and writes, so that it holds no lock across round trips. A create takes its
 * id from the table's identity sequence and locks nothing of its own (the foreign keys lock the
 * records it refers to, FOR KEY SHARE, until it commits); an update and a delete lock their row
 * alone. Only a write that did not happen asks why (the references missing, the record gone, the
 * records that restrict a delete) in further reads. A reference that a concurrent delete removed
 * after the statement's snapshot fails its foreign key (23503), and the write runs again
 * (postgres/retries.ts): it then answers `missing` or `restricted`.
 */
export class PostgresWriteStatements {
  constructor(
    private readonly reader: PostgresReader,
    private readonly registry: ResourceRegistry,
  ) {}

  /** INSERT … SELECT … WHERE every reference exists: a refused create calls no nextval, so it leaves no gap. */
  async create(q: Queryable, resource: ResourceDescription, input: RecordInput): Promise<WriteResult> {
    const table = this.reader.table(resource.type)
    const values = new Values()
    const set = this.assigned(resource, input, values)
    const checks = this.referenceChecks(resource, input, values)
    const text = `INSERT INTO ${table.name} (${set.map(([column]) => quote(column)).join(', ')})
      SELECT ${set.map(([, param]) => param).join(', ')}${checks.length > 0 ? ` WHERE ${checks.join(' AND ')}` : ''}
      RETURNING ${table.columns}`
    for (let attempt = 1; ; attempt++) {
      const [row] = await this.reader.rows(q, text, values.list)
      if (row) return { ok: true, record: table.toRecord(row) }
      const missing = await this.reader.missing(q, resource, input.toOne)
      if (missing.length > 0) return { ok: false, missing }
      // A reference committed between the two: once more.
      if (attempt === ATTEMPTS) throw new Error(`INSERT INTO ${table.name} returned no row`)
    }
  }

  /**
   * UPDATE … RETURNING of the fields given, when every reference exists: it locks its row and no
   * other (FOR NO KEY UPDATE: books may still be added to an author being renamed). Null when the
   * record does not exist; an input that sets nothing is a plain read.
   */
  async update(q: Queryable, resource: ResourceDescription, id: Id, input: RecordInput): Promise<WriteResult | null> {
    const table = this.reader.table(resource.type)
    const values = new Values()
    const set = this.assigned(resource, input, values)
    const checks = this.referenceChecks(resource, input, values)
    if (set.length === 0) {
      const current = await this.reader.find(q, resource.type, id)
      return current && { ok: true, record: current }
    }
    const text = `UPDATE ${table.name} SET ${set.map(([column, param]) => `${quote(column)} = ${param}`).join(', ')}
      WHERE "id" = ${values.add(id, 'bigint')}${checks.map((check) => ` AND ${check}`).join('')}
      RETURNING ${table.columns}`
    for (let attempt = 1; ; attempt++) {
      const [row] = await this.reader.rows(q, text, values.list)
      if (row) return { ok: true, record: table.toRecord(row) }
      // A record deleted meanwhile is as one that never was: the missing references are not looked at.
      if (checks.length === 0 || !(await this.reader.exists(q, resource.type, id))) return null
      const missing = await this.reader.missing(q, resource, input.toOne)
      if (missing.length > 0) return { ok: false, missing }
      if (attempt === ATTEMPTS) throw new Error(`UPDATE ${table.name} changed no row`)
    }
  }

  /**
   * DELETE … RETURNING when no record that restricts it refers to this one (NOT EXISTS in the same
   * statement); the nullified references are the foreign keys' ON DELETE SET NULL. A record added
   * after the statement's snapshot fails the DELETE's foreign key (23503), and the delete runs
   * again and counts it. Only a delete refused asks whether the record exists, and the count.
   */
  async delete(q: Queryable, resource: ResourceDescription, id: Id): Promise<DeleteResult> {
    const table = this.reader.table(resource.type)
    const restricting = this.registry
      .dependents(resource.type)
      .filter((dependent) => dependent.relationship.onTargetDelete === 'restrict')
      .map(({ resource: by, relationship }) => ({
        by,
        where: `FROM ${quote(by.table)} WHERE ${quote(relationship.column)} = $1::bigint`,
      }))
    const free = restricting.map(({ where }) => ` AND NOT EXISTS (SELECT 1 ${where})`).join('')
    const text = `DELETE FROM ${table.name} WHERE "id" = $1::bigint${free} RETURNING "id"`
    for (let attempt = 1; ; attempt++) {
      if ((await this.reader.rows(q, text, [id])).length > 0) return { status: 'deleted' }
      if (restricting.length === 0 || !(await this.reader.exists(q, resource.type, id))) return { status: 'not-found' }
      for (const { by, where } of restricting) {
        const [row] = await this.reader.rows(q, `SELECT COUNT(*)::int AS count ${where}`, [id])
        const count = Number(row?.count)
        if (count > 0) return { status: 'restricted', by, count }
      }
      // The records that held it back were deleted between the two: once more.
      if (attempt === ATTEMPTS) throw new Error(`DELETE FROM ${table.name} deleted no row`)
    }
  }

  /** Each reference an input sets, as a condition that it exists (false for a required one set to null). */
  private referenceChecks(resource: ResourceDescription, input: RecordInput, values: Values): string[] {
    return this.reader
      .references(resource, input.toOne)
      .map(({ type, id }) =>
        id === null
          ? 'false'
          : `EXISTS (SELECT 1 FROM ${this.reader.table(type).name} WHERE "id" = ${values.add(id, 'bigint')})`,
      )
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
