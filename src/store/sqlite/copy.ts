import type { Database } from 'bun:sqlite'
import type { ResourceDescription } from '../../model/description'
import type { Id, StoredRecord } from '../../model/record'
import type { ResourceRegistry } from '../../resources/registry'
import type { Holdings, RestoreOutcome, TypeTally } from '../catalogue-copy'
import { type CatalogueRestore, type CatalogueSnapshot, compareStored, pagesById } from '../catalogue-copy'
import { quote, type Row, type Table } from '../sql/table'
import { SqliteVocabulary } from './vocabulary'

/** What the SQLite store lends the snapshot and the restore: its connection and its way to read and write on it. */
export interface SqliteAccess {
  readonly db: Database
  readonly registry: ResourceRegistry
  table(type: string): Table
  /** A read, tried again while SQLite answers busy. */
  read<T>(work: () => T): Promise<T>
  /** A write in the store's queue: one transaction, committed before it resolves. */
  write<T>(work: () => T): Promise<T>
}

/** The highest id AUTOINCREMENT handed out to the table (sqlite_sequence), or its highest id if more. */
const lastIdSql = (table: Table) =>
  `SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = ?), 0), COALESCE((SELECT MAX("id") FROM ${table.name}), 0)) AS last`

/**
 * The catalogue at one moment, read on the store's own connection inside one read transaction
 * (BEGIN, then every read sees the WAL snapshot of the first). The store takes no write while it
 * is open (a write would end the transaction).
 */
export class SqliteSnapshot implements CatalogueSnapshot {
  private constructor(
    private readonly access: SqliteAccess,
    private readonly done: () => void,
  ) {}

  static async open(access: SqliteAccess, done: () => void): Promise<SqliteSnapshot> {
    access.db.run('BEGIN DEFERRED')
    const snapshot = new SqliteSnapshot(access, done)
    try {
      // The first read fixes the snapshot every later one sees.
      await access.read(() => access.db.query('SELECT COUNT(*) FROM sqlite_master').get())
    } catch (error) {
      await snapshot.close()
      throw error
    }
    return snapshot
  }

  tally(resource: ResourceDescription): Promise<TypeTally> {
    const table = this.access.table(resource.type)
    return this.access.read(() => {
      const { records } = this.access.db.query(`SELECT COUNT(*) AS records FROM ${table.name}`).get() as {
        records: number
      }
      const { last } = this.access.db.query(lastIdSql(table)).get(resource.table) as { last: number }
      return { records, lastId: last }
    })
  }

  records(resource: ResourceDescription, size: number): AsyncGenerator<readonly StoredRecord[]> {
    const table = this.access.table(resource.type)
    const page = this.access.db.query<Row, [number, number]>(
      `SELECT ${table.columns} FROM ${table.name} WHERE "id" > ? ORDER BY "id" LIMIT ?`,
    )
    return pagesById(size, async (after, limit) => {
      const rows = await this.access.read(() => page.all(after, limit))
      return rows.map((row) => table.toRecord(row))
    })
  }

  async close(): Promise<void> {
    try {
      if (this.access.db.inTransaction) this.access.db.run('COMMIT')
    } finally {
      this.done()
    }
  }
}

/** Records written back with their ids, each batch one transaction of the store's write queue. */
export class SqliteRestore implements CatalogueRestore {
  constructor(private readonly access: SqliteAccess) {}

  holdings(): Promise<Holdings> {
    return this.access.read(() => this.count())
  }

  begin(lastIds: ReadonlyMap<ResourceDescription, Id>, requireEmpty: boolean): Promise<Holdings | null> {
    const { db } = this.access
    return this.access.write(() => {
      const held = this.count()
      if (requireEmpty && [...held.values()].some((records) => records > 0)) return held
      for (const [resource, lastId] of lastIds) {
        // AUTOINCREMENT hands out the id after the larger of this and the table's highest.
        db.query(
          'INSERT INTO sqlite_sequence (name, seq) SELECT ?1, 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?1)',
        ).run(resource.table)
        db.query('UPDATE sqlite_sequence SET seq = MAX(seq, ?2) WHERE name = ?1').run(resource.table, lastId)
      }
      return null
    })
  }

  compare(resource: ResourceDescription, records: readonly StoredRecord[]) {
    return this.access.read(() => {
      const { present, conflicts } = compareStored(records, this.stored(resource, records))
      return { present, conflicts }
    })
  }

  add(resource: ResourceDescription, records: readonly StoredRecord[]): Promise<RestoreOutcome> {
    const table = this.access.table(resource.type)
    return this.access.write((): RestoreOutcome => {
      const { present, conflicts, free } = compareStored(records, this.stored(resource, records))
      if (conflicts.length > 0) return { ok: false, conflicts }
      if (free.length > 0) {
        // One INSERT ... SELECT for the batch: FTS5 flushes its index once per statement.
        const columns = table.columnNames()
        const values = columns.map((_, i) => `value ->> ${i}`).join(', ')
        this.access.db
          .query(`INSERT INTO ${table.name} (${columns.map(quote).join(', ')}) SELECT ${values} FROM json_each(?)`)
          .run(JSON.stringify(free.map((record) => table.rowOf(record))))
        new SqliteVocabulary(this.access.db).addRecords(resource, free)
      }
      return { ok: true, added: free.length, present }
    })
  }

  async close(): Promise<void> {}

  private count(): Map<ResourceDescription, number> {
    const held = new Map<ResourceDescription, number>()
    for (const resource of this.access.registry.all) {
      const table = this.access.table(resource.type)
      const row = this.access.db.query(`SELECT COUNT(*) AS records FROM ${table.name}`).get() as { records: number }
      held.set(resource, row.records)
    }
    return held
  }

  private stored(resource: ResourceDescription, records: readonly StoredRecord[]): StoredRecord[] {
    const table = this.access.table(resource.type)
    const rows = this.access.db
      .query<Row, [string]>(`SELECT ${table.columns} FROM ${table.name} WHERE "id" IN (SELECT value FROM json_each(?))`)
      .all(JSON.stringify(records.map((record) => record.id)))
    return rows.map((row) => table.toRecord(row))
  }
}
