import { Database, type SQLQueryBindings, type Statement } from 'bun:sqlite'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import type { ResourceDescription, ToOneRelationship } from '../resources/description'
import type { ResourceRegistry } from '../resources/registry'
import { AtomicAbort, runAtomic, type SyncWriter } from './atomic'
import { GraphBuilder } from './record-graph'
import { migrate, useWal } from './sqlite-migrate'
import { sqliteMigrations } from './sqlite-migrations'
import type {
  AtomicOperation,
  AtomicOutcome,
  DeleteResult,
  Id,
  IncludePlan,
  ListQuery,
  RecordGraph,
  RecordInput,
  SortKey,
  Store,
  StoredRecord,
  StoreFilter,
  ToManyChange,
  ToManyResult,
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
  /** The full-text index of the table (migration 2): `<table>_search`, rowid = id. */
  readonly search: string
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
    this.search = quote(`${resource.table}_search`)
  }

  attributeColumn(attribute: string): string {
    const found = this.attributes.find(([name]) => name === attribute)
    if (!found) throw new Error(`${this.resource.type} has no attribute ${attribute}`)
    return quote(found[1])
  }

  /** `id` or an attribute, as a sort key names it. */
  sortColumn(field: string): string {
    return field === 'id' ? '"id"' : this.attributeColumn(field)
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

/**
 * An FTS5 query for the words of `text`: each word a quoted prefix, all of them required. Quoting
 * keeps FTS5's own syntax (AND, NEAR, *, column filters) out of the client's hands.
 */
function matchExpression(text: string): string {
  const words = text.normalize('NFKC').match(/[\p{L}\p{N}]+/gu) ?? []
  return words.map((word) => `"${word}"*`).join(' ')
}

function whereClause(where: readonly string[]): string {
  return where.length === 0 ? '' : ` WHERE ${where.join(' AND ')}`
}

/**
 * Keyset condition: the rows after the one whose sort values are `after`, in `sort` order
 * (sort values compared left to right, each key in its own direction).
 */
function keysetCondition(
  table: Table,
  sort: readonly SortKey[],
  after: readonly (string | number)[],
  params: Bindings,
): string {
  const alternatives: string[] = []
  for (let i = 0; i < sort.length; i++) {
    const parts: string[] = []
    for (let j = 0; j <= i; j++) {
      const key = sort[j] as SortKey
      parts.push(`${table.sortColumn(key.field)} ${j < i ? '=' : key.descending ? '<' : '>'} ?`)
      params.push(after[j] as string | number)
    }
    alternatives.push(`(${parts.join(' AND ')})`)
  }
  return `(${alternatives.join(' OR ')})`
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
    // First: every later statement then waits for another process starting on this file.
    db.run('PRAGMA busy_timeout = 5000')
    useWal(db)
    // FULL: a commit reaches the disk before the 2xx goes out, so it survives a crash or power loss.
    db.run('PRAGMA synchronous = FULL')
    db.run('PRAGMA foreign_keys = ON')
    migrate(db, migrations)
    return new SqliteStore(db, registry)
  }

  async list(
    resource: ResourceDescription,
    query: ListQuery,
    plan: IncludePlan,
  ): Promise<{ records: StoredRecord[]; graph: RecordGraph }> {
    const table = this.table(resource)
    const read = () => {
      const search = query.ranked ? query.filters.find((f) => f.kind === 'search') : undefined
      // Ranked: the search joins in with its relevance instead of filtering through a subquery.
      const from = search
        ? `${table.name} JOIN (SELECT rowid AS hit, rank AS relevance FROM ${table.search} WHERE ${table.search} MATCH ?) ON hit = "id"`
        : table.name
      const { where, params } = this.conditions(
        table,
        search ? query.filters.filter((f) => f !== search) : query.filters,
      )
      if (search) params.unshift(matchExpression(search.text))
      if (query.after) where.push(keysetCondition(table, query.sort, query.after, params))
      const keys = query.sort.map((k) => `${table.sortColumn(k.field)} ${k.descending ? 'DESC' : 'ASC'}`)
      const order = (search ? ['relevance', ...keys] : keys).join(', ')
      const sql = `SELECT ${table.columns} FROM ${from}${whereClause(where)} ORDER BY ${order} LIMIT ? OFFSET ?`
      const records = this.statement(sql)
        .all(...params, query.limit, query.offset ?? 0)
        .map((row) => table.toRecord(row))
      const graph = new GraphBuilder(
        resource.type,
        records.map((r) => r.id),
      )
      this.follow(resource, records, plan, graph)
      return { records, graph }
    }
    return plan.size === 0 ? read() : this.readSnapshot(read)
  }

  async count(resource: ResourceDescription, filters: readonly StoreFilter[]): Promise<number> {
    const table = this.table(resource)
    const { where, params } = this.conditions(table, filters)
    const row = this.statement(`SELECT COUNT(*) AS count FROM ${table.name}${whereClause(where)}`).get(...params)
    return row?.count as number
  }

  async find(resource: ResourceDescription, id: Id): Promise<StoredRecord | null> {
    return this.findNow(this.table(resource), id)
  }

  async findWithRelated(
    resource: ResourceDescription,
    id: Id,
    plan: IncludePlan,
  ): Promise<{ record: StoredRecord; graph: RecordGraph } | null> {
    const table = this.table(resource)
    // One read transaction: a consistent snapshot, and one WAL read lock instead of one per query.
    return this.readSnapshot(() => {
      const record = this.findNow(table, id)
      if (!record) return null
      const graph = new GraphBuilder(resource.type, [id])
      this.follow(resource, [record], plan, graph)
      return { record, graph }
    })
  }

  async missingReferences(resource: ResourceDescription, toOne: RecordInput['toOne']): Promise<string[]> {
    return this.missingNow(resource, toOne)
  }

  async create(resource: ResourceDescription, input: RecordInput): Promise<WriteResult> {
    return this.write(() => this.createNow(resource, input))
  }

  async update(resource: ResourceDescription, id: Id, input: RecordInput): Promise<WriteResult | null> {
    return this.write(() => this.updateNow(resource, id, input))
  }

  async changeToMany(
    resource: ResourceDescription,
    id: Id,
    relationship: string,
    ids: readonly Id[],
    change: ToManyChange,
  ): Promise<ToManyResult> {
    return this.write(() => this.changeToManyNow(resource, id, relationship, ids, change))
  }

  async delete(resource: ResourceDescription, id: Id): Promise<DeleteResult> {
    return this.write(() => this.deleteNow(resource, id))
  }

  async atomic(operations: readonly AtomicOperation[]): Promise<AtomicOutcome> {
    try {
      // One queued write: every operation in the same savepoint, undone together if one fails.
      const results = await this.write(() => runAtomic(operations, this.writer))
      return { ok: true, results }
    } catch (error) {
      if (error instanceof AtomicAbort) return { ok: false, index: error.index, failure: error.failure }
      throw error
    }
  }

  /** The synchronous writes, for an atomic batch to run inside its one transaction. */
  private readonly writer: SyncWriter = {
    create: (resource, input) => this.createNow(resource, input),
    update: (resource, id, input) => this.updateNow(resource, id, input),
    delete: (resource, id) => this.deleteNow(resource, id),
    changeToMany: (resource, id, relationship, ids, change) =>
      this.changeToManyNow(resource, id, relationship, ids, change),
  }

  private createNow(resource: ResourceDescription, input: RecordInput): WriteResult {
    const table = this.table(resource)
    const missing = this.missingNow(resource, input.toOne)
    if (missing.length > 0) return { ok: false, missing }
    const set = table.assignments(input)
    const sql =
      set.length === 0
        ? `INSERT INTO ${table.name} DEFAULT VALUES RETURNING ${table.columns}`
        : `INSERT INTO ${table.name} (${set.map(([c]) => quote(c)).join(', ')}) VALUES (${set.map(() => '?').join(', ')}) RETURNING ${table.columns}`
    const row = this.statement(sql).get(...set.map(([, v]) => v)) as Row
    return { ok: true, record: table.toRecord(row) }
  }

  private updateNow(resource: ResourceDescription, id: Id, input: RecordInput): WriteResult | null {
    const table = this.table(resource)
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
  }

  private changeToManyNow(
    resource: ResourceDescription,
    id: Id,
    relationship: string,
    ids: readonly Id[],
    change: ToManyChange,
  ): ToManyResult {
    const inverse = this.registry.inverseOf(resource, relationship)
    const target = this.table(this.registry.get(resource.relationships[relationship]?.target ?? ''))
    const column = quote(inverse.column)
    const members = () =>
      this.statement(`SELECT "id" FROM ${target.name} WHERE ${column} = ? ORDER BY "id"`)
        .values(id)
        .map(([member]) => member as Id)
    if (!this.existsNow(this.table(resource), id)) return { status: 'not-found' }
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

  private deleteNow(resource: ResourceDescription, id: Id): DeleteResult {
    const table = this.table(resource)
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

  /** Follows `plan` from `records`: one query per relationship and level, never one per record. */
  private follow(
    resource: ResourceDescription,
    records: readonly StoredRecord[],
    plan: IncludePlan,
    graph: GraphBuilder,
  ): void {
    for (const [name, node] of plan) {
      const relationship = resource.relationships[name]
      if (!relationship) continue
      const target = this.registry.get(relationship.target)
      const targetTable = this.table(target)
      let reached: StoredRecord[]
      if (relationship.kind === 'to-one') {
        for (const record of records) graph.link(resource.type, record.id, name, record.toOne[name] ?? null)
        if (!node.include && node.children.size === 0) continue
        const ids = new Set<Id>()
        for (const record of records) {
          const id = record.toOne[name]
          if (id != null) ids.add(id)
        }
        reached = this.findManyNow(targetTable, [...ids])
      } else {
        const inverse = this.registry.inverseOf(resource, name)
        reached = this.whereInNow(
          targetTable,
          inverse.column,
          records.map((r) => r.id),
        )
        const owned = new Map<Id, Id[]>()
        for (const child of reached) {
          const owner = child.toOne[relationship.inverse]
          if (owner == null) continue
          const ids = owned.get(owner)
          if (ids) ids.push(child.id)
          else owned.set(owner, [child.id])
        }
        for (const record of records) graph.link(resource.type, record.id, name, owned.get(record.id) ?? [])
      }
      if (node.include) for (const record of reached) graph.include(target, record)
      if (node.children.size > 0) this.follow(target, reached, node.children, graph)
    }
  }

  private findManyNow(table: Table, ids: readonly Id[]): StoredRecord[] {
    if (ids.length === 1) {
      const found = this.findNow(table, ids[0] as Id)
      return found ? [found] : []
    }
    return this.whereInNow(table, 'id', ids)
  }

  /** Records whose `column` is one of `ids`, in id order; the ids travel as one JSON parameter. */
  private whereInNow(table: Table, column: string, ids: readonly Id[]): StoredRecord[] {
    if (ids.length === 0) return []
    return this.statement(
      `SELECT ${table.columns} FROM ${table.name} WHERE ${quote(column)} IN (SELECT value FROM json_each(?)) ORDER BY "id"`,
    )
      .all(JSON.stringify(ids))
      .map((row) => table.toRecord(row))
  }

  /** SQL conditions and their parameters for list filters. */
  private conditions(table: Table, filters: readonly StoreFilter[]): { where: string[]; params: Bindings } {
    const where: string[] = []
    const params: Bindings = []
    for (const filter of filters) {
      if (filter.kind === 'search') {
        where.push(`"id" IN (SELECT rowid FROM ${table.search} WHERE ${table.search} MATCH ?)`)
        params.push(matchExpression(filter.text))
        continue
      }
      if (filter.kind === 'attribute') {
        where.push(`${table.attributeColumn(filter.attribute)} = ?`)
        params.push(filter.value)
        continue
      }
      const column = table.column(filter.relationship)
      const any: string[] = []
      if (filter.ids.length > 0) {
        any.push(`${column} IN (SELECT value FROM json_each(?))`)
        params.push(JSON.stringify(filter.ids))
      }
      if (filter.orNone) any.push(`${column} IS NULL`)
      where.push(any.length === 0 ? '0' : `(${any.join(' OR ')})`)
    }
    return { where, params }
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
