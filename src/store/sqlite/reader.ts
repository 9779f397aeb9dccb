import type { Database, Statement } from 'bun:sqlite'
import type { ResourceDescription } from '../../model/description'
import type {
  IncludePlan,
  ListPage,
  ListQuery,
  Members,
  RecordGraph,
  SearchOrder,
  StoreFilter,
} from '../../model/query'
import type { Id, StoredRecord } from '../../model/record'
import type { SearchWord } from '../../model/search-words'
import type { RecordInput } from '../../model/writes'
import { type ResourceRegistry, searchOf } from '../../resources/registry'
import {
  followPlan,
  followSync,
  followsOnlyToOne,
  type GraphAnswer,
  GraphBuilder,
  type GraphRead,
  toOneGraph,
} from '../record-graph'
import { type RankedWindow, SEARCH_WINDOW } from '../search-ranking'
import { rankedFields } from '../search-terms'
import { type Bindings, quote, type Row, Table, whereClause } from '../sql/table'
import { type ColumnFilter, columnCondition, onColumns, SqliteCounter } from './count'
import { SqliteSearch } from './search'
import { SqliteSearchReads } from './search-reads'

/**
 * Every read of the SQLite store, synchronous, over one connection: the writer's own (for the
 * reads a write makes) or a read-only one on a worker thread (for lists, so that a long read never
 * holds up the event loop that answers everything else). Types are named by their plural name, so
 * that a call can cross to a worker as plain data.
 */
export class SqliteReader {
  private readonly tables = new Map<string, Table>()
  private readonly searches = new Map<string, SqliteSearch>()
  private readonly counter: SqliteCounter
  private readonly beginRead: Statement
  private readonly commit: Statement
  private readonly rollback: Statement
  /** Each table's statement for one record by id, kept: the most frequent read skips the cache lookup. */
  private readonly finders = new Map<string, { table: Table; statement: Statement<Row, Bindings> }>()

  constructor(
    private readonly db: Database,
    readonly registry: ResourceRegistry,
  ) {
    for (const resource of registry.all) this.tables.set(resource.type, new Table(resource))
    for (const resource of registry.all) {
      const search = searchOf(resource)
      if (search) this.searches.set(resource.type, new SqliteSearch(this.table(resource.type), search, registry))
    }
    this.counter = new SqliteCounter((sql) => this.statement(sql))
    this.beginRead = db.prepare('BEGIN DEFERRED')
    this.commit = db.prepare('COMMIT')
    this.rollback = db.prepare('ROLLBACK')
  }

  /** Finalizes the statements prepared here, before the connection closes. */
  close(): void {
    for (const statement of [this.beginRead, this.commit, this.rollback]) statement.finalize()
  }

  table(type: string): Table {
    const table = this.tables.get(type)
    if (!table) throw new Error(`no table for ${type}`)
    return table
  }

  /** bun:sqlite caches prepared statements by their SQL text. */
  statement(sql: string): Statement<Row, Bindings> {
    return this.db.query<Row, Bindings>(sql)
  }

  /** Runs `work` in one read transaction: a consistent snapshot. */
  snapshot<T>(work: () => T): T {
    this.beginRead.run()
    try {
      const result = work()
      this.commit.run()
      return result
    } catch (error) {
      try {
        if (this.db.inTransaction) this.rollback.run()
      } catch {
        // The error that led here is the one to report.
      }
      throw error
    }
  }

  find(type: string, id: Id): StoredRecord | null {
    let finder = this.finders.get(type)
    if (!finder) {
      const table = this.table(type)
      finder = { table, statement: this.statement(table.findSql) }
      this.finders.set(type, finder)
    }
    const row = finder.statement.get(id)
    return row ? finder.table.toRecord(row) : null
  }

  exists(type: string, id: Id): boolean {
    return this.statement(this.table(type).existsSql).get(id) !== null
  }

  /** The records with these ids, in the order given; ids no record has are left out. */
  findMany(type: string, ids: readonly Id[]): StoredRecord[] {
    if (ids.length === 0) return []
    if (ids.length === 1) {
      const found = this.find(type, ids[0] as Id)
      return found ? [found] : []
    }
    const byId = new Map<Id, StoredRecord>()
    for (const record of this.whereIn(type, 'id', ids)) byId.set(record.id, record)
    const found: StoredRecord[] = []
    for (const id of ids) {
      const record = byId.get(id)
      if (record) found.push(record)
    }
    return found
  }

  /**
   * A window of a list: `limit` records from `offset` or after a keyset position; read along the
   * index of `driver`, of several filters, when given (SqliteCounter.driver).
   */
  list(type: string, query: ListQuery, driver?: ColumnFilter): StoredRecord[] {
    const searched = this.searchWindow(type, query)
    if (searched) return this.findMany(type, searched.ids)
    const table = this.table(type)
    const params: Bindings = []
    const { from, order, filters } = this.ordered(type, query)
    const where = this.conditions(table, filters, params, driver)
    if (query.after) where.push(table.keysetCondition(query.sort, query.after, params))
    const offset = query.offset ?? 0
    let sql = `SELECT ${table.columns} FROM ${from}${whereClause(where)} ORDER BY ${order} LIMIT ? OFFSET ?`
    // In id order with no filter the table itself is the narrowest order there is: nothing to gain.
    const byRowid = where.length === 0 && query.sort.every((key) => key.field === 'id')
    if (offset > 0 && from === table.name && !byRowid) {
      // Rows skipped by OFFSET are still stepped through: step through ids alone (the covering
      // index of the order), then read just the page's rows.
      sql = `SELECT ${table.columns} FROM ${table.name} WHERE "id" IN (SELECT ${table.name}."id" FROM ${from}${whereClause(where)} ORDER BY ${order} LIMIT ? OFFSET ?) ORDER BY ${order}`
    }
    return this.statement(sql)
      .all(...params, query.limit, offset)
      .map((row) => table.toRecord(row))
  }

  /**
   * A window of a list and how many records the whole list has, from one snapshot. Of several
   * filters, both are read along the index of the narrowest.
   */
  page(type: string, query: ListQuery): ListPage {
    return this.snapshot(() => {
      const searched = this.searchWindow(type, query)
      if (!searched) {
        const { filters } = query
        const driver = onColumns(filters) ? this.counter.driver(this.table(type), filters) : undefined
        return { records: this.list(type, query, driver), total: this.count(type, filters, driver) }
      }
      const records = this.findMany(type, searched.ids)
      return searched.capped ? { records, total: searched.total, capped: true } : { records, total: searched.total }
    })
  }

  /**
   * A window of a searched list, and the search's total (exact up to SEARCH_WINDOW): ranked, in
   * id order, or in an attribute's order (sqlite/search-reads.ts). Undefined for a list with no search.
   */
  private searchWindow(type: string, query: ListQuery): RankedWindow | undefined {
    const found = this.searchOf(type, query.filters)
    if (!found) return undefined
    const { reads, words } = found
    const offset = query.offset ?? 0
    if (query.ranked && !query.after) return reads.ranked(words, offset, query.limit)
    const count = reads.countUpTo(words, SEARCH_WINDOW + 1)
    const totals = { total: Math.min(count, SEARCH_WINDOW), capped: count > SEARCH_WINDOW }
    if (count === 0) return { ids: [], ...totals }
    const [first] = query.sort
    if (query.sort.length === 1 && first?.field === 'id') {
      const after = (query.after?.[0] as Id | undefined) ?? null
      return { ids: reads.byId(words, first.descending, after, offset, query.limit), ...totals }
    }
    const keyset: Bindings = []
    const where = query.after ? [this.table(type).keysetCondition(query.sort, query.after, keyset)] : []
    return { ids: reads.sorted(words, query.sort, { where, params: keyset }, offset, query.limit, count), ...totals }
  }

  /** The search reads of a list's search filter over its other filters; undefined without one. */
  private searchOf(
    type: string,
    filters: readonly StoreFilter[],
  ): { reads: SqliteSearchReads; words: SearchWord[] } | undefined {
    const filter = filters.find((f) => f.kind === 'search')
    const search = this.searches.get(type)
    if (!filter || !search) return undefined
    const table = this.table(type)
    // Filters on searched relationships go into the index's query (it holds the related ids);
    // the others are conditions on the table, joined to the index.
    const folded: string[] = []
    const others = filters.filter((f) => {
      if (f === filter) return false
      if (f.kind !== 'relationship' || f.orNone) return true
      const terms = search.relationshipTerms(
        table.resource.relationships[f.relationship]?.kind === 'to-one'
          ? (table.resource.relationships[f.relationship] as { column: string }).column
          : '',
        f.ids,
      )
      if (terms) folded.push(terms)
      return terms === null
    })
    const params: Bindings = []
    const where = this.conditions(table, others, params)
    const fields = rankedFields(table.resource)
    const reads = new SqliteSearchReads(
      (sql) => this.statement(sql),
      table,
      search,
      fields,
      { where, params },
      folded.join(' AND '),
    )
    return { reads, words: search.words(filter.text) }
  }

  /**
   * How many records a list has: with no filter, from the count kept as rows are written; with
   * filters, in their indexes (SqliteCounter); with a search, the rows it matches.
   */
  count(type: string, filters: readonly StoreFilter[], driver?: ColumnFilter): number {
    const table = this.table(type)
    if (onColumns(filters)) return this.counter.count(table, filters, driver)
    const params: Bindings = []
    const where = this.conditions(table, filters, params)
    const row = this.statement(`SELECT COUNT(*) AS count FROM ${table.name}${whereClause(where)}`).get(...params)
    return row?.count as number
  }

  countUpTo(type: string, filters: readonly StoreFilter[], cap: number): number {
    const searched = this.searchOf(type, filters)
    if (searched) return searched.reads.countUpTo(searched.words, cap)
    const table = this.table(type)
    const params: Bindings = []
    const where = this.conditions(table, filters, params)
    const row = this.statement(
      `SELECT COUNT(*) AS count FROM (SELECT 1 FROM ${table.name}${whereClause(where)} LIMIT ?)`,
    ).get(...params, cap)
    return row?.count as number
  }

  /** The ids of every record of a list, in its order: a search is matched (and ranked) once. */
  matchingIds(type: string, query: SearchOrder): Id[] {
    const searched = query.ranked ? this.searchOf(type, query.filters) : undefined
    if (searched) return searched.reads.rankedIds(searched.words)
    const table = this.table(type)
    const params: Bindings = []
    const { from, order, filters } = this.ordered(type, query)
    const where = this.conditions(table, filters, params)
    // Row by row: 100,000 rows read at once would all be alive together, several MB of garbage
    // that the allocator keeps long after; one at a time, each is young garbage, soon reused.
    const ids: Id[] = []
    const rows = this.statement(`SELECT ${table.name}."id" AS id FROM ${from}${whereClause(where)} ORDER BY ${order}`)
    for (const row of rows.iterate(...params)) ids.push(row.id as Id)
    return ids
  }

  /** For each owner, the ids of the records of its to-many `relationship`, in id order. */
  members(type: string, relationship: string, owners: readonly Id[]): Members {
    const resource = this.registry.get(type)
    const inverse = this.registry.inverseOf(resource, relationship)
    const target = this.table((resource.relationships[relationship] as { target: string }).target)
    const column = quote(inverse.column)
    const members: Members = new Map()
    if (owners.length === 0) return members
    // One row per owner with its ids as a JSON array: an author's 100,000 books arrive as one
    // string and one array of numbers, not 100,000 rows. Sorted here: an aggregate's order is SQLite's.
    const rows = this.statement(
      `SELECT ${column} AS owner, json_group_array("id") AS ids FROM ${target.name} WHERE ${column} IN (SELECT value FROM json_each(?)) GROUP BY ${column}`,
    ).iterate(JSON.stringify(owners))
    for (const row of rows) {
      members.set(
        row.owner as Id,
        (JSON.parse(row.ids as string) as Id[]).sort((a, b) => a - b),
      )
    }
    return members
  }

  /** A record and what a plan of to-one relationships reaches from it, in one snapshot. */
  findWithRelated(type: string, id: Id, plan: IncludePlan): { record: StoredRecord; graph: RecordGraph } | null {
    return this.snapshot(() => {
      const record = this.find(type, id)
      if (!record) return null
      const resource = this.registry.get(type)
      if (followsOnlyToOne(resource, plan)) {
        return { record, graph: toOneGraph(this.registry, resource, record, plan, (t, i) => this.find(t, i)) }
      }
      const graph = new GraphBuilder(type, [id])
      followSync(followPlan(this.registry, resource, [record], plan, graph), (read) => this.graphRead(read))
      return { record, graph }
    })
  }

  /** Which of these to-one references point at nothing (required ones given as null too). */
  missing(resource: ResourceDescription, toOne: RecordInput['toOne']): string[] {
    const missing: string[] = []
    for (const [name, relationship] of Object.entries(resource.relationships)) {
      if (relationship.kind !== 'to-one' || !(name in toOne)) continue
      const id = toOne[name]
      const found = id === null || id === undefined ? !relationship.required : this.exists(relationship.target, id)
      if (!found) missing.push(name)
    }
    return missing
  }

  /** Answers a read of the include traversal (record-graph.ts) on this connection. */
  private graphRead(read: GraphRead): GraphAnswer {
    return read.kind === 'records'
      ? this.findMany(read.type, read.ids)
      : this.members(read.type, read.relationship, read.owners)
  }

  /** The ORDER BY of a list (a ranked search is ordered by searchWindow and matchingIds instead). */
  private ordered(type: string, query: SearchOrder): { from: string; order: string; filters: readonly StoreFilter[] } {
    const table = this.table(type)
    return { from: table.name, order: table.orderTerms(query.sort).join(', '), filters: query.filters }
  }

  private searchCondition(type: string, text: string) {
    const found = this.searchOf(type, [{ kind: 'search', text }])
    return found ? found.reads.condition(found.words) : null
  }

  /** Records whose `column` is one of `ids`, in id order; the ids travel as one JSON parameter. */
  private whereIn(type: string, column: string, ids: readonly Id[]): StoredRecord[] {
    const table = this.table(type)
    return this.statement(
      `SELECT ${table.columns} FROM ${table.name} WHERE ${quote(column)} IN (SELECT value FROM json_each(?)) ORDER BY "id"`,
    )
      .all(JSON.stringify(ids))
      .map((row) => table.toRecord(row))
  }

  /** SQL conditions for list filters; their parameters are pushed in order. */
  private conditions(table: Table, filters: readonly StoreFilter[], params: Bindings, driver?: ColumnFilter): string[] {
    const where: string[] = []
    for (const filter of filters) {
      if (filter.kind === 'search') {
        const search = this.searches.get(table.resource.type)
        const condition = search ? this.searchCondition(table.resource.type, filter.text) : null
        if (!search || condition === null) where.push('0')
        else {
          if (condition.expression !== '') {
            where.push(`${table.name}."id" IN (SELECT rowid FROM ${search.index} WHERE ${search.index} MATCH ?)`)
            params.push(condition.expression)
          }
          where.push(...condition.where)
          params.push(...condition.params)
        }
        continue
      }
      where.push(columnCondition(table, filter, params, !driver || filter === driver))
    }
    return where
  }
}
