import { Database, type SQLQueryBindings, type Statement } from 'bun:sqlite'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import type { ResourceDescription, ToOneRelationship } from '../resources/description'
import type { ResourceRegistry } from '../resources/registry'
import { type Migration, sqliteMigrations } from './sqlite-migrations'
import type {
  DeleteResult,
  Id,
  ListFilter,
  ListPage,
  RecordInput,
  RecordWithRelated,
  Store,
  StoredRecord,
  WriteResult,
} from './store'

type Row = Record<string, string | number | null>
type Bindings = SQLQueryBindings[]

/** The SQL of one resource's table, derived from its description and prepared once. */
class Table {
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
    this.columns = ['id', ...this.attributes.map(([, c]) => c), ...this.toOne.map(([, r]) => r.column)]
      .map(quote)
      .join(', ')
    this.findSql = `SELECT ${this.columns} FROM ${this.name} WHERE "id" = ?`
    this.existsSql = `SELECT 1 AS found FROM ${this.name} WHERE "id" = ?`
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
}

function quote(identifier: string): string {
  return `"${identifier.replaceAll('"', '""')}"`
}

interface PendingWrite {
  readonly work: () => unknown
  readonly resolve: (value: unknown) => void
  readonly reject: (error: unknown) => void
}

/** The embedded default store: one SQLite file in WAL mode, foreign keys on, every write one transaction. */
export class SqliteStore implements Store {
  private readonly tables = new Map<string, Table>()
  // Prepared once: bun:sqlite's db.transaction() builds a new wrapper on every call, which costs
  // more than the reads of a single GET.
  private readonly beginRead: Statement
  private readonly beginWrite: Statement
  private readonly commit: Statement
  private readonly rollback: Statement
  private readonly savepoint: Record<'open' | 'release' | 'undo', Statement>
  /** Writes waiting for the next group commit. */
  private pending: PendingWrite[] = []
  private commitScheduled = false

  private constructor(
    private readonly db: Database,
    private readonly registry: ResourceRegistry,
  ) {
    for (const resource of registry.all) this.tables.set(resource.type, new Table(resource))
    // A write takes the write lock up front so that its reads and its writes see one state.
    this.beginRead = db.prepare('BEGIN DEFERRED')
    this.beginWrite = db.prepare('BEGIN IMMEDIATE')
    this.commit = db.prepare('COMMIT')
    this.rollback = db.prepare('ROLLBACK')
    this.savepoint = {
      open: db.prepare('SAVEPOINT one_write'),
      release: db.prepare('RELEASE one_write'),
      undo: db.prepare('ROLLBACK TO one_write'),
    }
  }

  /** Opens (creating it and its folder if needed) and migrates the database at `path` or `:memory:`. */
  static open(path: string, registry: ResourceRegistry, migrations = sqliteMigrations): SqliteStore {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
    const db = new Database(path, { create: true, strict: true })
    db.run('PRAGMA journal_mode = WAL')
    // FULL: a commit reaches the disk before the 2xx goes out, so it survives a crash or power loss.
    db.run('PRAGMA synchronous = FULL')
    db.run('PRAGMA foreign_keys = ON')
    db.run('PRAGMA busy_timeout = 5000')
    migrate(db, migrations)
    return new SqliteStore(db, registry)
  }

  async list(resource: ResourceDescription, filter: ListFilter, page: ListPage): Promise<StoredRecord[]> {
    const table = this.table(resource)
    const names = Object.keys(filter).sort()
    const where = ['"id" > ?', ...names.map((name) => `${table.column(name)} = ?`)].join(' AND ')
    const rows = this.statement(`SELECT ${table.columns} FROM ${table.name} WHERE ${where} ORDER BY "id" LIMIT ?`).all(
      page.afterId,
      ...names.map((name) => filter[name] as Id),
      page.limit,
    )
    return rows.map((row) => table.toRecord(row))
  }

  async find(resource: ResourceDescription, id: Id): Promise<StoredRecord | null> {
    return this.findNow(this.table(resource), id)
  }

  async findRelated(resource: ResourceDescription, id: Id, relationship: string): Promise<StoredRecord[]> {
    return this.relatedNow(resource, id, relationship)
  }

  async findWithRelated(
    resource: ResourceDescription,
    id: Id,
    relationships: readonly string[],
  ): Promise<RecordWithRelated | null> {
    const table = this.table(resource)
    // One read transaction: a consistent snapshot, and one WAL read lock instead of one per query.
    return this.readSnapshot((): RecordWithRelated | null => {
      const record = this.findNow(table, id)
      if (!record) return null
      const related: Record<string, StoredRecord[]> = {}
      for (const name of relationships) {
        const relationship = resource.relationships[name]
        if (relationship?.kind === 'to-many') {
          related[name] = this.relatedNow(resource, id, name)
        } else if (relationship) {
          const targetId = record.toOne[name]
          const found =
            targetId == null ? null : this.findNow(this.table(this.registry.get(relationship.target)), targetId)
          related[name] = found ? [found] : []
        }
      }
      return { record, related }
    })
  }

  async missingReferences(resource: ResourceDescription, toOne: RecordInput['toOne']): Promise<string[]> {
    return this.missingNow(resource, toOne)
  }

  async create(resource: ResourceDescription, input: RecordInput): Promise<WriteResult> {
    const table = this.table(resource)
    return this.write((): WriteResult => {
      const missing = this.missingNow(resource, input.toOne)
      if (missing.length > 0) return { ok: false, missing }
      const set = table.assignments(input)
      const sql =
        set.length === 0
          ? `INSERT INTO ${table.name} DEFAULT VALUES RETURNING ${table.columns}`
          : `INSERT INTO ${table.name} (${set.map(([c]) => quote(c)).join(', ')}) VALUES (${set.map(() => '?').join(', ')}) RETURNING ${table.columns}`
      const row = this.statement(sql).get(...set.map(([, v]) => v)) as Row
      return { ok: true, record: table.toRecord(row) }
    })
  }

  async update(resource: ResourceDescription, id: Id, input: RecordInput): Promise<WriteResult | null> {
    const table = this.table(resource)
    return this.write((): WriteResult | null => {
      const current = this.findNow(table, id)
      if (!current) return null
      const missing = this.missingNow(resource, input.toOne)
      if (missing.length > 0) return { ok: false, missing }
      const set = table.assignments(input)
      if (set.length === 0) return { ok: true, record: current }
      const row = this.statement(
        `UPDATE ${table.name} SET ${set.map(([c]) => `${quote(c)} = ?`).join(', ')} WHERE "id" = ? RETURNING ${table.columns}`,
      ).get(...set.map(([, v]) => v), id) as Row
      return { ok: true, record: table.toRecord(row) }
    })
  }

  async delete(resource: ResourceDescription, id: Id): Promise<DeleteResult> {
    const table = this.table(resource)
    return this.write((): DeleteResult => {
      if (!this.existsNow(table, id)) return { status: 'not-found' }
      for (const dependent of this.registry.dependents(resource.type)) {
        if (dependent.relationship.onTargetDelete !== 'restrict') continue
        const { count } = this.statement(
          `SELECT COUNT(*) AS count FROM ${quote(dependent.resource.table)} WHERE ${quote(dependent.relationship.column)} = ?`,
        ).get(id) as { count: number }
        if (count > 0) return { status: 'restricted', by: dependent.resource, count }
      }
      // Relationships declared `nullify` are cleared by the foreign key's ON DELETE SET NULL.
      this.statement(`DELETE FROM ${table.name} WHERE "id" = ?`).run(id)
      return { status: 'deleted' }
    })
  }

  /** Commits what is pending and closes; with every statement finalized SQLite checkpoints the WAL into the file. */
  async close(): Promise<void> {
    if (this.pending.length > 0) this.commitPending()
    const prepared = [this.beginRead, this.beginWrite, this.commit, this.rollback, ...Object.values(this.savepoint)]
    for (const statement of prepared) statement.finalize()
    this.db.close(true)
  }

  /**
   * Group commit: the writes that arrive in one event-loop turn run in one transaction, each in
   * its own savepoint, and are answered after the single COMMIT has reached the disk. With
   * synchronous=FULL every commit waits for the disk, so concurrent writers share that wait
   * instead of queueing for one each. A write that throws is undone alone.
   */
  private write<T>(work: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ work, resolve: resolve as (value: unknown) => void, reject })
      if (!this.commitScheduled) {
        this.commitScheduled = true
        setImmediate(() => this.commitPending())
      }
    })
  }

  private commitPending(): void {
    this.commitScheduled = false
    const batch = this.pending
    // Already committed by close().
    if (batch.length === 0) return
    this.pending = []
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = []
    try {
      this.beginWrite.run()
      for (const { work } of batch) {
        this.savepoint.open.run()
        try {
          outcomes.push({ ok: true, value: work() })
        } catch (error) {
          this.savepoint.undo.run()
          outcomes.push({ ok: false, error })
        }
        this.savepoint.release.run()
      }
      this.commit.run()
    } catch (error) {
      // The commit itself failed (disk full, I/O error): nothing of the batch is stored.
      if (this.db.inTransaction) this.rollback.run()
      for (const { reject } of batch) reject(error)
      return
    }
    batch.forEach(({ resolve, reject }, i) => {
      const outcome = outcomes[i]
      if (outcome?.ok) resolve(outcome.value)
      else reject(outcome?.error)
    })
  }

  /** Runs `work` in one read transaction: a consistent snapshot. */
  private readSnapshot<T>(work: () => T): T {
    this.beginRead.run()
    try {
      const result = work()
      this.commit.run()
      return result
    } catch (error) {
      if (this.db.inTransaction) this.rollback.run()
      throw error
    }
  }

  private table(resource: ResourceDescription): Table {
    const table = this.tables.get(resource.type)
    if (!table) throw new Error(`no table for ${resource.type}`)
    return table
  }

  /** bun:sqlite caches prepared statements by their SQL text. */
  private statement(sql: string): Statement<Row, Bindings> {
    return this.db.query<Row, Bindings>(sql)
  }

  private findNow(table: Table, id: Id): StoredRecord | null {
    const row = this.statement(table.findSql).get(id)
    return row ? table.toRecord(row) : null
  }

  private existsNow(table: Table, id: Id): boolean {
    return this.statement(table.existsSql).get(id) !== null
  }

  private relatedNow(resource: ResourceDescription, id: Id, relationship: string): StoredRecord[] {
    const inverse = this.registry.inverseOf(resource, relationship)
    const target = this.table(this.registry.get(resource.relationships[relationship]?.target ?? ''))
    const rows = this.statement(
      `SELECT ${target.columns} FROM ${target.name} WHERE ${quote(inverse.column)} = ? ORDER BY "id"`,
    ).all(id)
    return rows.map((row) => target.toRecord(row))
  }

  private missingNow(resource: ResourceDescription, toOne: RecordInput['toOne']): string[] {
    const missing: string[] = []
    for (const [name, relationship] of Object.entries(resource.relationships)) {
      if (relationship.kind !== 'to-one' || !(name in toOne)) continue
      const id = toOne[name]
      const found =
        id === null || id === undefined
          ? !relationship.required
          : this.existsNow(this.table(this.registry.get(relationship.target)), id)
      if (!found) missing.push(name)
    }
    return missing
  }
}

function migrate(db: Database, migrations: readonly Migration[]): void {
  db.run(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
  )
  const { current } = db.query('SELECT COALESCE(MAX(version), 0) AS current FROM schema_migrations').get() as {
    current: number
  }
  const latest = migrations.at(-1)?.version ?? 0
  if (current > latest) {
    throw new Error(`the database schema is at version ${current}, newer than this build knows (${latest})`)
  }
  for (const migration of migrations) {
    if (migration.version <= current) continue
    db.transaction(() => {
      db.run(migration.sql)
      db.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        migration.version,
        migration.name,
        new Date().toISOString(),
      )
    }).immediate()
  }
}
