import type { SQL } from 'bun'
import type { ResourceDescription } from '../resources/description'
import type { ResourceRegistry } from '../resources/registry'
import { AtomicAbort, runAtomicAsync, type TransactionWriter } from './atomic'
import { sqlState, storeError } from './postgres-faults'
import type { PostgresReader, Queryable } from './postgres-reader'
import { quote, type Row } from './sqlite-table'
import type {
  AtomicOperation,
  AtomicOutcome,
  DeleteResult,
  Expectation,
  Id,
  RecordInput,
  Stale,
  StoredRecord,
  ToManyChange,
  ToManyResult,
  WriteResult,
} from './store'

/**
 * Why a write runs again from the start: a foreign key its own checks did not see coming (another
 * transaction got in between), or a deadlock (two atomic batches creating in other orders take the
 * tables' id counters in other orders); PostgreSQL rolled the whole transaction back.
 */
const retried = new Set(['23503', '40P01'])

/**
 * The PostgreSQL store's writes (PostgresStore delegates them here): every write one transaction,
 * READ COMMITTED, with the rows it depends on locked; the store's reads stay in postgres.ts.
 */
export class PostgresWrites {
  constructor(
    private readonly sql: SQL,
    private readonly reader: PostgresReader,
    private readonly registry: ResourceRegistry,
  ) {}

  /**
   * One create, in one round trip: BEGIN, the counter's lock, each reference's check (locked FOR
   * KEY SHARE), the INSERT and COMMIT are sent together on a reserved connection, in the one lock
   * order (counters, then records). The counter is held from its lock to the end of the commit, so
   * the creates of a table follow one another: each round trip back to the event loop in that span
   * (two when the statements were awaited one by one) was time every other create waited. The
   * INSERT moves the counter only when every reference exists, so a refused create leaves no gap.
   */
  async create(resource: ResourceDescription, input: RecordInput): Promise<WriteResult> {
    const table = this.reader.table(resource.type)
    const references = this.reader.references(resource, input.toOne)
    const set = table.assignments(input)
    const values: unknown[] = [resource.table, ...set.map(([, v]) => v)]
    const refersTo = references.map(({ type, id }) => {
      if (id === null) return 'false'
      values.push(id)
      return `EXISTS (SELECT 1 FROM ${this.reader.table(type).name} WHERE "id" = $${values.length})`
    })
    const columns = ['"id"', ...set.map(([c]) => quote(c))].join(', ')
    const selected = ['next.last_id', ...set.map((_, i) => `$${i + 2}`)].join(', ')
    const insert = `WITH next AS (
        UPDATE record_ids SET last_id = last_id + 1
          WHERE table_name = $1${refersTo.map((condition) => ` AND ${condition}`).join('')}
          RETURNING last_id)
      INSERT INTO ${table.name} (${columns}) SELECT ${selected} FROM next RETURNING ${table.columns}`
    const answers = await this.retrying(async () => {
      const q = await this.sql.reserve()
      let reusable = true
      try {
        const sent = [
          q.unsafe('BEGIN'),
          q.unsafe('SELECT 1 FROM record_ids WHERE table_name = $1 FOR UPDATE', [resource.table]),
          ...references.map(({ type, id }) =>
            id === null
              ? Promise.resolve([])
              : q.unsafe(`SELECT 1 FROM ${this.reader.table(type).name} WHERE "id" = $1 FOR KEY SHARE`, [id]),
          ),
          q.unsafe(insert, values),
          q.unsafe('COMMIT'),
        ]
        // Every answer is awaited before the connection goes back: after an error PostgreSQL
        // skips the rest of the transaction, and COMMIT rolls it back.
        const settled = await Promise.allSettled(sent)
        const failed = settled.find((outcome) => outcome.status === 'rejected')
        if (failed) throw (failed as PromiseRejectedResult).reason
        return settled.map((outcome) => (outcome as PromiseFulfilledResult<unknown>).value as Row[])
      } catch (error) {
        // Ends a transaction that a statement never sent left open (after an error PostgreSQL
        // skipped the rest and COMMIT rolled back: then this only warns).
        reusable = await q.unsafe('ROLLBACK').then(
          () => true,
          () => false,
        )
        throw error
      } finally {
        // A connection whose state is not known (its ROLLBACK failed) is closed, not pooled.
        if (reusable) q.release()
        else q.close().catch(() => {})
      }
    })
    const [row] = answers[answers.length - 2] ?? []
    if (row) return { ok: true, record: table.toRecord(row) }
    const missing = references.filter((_, i) => (answers[i + 2] ?? []).length === 0).map(({ name }) => name)
    if (missing.length === 0) throw new Error(`INSERT INTO ${table.name} returned no row`)
    return { ok: false, missing }
  }

  /**
   * Locks the id counters of these tables (sorted), before any record: every write takes its locks
   * in that one order (counters, then records), so that no two writes wait for each other.
   */
  private async lockCounters(tx: Queryable, tables: readonly string[]): Promise<void> {
    if (tables.length === 0) return
    await this.reader.rows(
      tx,
      'SELECT 1 FROM record_ids WHERE table_name = ANY($1::text[]) ORDER BY table_name FOR UPDATE',
      [tables],
    )
  }

  update(resource: ResourceDescription, id: Id, input: RecordInput): Promise<WriteResult | null>
  update(
    resource: ResourceDescription,
    id: Id,
    input: RecordInput,
    expect: Expectation<StoredRecord> | undefined,
  ): Promise<WriteResult | null | Stale>
  update(
    resource: ResourceDescription,
    id: Id,
    input: RecordInput,
    expect?: Expectation<StoredRecord>,
  ): Promise<WriteResult | null | Stale> {
    return this.write(async (tx) => {
      // Locked: of two conditional writers expecting the same state, the second sees the first's.
      const current = await this.reader.find(tx, resource.type, id, ' FOR UPDATE')
      if (!current) return null
      if (expect && !expect(current)) return 'stale'
      return this.updateNow(tx, resource, current, input)
    })
  }

  changeToMany(
    resource: ResourceDescription,
    id: Id,
    relationship: string,
    ids: readonly Id[],
    change: ToManyChange,
  ): Promise<ToManyResult>
  changeToMany(
    resource: ResourceDescription,
    id: Id,
    relationship: string,
    ids: readonly Id[],
    change: ToManyChange,
    expect: Expectation<readonly Id[]> | undefined,
  ): Promise<ToManyResult | Stale>
  changeToMany(
    resource: ResourceDescription,
    id: Id,
    relationship: string,
    ids: readonly Id[],
    change: ToManyChange,
    expect?: Expectation<readonly Id[]>,
  ): Promise<ToManyResult | Stale> {
    return this.write(async (tx) => {
      // The owner locked: two changes of its members run one after the other.
      if (!(await this.reader.exists(tx, resource.type, id, ' FOR UPDATE'))) return { status: 'not-found' }
      if (expect) {
        const members = (await this.reader.members(tx, resource.type, relationship, [id])).get(id) ?? []
        if (!expect(members)) return 'stale'
      }
      return this.changeToManyNow(tx, resource, id, relationship, ids, change)
    })
  }

  delete(resource: ResourceDescription, id: Id): Promise<DeleteResult>
  delete(
    resource: ResourceDescription,
    id: Id,
    expect: Expectation<StoredRecord> | undefined,
  ): Promise<DeleteResult | Stale>
  delete(resource: ResourceDescription, id: Id, expect?: Expectation<StoredRecord>): Promise<DeleteResult | Stale> {
    return this.write(async (tx) => {
      const current = await this.reader.find(tx, resource.type, id, ' FOR UPDATE')
      if (!current) return { status: 'not-found' }
      if (expect && !expect(current)) return 'stale'
      return this.deleteNow(tx, resource, id)
    })
  }

  async atomic(operations: readonly AtomicOperation[]): Promise<AtomicOutcome> {
    try {
      // One transaction: an AtomicAbort thrown by the runner rolls every operation back.
      const created = [...new Set(operations.flatMap((op) => (op.kind === 'create' ? [op.resource.table] : [])))].sort()
      const results = await this.write(async (tx) => {
        // The id counters the batch will move, locked at once in one order: two batches creating
        // in opposite orders would otherwise each hold the counter the other waits for.
        await this.lockCounters(tx, created)
        return runAtomicAsync(operations, this.writerIn(tx))
      })
      return { ok: true, results }
    } catch (error) {
      if (error instanceof AtomicAbort) return { ok: false, index: error.index, failure: error.failure }
      throw error
    }
  }

  /** The writes of an atomic batch, each in the batch's one transaction. */
  private writerIn(tx: Queryable): TransactionWriter {
    return {
      create: (resource, input) => this.createNow(tx, resource, input),
      update: async (resource, id, input) => {
        const current = await this.reader.find(tx, resource.type, id, ' FOR UPDATE')
        return current && this.updateNow(tx, resource, current, input)
      },
      delete: async (resource, id) =>
        (await this.reader.exists(tx, resource.type, id, ' FOR UPDATE'))
          ? this.deleteNow(tx, resource, id)
          : { status: 'not-found' },
      changeToMany: async (resource, id, relationship, ids, change) =>
        (await this.reader.exists(tx, resource.type, id, ' FOR UPDATE'))
          ? this.changeToManyNow(tx, resource, id, relationship, ids, change)
          : { status: 'not-found' },
    }
  }

  /** A create within an atomic batch, whose counters are already locked. */
  private async createNow(tx: Queryable, resource: ResourceDescription, input: RecordInput): Promise<WriteResult> {
    const table = this.reader.table(resource.type)
    // FOR KEY SHARE: the records referred to cannot be deleted before this write commits.
    const missing = await this.reader.missing(tx, resource, input.toOne, ' FOR KEY SHARE')
    if (missing.length > 0) return { ok: false, missing }
    const set = table.assignments(input)
    // The next id, from the table's counter row (see the migrations): locked until this commits.
    const columns = ['"id"', ...set.map(([c]) => quote(c))].join(', ')
    const values = ['(SELECT last_id FROM next)', ...set.map((_, i) => `$${i + 2}`)].join(', ')
    const [row] = await this.reader.rows(
      tx,
      `WITH next AS (UPDATE record_ids SET last_id = last_id + 1 WHERE table_name = $1 RETURNING last_id)
        INSERT INTO ${table.name} (${columns}) VALUES (${values}) RETURNING ${table.columns}`,
      [resource.table, ...set.map(([, v]) => v)],
    )
    if (!row) throw new Error(`INSERT INTO ${table.name} returned no row`)
    return { ok: true, record: table.toRecord(row) }
  }

  private async updateNow(
    tx: Queryable,
    resource: ResourceDescription,
    current: StoredRecord,
    input: RecordInput,
  ): Promise<WriteResult> {
    const table = this.reader.table(resource.type)
    const missing = await this.reader.missing(tx, resource, input.toOne, ' FOR KEY SHARE')
    if (missing.length > 0) return { ok: false, missing }
    const set = table.assignments(input)
    if (set.length === 0) return { ok: true, record: current }
    const [row] = await this.reader.rows(
      tx,
      `UPDATE ${table.name} SET ${set.map(([c], i) => `${quote(c)} = $${i + 1}`).join(', ')} WHERE "id" = $${set.length + 1} RETURNING ${table.columns}`,
      [...set.map(([, v]) => v), current.id],
    )
    if (!row) throw new Error(`UPDATE ${table.name} returned no row`)
    return { ok: true, record: table.toRecord(row) }
  }

  private async changeToManyNow(
    tx: Queryable,
    resource: ResourceDescription,
    id: Id,
    relationship: string,
    ids: readonly Id[],
    change: ToManyChange,
  ): Promise<ToManyResult> {
    const inverse = this.registry.inverseOf(resource, relationship)
    const target = this.reader.table(resource.relationships[relationship]?.target ?? '')
    const column = quote(inverse.column)
    const wanted = [...new Set(ids)]
    const found = new Set(
      (
        await this.reader.rows(tx, `SELECT "id" FROM ${target.name} WHERE "id" = ANY($1::bigint[]) FOR UPDATE`, [
          wanted,
        ])
      ).map((row) => Number(row.id)),
    )
    const missing = wanted.filter((other) => !found.has(other))
    if (missing.length > 0) return { status: 'missing', ids: missing }
    if (change === 'replace') {
      await this.reader.rows(
        tx,
        `UPDATE ${target.name} SET ${column} = NULL WHERE ${column} = $1 AND NOT ("id" = ANY($2::bigint[]))`,
        [id, wanted],
      )
    }
    if (change === 'remove') {
      await this.reader.rows(
        tx,
        `UPDATE ${target.name} SET ${column} = NULL WHERE ${column} = $1 AND "id" = ANY($2::bigint[])`,
        [id, wanted],
      )
    } else {
      await this.reader.rows(tx, `UPDATE ${target.name} SET ${column} = $1 WHERE "id" = ANY($2::bigint[])`, [
        id,
        wanted,
      ])
    }
    const rows = await this.reader.rows(tx, `SELECT "id" FROM ${target.name} WHERE ${column} = $1 ORDER BY "id"`, [id])
    return { status: 'changed', members: rows.map((row) => Number(row.id)) }
  }

  private async deleteNow(tx: Queryable, resource: ResourceDescription, id: Id): Promise<DeleteResult> {
    const table = this.reader.table(resource.type)
    for (const dependent of this.registry.dependents(resource.type)) {
      if (dependent.relationship.onTargetDelete !== 'restrict') continue
      const [row] = await this.reader.rows(
        tx,
        `SELECT COUNT(*)::int AS count FROM ${quote(dependent.resource.table)} WHERE ${quote(dependent.relationship.column)} = $1`,
        [id],
      )
      const count = Number(row?.count)
      if (count > 0) return { status: 'restricted', by: dependent.resource, count }
    }
    // Relationships declared `nullify` are cleared by the foreign key's ON DELETE SET NULL.
    await this.reader.rows(tx, `DELETE FROM ${table.name} WHERE "id" = $1`, [id])
    return { status: 'deleted' }
  }

  /**
   * Runs `work` in one transaction; see `retried`. A foreign key violation means another transaction changed
   * what the write's own checks read (a book added to the author being deleted, say, between the
   * count and the DELETE): the write runs once more, and its checks then see that change and
   * answer as the service does (restricted, missing), never a 500.
   */
  private write<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.retrying(() => this.sql.begin((tx) => work(tx)))
  }

  /** Runs `attempt` again after an error in `retried`, three times in all; a fault leaves as StoreUnavailableError. */
  private async retrying<T>(attempt: () => Promise<T>): Promise<T> {
    for (let n = 1; ; n++) {
      try {
        return await attempt()
      } catch (error) {
        if (n < 3 && retried.has(sqlState(error) ?? '')) continue
        throw storeError(error)
      }
    }
  }
}
