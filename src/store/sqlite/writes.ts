import type { SQLQueryBindings, Statement } from 'bun:sqlite'
import type { ResourceDescription } from '../../model/description'
import type { Id, StoredRecord } from '../../model/record'
import type {
  AtomicTarget,
  DeleteResult,
  Expectation,
  RecordInput,
  Stale,
  TargetState,
  WriteResult,
} from '../../model/writes'
import type { ResourceRegistry } from '../../resources/registry'
import type { SyncWriter } from '../atomic'
import { quote, type Row } from '../sql/table'
import type { SqliteReader } from './reader'
import type { SqliteVocabulary } from './vocabulary'

/**
 * The SQLite store's writes, each run at once inside the transaction of its group commit
 * (group-commit.ts): what a single write queues, and what an atomic batch runs one after another.
 */
export class SqliteWrites implements SyncWriter {
  constructor(
    /** Every read a write makes, on the writing connection. */
    private readonly local: SqliteReader,
    private readonly registry: ResourceRegistry,
    /** The words written, for the vocabularies (typos forgiven), in the write's own transaction. */
    private readonly vocabulary: SqliteVocabulary,
  ) {}

  create(resource: ResourceDescription, input: RecordInput): WriteResult {
    const table = this.local.table(resource.type)
    const missing = this.local.missing(resource, input.toOne)
    if (missing.length > 0) return { ok: false, missing }
    const set = table.assignments(input)
    const sql =
      set.length === 0
        ? `INSERT INTO ${table.name} DEFAULT VALUES RETURNING ${table.columns}`
        : `INSERT INTO ${table.name} (${set.map(([c]) => quote(c)).join(', ')}) VALUES (${set.map(() => '?').join(', ')}) RETURNING ${table.columns}`
    const row = this.statement(sql).get(...set.map(([, v]) => v)) as Row
    const record = table.toRecord(row)
    this.vocabulary.addRecords(resource, [record])
    return { ok: true, record }
  }

  update(resource: ResourceDescription, id: Id, input: RecordInput): WriteResult | null {
    const table = this.local.table(resource.type)
    const missing = this.local.missing(resource, input.toOne)
    // A record that is not there is reported as such first, whatever it was to refer to.
    if (missing.length > 0) return this.local.exists(resource.type, id) ? { ok: false, missing } : null
    const set = table.assignments(input)
    if (set.length === 0) {
      const current = this.local.find(resource.type, id)
      return current ? { ok: true, record: current } : null
    }
    // The stored values of the searched attributes it gives, where it gives one: their words go into
    // the vocabulary only if they changed. No other read first: the UPDATE returns no row when
    // there is no such record.
    const searched = this.vocabulary.givenColumns(resource, input)
    const before =
      searched === null ? null : this.statement(`SELECT ${searched} FROM ${table.name} WHERE "id" = ?`).get(id)
    const row = this.statement(
      `UPDATE ${table.name} SET ${set.map(([c]) => `${quote(c)} = ?`).join(', ')} WHERE "id" = ? RETURNING ${table.columns}`,
    ).get(...set.map(([, v]) => v), id) as Row | null
    if (!row) return null
    const record = table.toRecord(row)
    if (before) this.vocabulary.addChanged(resource, before, record)
    return { ok: true, record }
  }

  readonly changeToMany: SyncWriter['changeToMany'] = ({ resource, id, relationship, ids, change }) => {
    const inverse = this.registry.inverseOf(resource, relationship)
    const target = this.local.table(resource.relationships[relationship]?.target ?? '')
    const column = quote(inverse.column)
    const members = () =>
      this.statement(`SELECT "id" FROM ${target.name} WHERE ${column} = ? ORDER BY "id"`)
        .values(id)
        .map(([member]) => member as Id)
    if (!this.local.exists(resource.type, id)) return { status: 'not-found' }
    const wanted = JSON.stringify(ids)
    const found = new Set(
      this.statement(`SELECT "id" FROM ${target.name} WHERE "id" IN (SELECT value FROM json_each(?))`)
        .values(wanted)
        .map(([found]) => found as Id),
    )
    const missing = [...new Set(ids)].filter((other) => !found.has(other))
    if (missing.length > 0) return { status: 'missing', ids: missing }
    if (change === 'replace') {
      this.statement(
        `UPDATE ${target.name} SET ${column} = NULL WHERE ${column} = ? AND "id" NOT IN (SELECT value FROM json_each(?))`,
      ).run(id, wanted)
    }
    if (change === 'remove') {
      this.statement(
        `UPDATE ${target.name} SET ${column} = NULL WHERE ${column} = ? AND "id" IN (SELECT value FROM json_each(?))`,
      ).run(id, wanted)
    } else {
      this.statement(`UPDATE ${target.name} SET ${column} = ? WHERE "id" IN (SELECT value FROM json_each(?))`).run(
        id,
        wanted,
      )
    }
    return { status: 'changed', members: members() }
  }

  delete(resource: ResourceDescription, id: Id): DeleteResult {
    const table = this.local.table(resource.type)
    // No read of the record first: a record that is not there has no dependents, and the DELETE
    // then changes nothing.
    for (const dependent of this.registry.dependents(resource.type)) {
      if (dependent.relationship.onTargetDelete !== 'restrict') continue
      const { count } = this.statement(
        `SELECT COUNT(*) AS count FROM ${quote(dependent.resource.table)} WHERE ${quote(dependent.relationship.column)} = ?`,
      ).get(id) as { count: number }
      if (count > 0) return { status: 'restricted', by: dependent.resource, count }
    }
    // Relationships declared `nullify` are cleared by the foreign key's ON DELETE SET NULL.
    const { changes } = this.statement(`DELETE FROM ${table.name} WHERE "id" = ?`).run(id)
    return changes > 0 ? { status: 'deleted' } : { status: 'not-found' }
  }

  /**
   * 'stale' when the record exists and `expect` refuses its state, inside the write's transaction;
   * otherwise undefined and the write goes on (a missing record is reported by the write itself).
   */
  refused(resource: ResourceDescription, id: Id, expect: Expectation<StoredRecord> | undefined): Stale | undefined {
    if (!expect) return undefined
    const current = this.local.find(resource.type, id)
    return current && !expect(current) ? 'stale' : undefined
  }

  /** The same for the members of a to-many relationship, in id order. */
  refusedMembers(
    resource: ResourceDescription,
    id: Id,
    relationship: string,
    expect: Expectation<readonly Id[]> | undefined,
  ): Stale | undefined {
    if (!expect || !this.local.exists(resource.type, id)) return undefined
    const members = this.local.members(resource.type, relationship, [id]).get(id) ?? []
    return expect(members) ? undefined : 'stale'
  }

  /** A conditional atomic batch's target, read in its transaction (SQLite's write lock holds it). */
  read(target: AtomicTarget): TargetState {
    const { resource, id } = target
    if (target.kind === 'record') return this.local.find(resource.type, id)
    if (!this.local.exists(resource.type, id)) return null
    return this.local.members(resource.type, target.relationship, [id]).get(id) ?? []
  }

  private statement(sql: string): Statement<Row, SQLQueryBindings[]> {
    return this.local.statement(sql)
  }
}
