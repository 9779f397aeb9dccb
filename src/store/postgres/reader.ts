import type { SQL } from 'bun'
import type { ResourceDescription } from '../../model/description'
import type {
  IncludePlan,
  ListPage,
  ListQuery,
  Members,
  RecordGraph,
  SearchOrder,
  SortKey,
  StoreFilter,
} from '../../model/query'
import type { Id, StoredRecord } from '../../model/record'
import type { SearchWord } from '../../model/search-words'
import type { RecordInput } from '../../model/writes'
import { type ResourceRegistry, searchOf } from '../../resources/registry'
import { followAsync, followPlan, type GraphAnswer, GraphBuilder, type GraphRead } from '../record-graph'
import { type RankedWindow, SEARCH_WINDOW } from '../search-ranking'
import { rankedFields } from '../search-terms'
import { quote, type Row, Table, whereClause } from '../sql/table'
import { Params, PostgresSearch } from './search'
import { PostgresSearchReads } from './search-reads'
import { decodeText, encodeText } from './text'

/** The pool, a transaction or a reserved connection: whatever a read runs on. */
export type Queryable = SQL

/**
 * A table's names as the SQLite backend derives them from the description (quoting is the same
 * standard SQL); what differs is here: `$n` parameters, and ids that arrive as strings (bigint).
 */
export class PostgresTable extends Table {
  override toRecord(row: Row): StoredRecord {
    const record = super.toRecord(row)
    const attributes: Record<string, string> = {}
    for (const [name, value] of Object.entries(record.attributes)) attributes[name] = decodeText(value)
    const toOne: Record<string, Id | null> = {}
    for (const [name, id] of Object.entries(record.toOne)) toOne[name] = id === null ? null : Number(id)
    return { id: Number(record.id), attributes, toOne }
  }

  /** The columns and values an input sets, text encoded for PostgreSQL (postgres/text.ts). */
  override assignments(input: RecordInput): [column: string, value: string | Id | null][] {
    return super
      .assignments(input)
      .map(([column, value]) => [column, typeof value === 'string' ? encodeText(value) : value])
  }

  /** The rows after the one whose sort values are `after`, in `sort` order (row-wise, each key in its direction). */
  keyset(sort: readonly SortKey[], after: readonly (string | number)[], params: Params): string {
    const value = (i: number) => {
      const given = after[i]
      return typeof given === 'string' ? encodeText(given) : given
    }
    const compare = (i: number): string => {
      const key = sort[i] as SortKey
      const column = this.sortColumn(key.field)
      const strict = `${column} ${key.descending ? '<' : '>'} ${params.add(value(i))}`
      if (i === sort.length - 1) return strict
      return `(${strict} OR (${column} = ${params.add(value(i))} AND ${compare(i + 1)}))`
    }
    const first = sort[0] as SortKey
    const range = `${this.sortColumn(first.field)} ${first.descending ? '<=' : '>='} ${params.add(value(0))}`
    return `(${range} AND ${compare(0)})`
  }
}

/** Parameters typed by what they stand for, so that PostgreSQL never has to guess. */
function idArray(ids: readonly Id[], params: Params): string {
  return `${params.add(ids)}::bigint[]`
}

/**
 * Every read of the PostgreSQL store. Each method takes what it runs on: the pool for a read on
 * its own, or the transaction of a write or of a snapshot (page, findWithRelated).
 */
export class PostgresReader {
  private readonly tables = new Map<string, PostgresTable>()
  private readonly searches = new Map<string, PostgresSearch>()

  constructor(readonly registry: ResourceRegistry) {
    for (const resource of registry.all) {
      const table = new PostgresTable(resource)
      this.tables.set(resource.type, table)
      const search = searchOf(resource)
      if (search) this.searches.set(resource.type, new PostgresSearch(table.name, resource, search, registry))
    }
  }

  table(type: string): PostgresTable {
    const table = this.tables.get(type)
    if (!table) throw new Error(`no table for ${type}`)
    return table
  }

  async rows(q: Queryable, text: string, values: readonly unknown[] = []): Promise<Row[]> {
    return (await q.unsafe(text, values as unknown[])) as Row[]
  }

  async find(q: Queryable, type: string, id: Id, lock = ''): Promise<StoredRecord | null> {
    const table = this.table(type)
    const [row] = await this.rows(q, `SELECT ${table.columns} FROM ${table.name} WHERE "id" = $1${lock}`, [id])
    return row ? table.toRecord(row) : null
  }

  async exists(q: Queryable, type: string, id: Id, lock = ''): Promise<boolean> {
    const table = this.table(type)
    const rows = await this.rows(q, `SELECT 1 FROM ${table.name} WHERE "id" = $1${lock}`, [id])
    return rows.length > 0
  }

  async findMany(q: Queryable, type: string, ids: readonly Id[]): Promise<StoredRecord[]> {
    if (ids.length === 0) return []
    const table = this.table(type)
    const rows = await this.rows(q, `SELECT ${table.columns} FROM ${table.name} WHERE "id" = ANY($1::bigint[])`, [ids])
    const byId = new Map<Id, StoredRecord>()
    for (const row of rows) {
      const record = table.toRecord(row)
      byId.set(record.id, record)
    }
    const found: StoredRecord[] = []
    for (const id of ids) {
      const record = byId.get(id)
      if (record) found.push(record)
    }
    return found
  }

  /** A window of a list: `limit` records from `offset` or after a keyset position. */
  async list(q: Queryable, type: string, query: ListQuery): Promise<StoredRecord[]> {
    const searched = await this.searchWindow(q, type, query)
    if (searched) return this.findMany(q, type, searched.ids)
    const table = this.table(type)
    const params = new Params()
    const rows = await this.rows(q, this.windowSql(table, query, params), params.values)
    return rows.map((row) => table.toRecord(row))
  }

  /**
   * A window and the size of the whole list. Without a search, in one statement, so in one
   * snapshot without a transaction's extra round trips: the count joined to the window, one row
   * even when the window is empty. With one, by the search's reads (`q` is then a snapshot's).
   */
  async page(q: Queryable, type: string, query: ListQuery): Promise<ListPage> {
    const searched = await this.searchWindow(q, type, query)
    if (searched) {
      const records = await this.findMany(q, type, searched.ids)
      return searched.capped ? { records, total: searched.total, capped: true } : { records, total: searched.total }
    }
    const table = this.table(type)
    const params = new Params()
    const counted = this.countSql(table, query.filters, params)
    const window = this.windowSql(table, query, params)
    const rows = await this.rows(
      q,
      `SELECT counted.total AS "#total", page.* FROM (${counted}) AS counted
        LEFT JOIN LATERAL (${window}) AS page ON TRUE`,
      params.values,
    )
    const total = Number(rows[0]?.['#total'] ?? 0)
    const records = rows.filter((row) => row.id !== null).map((row) => table.toRecord(row))
    return { records, total }
  }

  /**
   * The size of a list as one row, `total`. Unfiltered, a searched table's is the sum of its
   * search_totals slots (migration 5: each writing transaction adds its change to its slot at its
   * commit, so the sum is exact in any snapshot, and no write waits for a counter row of its own);
   * filtered, it is counted in the range of its filter's index.
   */
  private countSql(table: PostgresTable, filters: readonly StoreFilter[], params: Params): string {
    if (filters.length === 0 && this.searches.has(table.resource.type)) {
      return `SELECT COALESCE(SUM(records), 0)::int AS total FROM search_totals WHERE table_name = ${params.add(table.resource.table)}::text`
    }
    // Some ids or none: two ranges of the column's index with no row in common, each counted in it.
    // As one OR, PostgreSQL counted 240,000 of a million books by reading the whole table.
    const both = filters.find((f) => f.kind === 'relationship' && f.ids.length > 0 && f.orNone)
    if (both?.kind === 'relationship') {
      const part = (filter: StoreFilter) => {
        const where = this.conditions(
          table,
          filters.map((f) => (f === both ? filter : f)),
          params,
        )
        return `(SELECT COUNT(*) FROM ${table.name}${whereClause(where)})`
      }
      return `SELECT (${part({ ...both, orNone: false })} + ${part({ ...both, ids: [] })})::int AS total`
    }
    const where = this.conditions(table, filters, params)
    return `SELECT COUNT(*)::int AS total FROM ${table.name}${whereClause(where)}`
  }

  private windowSql(table: PostgresTable, query: ListQuery, params: Params): string {
    const where = this.conditions(table, query.filters, params)
    if (query.after) where.push(table.keyset(query.sort, query.after, params))
    let sql = `SELECT ${table.columns} FROM ${table.name}${whereClause(where)} ORDER BY ${table.orderTerms(query.sort).join(', ')}`
    sql += ` LIMIT ${params.add(query.limit)}::bigint`
    if ((query.offset ?? 0) > 0) sql += ` OFFSET ${params.add(query.offset)}::bigint`
    return sql
  }

  async countUpTo(q: Queryable, type: string, filters: readonly StoreFilter[], cap: number): Promise<number> {
    const searched = this.searchOf(q, type, filters)
    if (searched) return searched.reads.countUpTo(searched.words, cap)
    const table = this.table(type)
    const params = new Params()
    const where = this.conditions(table, filters, params)
    const [row] = await this.rows(
      q,
      `SELECT COUNT(*)::int AS count FROM (SELECT 1 FROM ${table.name}${whereClause(where)} LIMIT ${params.add(cap)}::bigint) AS counted`,
      params.values,
    )
    return Number(row?.count ?? 0)
  }

  /** The ids of every record of a list, in its order: a search is matched (and ranked) once. */
  async matchingIds(q: Queryable, type: string, query: SearchOrder): Promise<Id[]> {
    const searched = this.searchOf(q, type, query.filters)
    const table = this.table(type)
    if (searched && query.ranked) return searched.reads.rankedIds(searched.words)
    if (searched) return searched.reads.allInOrder(searched.words, table.orderTerms(query.sort))
    const params = new Params()
    const where = this.conditions(table, query.filters, params)
    // One row holding the array: 100,000 ids as one value, not 100,000 rows.
    const [row] = await this.rows(
      q,
      `SELECT COALESCE(array_agg(${table.name}."id" ORDER BY ${table.orderTerms(query.sort).join(', ')}), '{}') AS ids FROM ${table.name}${whereClause(where)}`,
      params.values,
    )
    return ((row?.ids ?? []) as unknown as (string | number)[]).map(Number)
  }

  /**
   * A window of a searched list, and the search's total (exact up to SEARCH_WINDOW): ranked, in
   * id order, or in an attribute's order (postgres/search-reads.ts). Undefined for a list with no
   * search. Its reads must share `q`'s snapshot.
   */
  private async searchWindow(q: Queryable, type: string, query: ListQuery): Promise<RankedWindow | undefined> {
    const found = this.searchOf(q, type, query.filters)
    if (!found) return undefined
    const { reads, words } = found
    const offset = query.offset ?? 0
    if (query.ranked && !query.after) return reads.ranked(words, offset, query.limit)
    const count = await reads.countUpTo(words, SEARCH_WINDOW + 1)
    const totals = { total: Math.min(count, SEARCH_WINDOW), capped: count > SEARCH_WINDOW }
    if (count === 0) return { ids: [], ...totals }
    const [first] = query.sort
    if (query.sort.length === 1 && first?.field === 'id') {
      const after = query.after?.[0] === undefined ? null : Number(query.after[0])
      return { ids: await reads.byId(words, first.descending, after, offset, query.limit), ...totals }
    }
    const table = this.table(type)
    const keyset = (params: Params) => (query.after ? [table.keyset(query.sort, query.after, params)] : [])
    const order = table.orderTerms(query.sort)
    const ids = await reads.sorted(words, count, SEARCH_WINDOW, order, keyset, offset, query.limit)
    return { ids, ...totals }
  }

  /** The reads of a list's search filter, over its other filters; undefined without one. */
  private searchOf(
    q: Queryable,
    type: string,
    filters: readonly StoreFilter[],
  ): { reads: PostgresSearchReads; words: SearchWord[] } | undefined {
    const filter = filters.find((f) => f.kind === 'search')
    const search = this.searches.get(type)
    if (!filter || !search) return undefined
    const table = this.table(type)
    const others = filters.filter((f) => f !== filter)
    const reads = new PostgresSearchReads(
      (sql, values) => this.rows(q, sql, values),
      table.name,
      search,
      rankedFields(table.resource),
      (params) => this.conditions(table, others, params),
    )
    return { reads, words: search.words(filter.text) }
  }

  /** For each owner, the ids of the records of its to-many `relationship`, in id order. */
  async members(q: Queryable, type: string, relationship: string, owners: readonly Id[]): Promise<Members> {
    const resource = this.registry.get(type)
    const inverse = this.registry.inverseOf(resource, relationship)
    const target = this.table((resource.relationships[relationship] as { target: string }).target)
    const column = quote(inverse.column)
    const members: Members = new Map()
    if (owners.length === 0) return members
    // Each owner's ids as one JSON array, which arrives as numbers: an array of bigints arrives as
    // a string per id, 100,000 strings and their copies as numbers for 100 authors' books.
    const rows = await this.rows(
      q,
      `SELECT ${column} AS owner, json_agg("id" ORDER BY "id") AS ids FROM ${target.name} WHERE ${column} = ANY($1::bigint[]) GROUP BY ${column}`,
      [owners],
    )
    for (const row of rows) members.set(Number(row.owner), row.ids as unknown as Id[])
    return members
  }

  /** A record and what a plan of to-one relationships reaches from it (the caller gives the snapshot). */
  async findWithRelated(
    q: Queryable,
    type: string,
    id: Id,
    plan: IncludePlan,
  ): Promise<{ record: StoredRecord; graph: RecordGraph } | null> {
    const record = await this.find(q, type, id)
    if (!record) return null
    const graph = new GraphBuilder(type, [id])
    await followAsync(followPlan(this.registry, this.registry.get(type), [record], plan, graph), (read) =>
      this.graphRead(q, read),
    )
    return { record, graph }
  }

  /**
   * Which of these to-one references point at nothing (required ones given as null too). With a
   * `lock` (in a write), the rows found are locked against deletion until the write commits.
   */
  async missing(
    q: Queryable,
    resource: ResourceDescription,
    toOne: RecordInput['toOne'],
    lock = '',
  ): Promise<string[]> {
    // Sent together, in the relationships' order (so locks are taken in that one order), and
    // answered in one round trip: Bun's client pipelines the statements of one connection.
    const checks = this.references(resource, toOne).map(({ name, type, id }) =>
      id === null ? Promise.resolve(name) : this.exists(q, type, id, lock).then((found) => (found ? null : name)),
    )
    return (await Promise.all(checks)).filter((name) => name !== null)
  }

  /**
   * The to-one references an input sets that a write must find, in the relationships' order: each
   * with its target type and id; a null id is a required relationship set to null (missing
   * without a look). An optional one set to null needs no look and is left out.
   */
  references(
    resource: ResourceDescription,
    toOne: RecordInput['toOne'],
  ): { readonly name: string; readonly type: string; readonly id: Id | null }[] {
    const found = []
    for (const [name, relationship] of Object.entries(resource.relationships)) {
      if (relationship.kind !== 'to-one' || !(name in toOne)) continue
      const id = toOne[name] ?? null
      if (id !== null || relationship.required) found.push({ name, type: relationship.target, id })
    }
    return found
  }

  /** Answers a read of the include traversal (record-graph.ts) through `q`. */
  private graphRead(q: Queryable, read: GraphRead): Promise<GraphAnswer> {
    return read.kind === 'records'
      ? this.findMany(q, read.type, read.ids)
      : this.members(q, read.type, read.relationship, read.owners)
  }

  /** SQL conditions for list filters; their parameters are added in order. */
  private conditions(table: PostgresTable, filters: readonly StoreFilter[], params: Params): string[] {
    const where: string[] = []
    for (const filter of filters) {
      // A search is read through its terms (PostgresSearchReads): its typos need the vocabulary.
      if (filter.kind === 'search') {
        if (this.searches.has(table.resource.type)) throw new Error('a search is read by its terms, not as a condition')
        where.push('FALSE')
        continue
      }
      if (filter.kind === 'attribute') {
        where.push(`${table.attributeColumn(filter.attribute)} = ${params.add(encodeText(filter.value))}::text`)
        continue
      }
      const column = table.column(filter.relationship)
      const any: string[] = []
      // One id as equality, not ANY: PostgreSQL then reads the (column, id) index in id order
      // (migration 8) and stops at the page's end; over an array it cannot rely on that order.
      if (filter.ids.length === 1) any.push(`${column} = ${params.add(filter.ids[0])}::bigint`)
      else if (filter.ids.length > 1) any.push(`${column} = ANY(${idArray(filter.ids, params)})`)
      if (filter.orNone) any.push(`${column} IS NULL`)
      where.push(any.length === 0 ? 'FALSE' : `(${any.join(' OR ')})`)
    }
    return where
  }
}
