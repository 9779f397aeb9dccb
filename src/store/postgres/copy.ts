import type { ReservedSQL, SQL } from 'bun'
import type { ResourceDescription } from '../../model/description'
import type { Id, StoredRecord } from '../../model/record'
import type { ResourceRegistry } from '../../resources/registry'
import type { Holdings, RestoreOutcome, TypeTally } from '../catalogue-copy'
import { type CatalogueRestore, type CatalogueSnapshot, compareStored, pagesById } from '../catalogue-copy'
import { quote, type Row } from '../sql/table'
import { storeError } from './faults'
import type { PostgresReader, PostgresTable, Queryable } from './reader'

/** Runs a statement; a fault of the database leaves as StoreUnavailableError. */
async function faulting<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    throw storeError(error)
  }
}

/**
 * The highest id a table's identity sequence has handed out (0 before its first): its last value
 * once called, else one below the value it starts at (migration 7 starts it past the ids before).
 */
async function lastHandedOut(q: Queryable, table: PostgresTable): Promise<number> {
  const [named] = (await q.unsafe(`SELECT pg_get_serial_sequence($1, 'id') AS sequence`, [table.name])) as Row[]
  if (typeof named?.sequence !== 'string') throw new Error(`${table.name}.id has no identity sequence`)
  // The name as PostgreSQL quotes it: safe to write into the statement.
  const [state] = (await q.unsafe(`SELECT last_value, is_called FROM ${named.sequence}`)) as Record<string, unknown>[]
  const last = Number(state?.last_value)
  return state?.is_called === true ? last : last - 1
}

/**
 * The catalogue at one moment: a REPEATABLE READ READ ONLY transaction on a connection held for
 * it, whose snapshot its first statement fixes. Each statement is still held to STATEMENT_TIMEOUT.
 */
export class PostgresSnapshot implements CatalogueSnapshot {
  private constructor(
    private readonly connection: ReservedSQL,
    private readonly reader: PostgresReader,
  ) {}

  static async open(sql: SQL, reader: PostgresReader): Promise<PostgresSnapshot> {
    const connection = await faulting(() => sql.reserve())
    try {
      await faulting(() => connection.unsafe('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY'))
    } catch (error) {
      connection.release()
      throw error
    }
    return new PostgresSnapshot(connection, reader)
  }

  /**
   * The records, and the highest id handed out: the identity sequence's, or a larger id stored by
   * hand. A sequence is outside transactions, so an id handed out after the snapshot may count:
   * a restore then starts past it too, which never hands out an id twice.
   */
  async tally(resource: ResourceDescription): Promise<TypeTally> {
    const table = this.reader.table(resource.type)
    const [row] = (await faulting(() =>
      this.connection.unsafe(`SELECT COUNT(*) AS records, COALESCE(MAX("id"), 0) AS last FROM ${table.name}`),
    )) as Row[]
    const handedOut = await faulting(() => lastHandedOut(this.connection, table))
    return { records: Number(row?.records), lastId: Math.max(Number(row?.last), handedOut) }
  }

  records(resource: ResourceDescription, size: number): AsyncGenerator<readonly StoredRecord[]> {
    const table = this.reader.table(resource.type)
    const sql = `SELECT ${table.columns} FROM ${table.name} WHERE "id" > $1 ORDER BY "id" LIMIT $2`
    return pagesById(size, async (after, limit) => {
      const rows = (await faulting(() => this.connection.unsafe(sql, [after, limit]))) as Row[]
      return rows.map((row) => table.toRecord(row))
    })
  }

  async close(): Promise<void> {
    try {
      await this.connection.unsafe('COMMIT')
      this.connection.release()
    } catch {
      // A connection whose transaction did not end cleanly is not pooled again.
      await this.connection.close().catch(() => {})
    }
  }
}

/** Records written back with their ids, each batch one transaction on the pool. */
export class PostgresRestore implements CatalogueRestore {
  constructor(
    private readonly sql: SQL,
    private readonly reader: PostgresReader,
    private readonly registry: ResourceRegistry,
  ) {}

  holdings(): Promise<Holdings> {
    return faulting(() => this.count(this.sql))
  }

  begin(lastIds: ReadonlyMap<ResourceDescription, Id>, requireEmpty: boolean): Promise<Holdings | null> {
    const tables = this.registry.all.map((resource) => this.reader.table(resource.type).name)
    return faulting(() =>
      this.sql.begin(async (tx) => {
        // SHARE: no insert (and so no id taken) until this commits. A create meanwhile waits, or
        // has committed before the count below sees its record; no id is handed out between the
        // sequence read below and its setval, which could otherwise move it back.
        await tx.unsafe(`LOCK TABLE ${tables.join(', ')} IN SHARE MODE`)
        const held = await this.count(tx)
        if (requireEmpty && [...held.values()].some((records) => records > 0)) return held
        for (const [resource, lastId] of lastIds) {
          const table = this.reader.table(resource.type)
          // Raised, never lowered: setval is not undone by a rollback, and ids are never handed out twice.
          if (lastId > (await lastHandedOut(tx, table))) {
            await tx.unsafe(`SELECT setval(pg_get_serial_sequence($1, 'id'), $2)`, [table.name, lastId])
          }
        }
        return null
      }),
    )
  }

  async compare(resource: ResourceDescription, records: readonly StoredRecord[]) {
    const { present, conflicts } = compareStored(
      records,
      await faulting(() => this.stored(this.sql, resource, records)),
    )
    return { present, conflicts }
  }

  add(resource: ResourceDescription, records: readonly StoredRecord[]): Promise<RestoreOutcome> {
    const table = this.reader.table(resource.type)
    return faulting(() =>
      this.sql.begin(async (tx): Promise<RestoreOutcome> => {
        const { present, conflicts, free } = compareStored(records, await this.stored(tx, resource, records))
        if (conflicts.length > 0) return { ok: false, conflicts }
        if (free.length > 0) {
          // One statement over arrays, a column each: the search totals' triggers run once per statement.
          const columns = table.columnNames()
          const rows = free.map((record) => table.rowOf(record))
          const texts = new Set(Object.values(resource.attributes).map((attribute) => attribute.column))
          const arrays = columns.map((column, i) => `$${i + 1}::${texts.has(column) ? 'text' : 'bigint'}[]`)
          await tx.unsafe(
            `INSERT INTO ${table.name} (${columns.map(quote).join(', ')}) SELECT * FROM unnest(${arrays.join(', ')})`,
            columns.map((_, i) => rows.map((row) => row[i] ?? null)),
          )
        }
        return { ok: true, added: free.length, present }
      }),
    )
  }

  async close(): Promise<void> {}

  /** Every type's count in one statement: one snapshot. */
  private async count(q: Queryable): Promise<Map<ResourceDescription, number>> {
    const counts = this.registry.all.map(
      (resource, i) => `(SELECT COUNT(*) FROM ${this.reader.table(resource.type).name}) AS c${i}`,
    )
    const [row] = (await q.unsafe(`SELECT ${counts.join(', ')}`)) as Row[]
    return new Map(this.registry.all.map((resource, i) => [resource, Number(row?.[`c${i}`])]))
  }

  private async stored(
    q: Queryable,
    resource: ResourceDescription,
    records: readonly StoredRecord[],
  ): Promise<StoredRecord[]> {
    const table: PostgresTable = this.reader.table(resource.type)
    const rows = (await q.unsafe(`SELECT ${table.columns} FROM ${table.name} WHERE "id" = ANY($1::bigint[])`, [
      records.map((record) => record.id),
    ])) as Row[]
    return rows.map((row) => table.toRecord(row))
  }
}
