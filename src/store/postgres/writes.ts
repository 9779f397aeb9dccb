import type { SQL } from 'bun'
import type { ResourceDescription } from '../../model/description'
import type { Id, StoredRecord } from '../../model/record'
import type {
  AtomicOperation,
  AtomicOptions,
  AtomicOutcome,
  AtomicTarget,
  DeleteResult,
  Expectation,
  RecordInput,
  Stale,
  TargetState,
  ToManyResult,
  WriteResult,
} from '../../model/writes'
import type { ResourceRegistry } from '../../resources/registry'
import { AtomicAbort, runAtomicAsync, type ToManyRequest, type TransactionWriter } from '../atomic'
import { quote } from '../sql/table'
import { LockPlan } from './lock-order'
import type { PostgresReader, Queryable } from './reader'
import { retrying } from './retries'
import { PostgresWriteStatements } from './write-statements'

/**
 * The PostgreSQL store's writes (PostgresStore delegates them here). A create, an update and a
 * delete are one statement each on the pool (postgres/write-statements.ts): no lock but the
 * foreign keys' on what they refer to and the row they change, held only for that statement's
 * transaction. A write with an expectation, a to-many change, a delete that sets other records'
 * references to null and an atomic batch are one READ COMMITTED transaction, with the rows they
 * read or change locked first, in the one order of postgres/lock-order.ts. Each runs again, from
 * the start, when PostgreSQL asks (postgres/retries.ts). The store's reads stay in
 * postgres/postgres-store.ts.
 */
export class PostgresWrites {
  private readonly statements: PostgresWriteStatements

  constructor(
    private readonly sql: SQL,
    private readonly reader: PostgresReader,
    private readonly registry: ResourceRegistry,
  ) {
    this.statements = new PostgresWriteStatements(reader, registry)
  }

  /** One statement, one round trip: the id from the table's identity sequence, no lock of its own. */
  create(resource: ResourceDescription, input: RecordInput): Promise<WriteResult> {
    return retrying(() => this.statements.create(this.sql, resource, input))
  }

  /** Unconditional: one statement on the pool; with `expect`, a transaction that locks the row first. */
  update(
    resource: ResourceDescription,
    id: Id,
    input: RecordInput,
    expect?: Expectation<StoredRecord>,
  ): Promise<WriteResult | null | Stale> {
    if (!expect) return retrying(() => this.statements.update(this.sql, resource, id, input))
    return this.write(async (tx) => {
      // Locked as the UPDATE would lock it: of two conditional writers expecting the same state,
      // the second sees the first's.
      const current = await this.reader.find(tx, resource.type, id, ' FOR NO KEY UPDATE')
      if (!current) return null
      if (!expect(current)) return 'stale'
      return this.statements.update(tx, resource, id, input)
    })
  }

  changeToMany(request: ToManyRequest, expect?: Expectation<readonly Id[]>): Promise<ToManyResult | Stale> {
    const { resource, id, relationship } = request
    return this.write(async (tx) => {
      // The records named and the members a replace may drop, then the owner (lock-order.ts): no
      // record joins the owner until this commits (a foreign key's FOR KEY SHARE waits for the
      // owner's FOR UPDATE), so the members answered are the change's.
      const found = await this.lockPlan().toMany(request).take(tx)
      if (!found.get(resource.type)?.has(id)) return { status: 'not-found' }
      if (expect) {
        const members = (await this.reader.members(tx, resource.type, relationship, [id])).get(id) ?? []
        if (!expect(members)) return 'stale'
      }
      return this.changeToManyNow(tx, request, found)
    })
  }

  delete(resource: ResourceDescription, id: Id, expect?: Expectation<StoredRecord>): Promise<DeleteResult | Stale> {
    // A delete that sets other records' references to null (a collection's books) locks them
    // first: its foreign key would lock them after the record, the other way round from a book's
    // own update (its row, then the collection it joins).
    const nullifies = this.registry
      .dependents(resource.type)
      .some(({ relationship }) => relationship.onTargetDelete === 'nullify')
    if (!expect && !nullifies) return retrying(() => this.statements.delete(this.sql, resource, id))
    return this.write(async (tx) => {
      await this.lockPlan().delete(resource, id).take(tx)
      if (expect) {
        const current = await this.reader.find(tx, resource.type, id)
        if (!current) return { status: 'not-found' }
        if (!expect(current)) return 'stale'
      }
      return this.statements.delete(tx, resource, id)
    })
  }

  async atomic(operations: readonly AtomicOperation[], options?: AtomicOptions): Promise<AtomicOutcome | Stale> {
    try {
      // One transaction: an AtomicAbort thrown by the runner rolls every operation back (the ids
      // its creates took are not given back: a gap).
      const results = await this.write(async (tx) => {
        // Every row the batch names by id, locked first in the one order (lock-order.ts): two
        // batches naming the same rows in other orders wait for each other rather than deadlock.
        await this.lockPlan().batch(operations).take(tx)
        return runAtomicAsync(operations, this.writerIn(tx), options)
      })
      if (results === 'stale') return results
      return { ok: true, results }
    } catch (error) {
      if (error instanceof AtomicAbort) return { ok: false, index: error.index, failure: error.failure }
      throw error
    }
  }

  /**
   * The writes of an atomic batch, each in the batch's one transaction, which locked first every
   * row they name by id; each locks what it writes as the same write alone does (already held,
   * but for the records the batch made).
   */
  private writerIn(tx: Queryable): TransactionWriter {
    return {
      create: (resource, input) => this.statements.create(tx, resource, input),
      update: (resource, id, input) => this.statements.update(tx, resource, id, input),
      delete: (resource, id) => this.statements.delete(tx, resource, id),
      changeToMany: async (request) =>
        (await this.reader.exists(tx, request.resource.type, request.id, ' FOR UPDATE'))
          ? this.changeToManyNow(tx, request)
          : { status: 'not-found' },
      read: (target) => this.readTarget(tx, target),
    }
  }

  /**
   * A conditional batch's target, locked as the conditional write of it alone locks it (update,
   * delete, changeToMany above): of two batches expecting the same state, the second waits for
   * the first and then sees its change.
   */
  private async readTarget(tx: Queryable, target: AtomicTarget): Promise<TargetState> {
    const { resource, id } = target
    if (target.kind === 'record') {
      return this.reader.find(tx, resource.type, id, target.removing ? ' FOR UPDATE' : ' FOR NO KEY UPDATE')
    }
    if (!(await this.reader.exists(tx, resource.type, id, ' FOR UPDATE'))) return null
    return (await this.reader.members(tx, resource.type, target.relationship, [id])).get(id) ?? []
  }

  private lockPlan(): LockPlan {
    return new LockPlan(this.reader, this.registry)
  }

  /**
   * The change itself, its owner locked; `found`: the rows the write locked first (LockPlan),
   * else (in an atomic batch, whose members may be records it made) the records named are locked here.
   */
  private async changeToManyNow(
    tx: Queryable,
    request: ToManyRequest,
    found?: ReadonlyMap<string, ReadonlySet<Id>>,
  ): Promise<ToManyResult> {
    const { resource, id, relationship, ids, change } = request
    const inverse = this.registry.inverseOf(resource, relationship)
    const targetType = resource.relationships[relationship]?.target ?? ''
    const target = this.reader.table(targetType)
    const column = quote(inverse.column)
    const wanted = [...new Set(ids)]
    const locked =
      found?.get(targetType) ??
      new Set(
        (
          await this.reader.rows(
            tx,
            `SELECT "id" FROM ${target.name} WHERE "id" = ANY($1::bigint[]) ORDER BY "id" FOR NO KEY UPDATE`,
            [wanted],
          )
        ).map((row) => Number(row.id)),
      )
    const missing = wanted.filter((other) => !locked.has(other))
    if (missing.length > 0) return { status: 'missing', ids: missing }
    if (change === 'replace') {
      // Members a younger transaction wrote (a book that joined while this waited for a lock) stay:
      // the replace counts as before their write, as the feed's order has it. Dropping them would
      // change a row after a younger transaction did, which the feed's order check refuses (40001),
      // and every run again could meet the same while books keep joining. age() < 0: younger.
      await this.reader.rows(
        tx,
        `UPDATE ${target.name} SET ${column} = NULL WHERE ${column} = $1 AND NOT ("id" = ANY($2::bigint[])) AND age(xmin) >= 0`,
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

  /** Runs `work` in one transaction, again from the start when PostgreSQL asks (postgres/retries.ts). */
  private write<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    return retrying(() => this.sql.begin((tx) => work(tx)))
  }
}
