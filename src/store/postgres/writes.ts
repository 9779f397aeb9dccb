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
import { sqlState, storeError } from './faults'
import type { PostgresReader, Queryable } from './reader'
import { PostgresWriteStatements } from './write-statements'

/**
 * Why a write runs again from the start: a foreign key its own checks did not see coming (another
 * transaction changed a reference between the statement's snapshot and its write), or a deadlock
 * (two atomic batches, or a collection's delete and a book's move into it, locking rows in other
 * orders), or the change feed's order check (a younger transaction committed a change to a row
 * this one then changed: postgres/feed-ddl.ts); PostgreSQL rolled the statement or the whole
 * transaction back.
 */
const retried = new Set(['23503', '40P01', '40001'])

/**
 * The PostgreSQL store's writes (PostgresStore delegates them here). A create, an update and a
 * delete are one statement each on the pool (postgres/write-statements.ts): no lock but the
 * foreign keys' on what they refer to and the row they change, held only for that statement's
 * transaction. A write with an expectation, a to-many change and an atomic batch are one READ
 * COMMITTED transaction, with the rows they read before writing locked; the store's reads stay in
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
    return this.retrying(() => this.statements.create(this.sql, resource, input))
  }

  /** Unconditional: one statement on the pool; with `expect`, a transaction that locks the row first. */
  update(
    resource: ResourceDescription,
    id: Id,
    input: RecordInput,
    expect?: Expectation<StoredRecord>,
  ): Promise<WriteResult | null | Stale> {
    if (!expect) return this.retrying(() => this.statements.update(this.sql, resource, id, input))
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
      // The owner locked: two changes of its members run one after the other, and a record added
      // to it meanwhile (its foreign key's FOR KEY SHARE) waits, so the members answered are the change's.
      if (!(await this.reader.exists(tx, resource.type, id, ' FOR UPDATE'))) return { status: 'not-found' }
      if (expect) {
        const members = (await this.reader.members(tx, resource.type, relationship, [id])).get(id) ?? []
        if (!expect(members)) return 'stale'
      }
      return this.changeToManyNow(tx, request)
    })
  }

  delete(resource: ResourceDescription, id: Id, expect?: Expectation<StoredRecord>): Promise<DeleteResult | Stale> {
    if (!expect) return this.retrying(() => this.statements.delete(this.sql, resource, id))
    return this.write(async (tx) => {
      const current = await this.reader.find(tx, resource.type, id, ' FOR UPDATE')
      if (!current) return { status: 'not-found' }
      if (!expect(current)) return 'stale'
      return this.statements.delete(tx, resource, id)
    })
  }

  async atomic(operations: readonly AtomicOperation[], options?: AtomicOptions): Promise<AtomicOutcome | Stale> {
    try {
      // One transaction: an AtomicAbort thrown by the runner rolls every operation back (the ids
      // its creates took are not given back: a gap).
      const results = await this.write((tx) => runAtomicAsync(operations, this.writerIn(tx), options))
      if (results === 'stale') return results
      return { ok: true, results }
    } catch (error) {
      if (error instanceof AtomicAbort) return { ok: false, index: error.index, failure: error.failure }
      throw error
    }
  }

  /**
   * The writes of an atomic batch, each in the batch's one transaction and each locking only what
   * it writes (and, for a to-many change, its owner), as the same writes alone do.
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

  private async changeToManyNow(tx: Queryable, request: ToManyRequest): Promise<ToManyResult> {
    const { resource, id, relationship, ids, change } = request
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
