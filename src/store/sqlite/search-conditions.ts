import type { Statement } from 'bun:sqlite'
import type { Id } from '../../model/record'
import type { SearchTerm } from '../search-terms'
import { type Bindings, type Row, type Table, whereClause } from '../sql/table'
import type { SqliteSearch } from './search'

/**
 * A SQLite search as SQL: the words of few related ids as one FTS5 query that drives the read,
 * those of many as conditions on the table, in the form that reads fewest rows (see
 * SqliteSearch.termCondition), and where each read starts.
 */

/** The list's conditions other than the search, as SQL on the table, with their parameters. */
export interface OtherConditions {
  readonly where: readonly string[]
  readonly params: Bindings
}

/**
 * Related ids past which a word's references are matched by the table's indexes, not as FTS5
 * terms: FTS5 ORs one term per id and steps through all of them for every row it moves.
 */
export const MANY_IDS = 64

/**
 * Rows the words of few related ids may match for the words of many to be tested row by row (see
 * termCondition's `probe`): 200 rows cost about what listing a one-letter word's matches does.
 */
const PROBE_ROWS = 200

/** Rows a heavy word may match, at most, to drive a search's read (see fewestRows). */
const DRIVER_ROWS = 50_000

/** A search as the index query of its words (empty: none) and SQL conditions on the table. */
export interface SearchCondition {
  readonly expression: string
  readonly where: readonly string[]
  readonly params: Bindings
}

const noConditions: OtherConditions = { where: [], params: [] }

export class SqliteSearchConditions {
  constructor(
    private readonly statement: (sql: string) => Statement<Row, Bindings>,
    private readonly table: Table,
    private readonly search: SqliteSearch,
    private readonly other: OtherConditions,
    /** FTS5 terms of the list's filters on searched relationships: the index applies them itself. */
    readonly folded: string,
  ) {}

  /**
   * Where a read starts: the index when it has something to match (joined to the table only for
   * the other filters), else the table itself (every row matches the words).
   */
  source(
    expression: string,
    extra: OtherConditions = noConditions,
  ): { from: string; where: string[]; params: Bindings; rowid: string } {
    const query = [expression, this.folded].filter((part) => part !== '').join(' AND ')
    const where = [...this.other.where, ...extra.where]
    const params = [...this.other.params, ...extra.params]
    if (query === '') return { from: this.table.name, where, params, rowid: `${this.table.name}."id"` }
    const index = this.search.index
    const from =
      where.length === 0 ? index : `${index} CROSS JOIN ${this.table.name} ON ${this.table.name}."id" = ${index}.rowid`
    return { from, where: [`${index} MATCH ?`, ...where], params: [query, ...params], rowid: `${index}.rowid` }
  }

  /** Whether the index matches at most PROBE_ROWS rows for an FTS5 query (and the list's related filters). */
  private fewMatch(expression: string): boolean {
    const { from, where, params } = this.source(expression)
    const sql = `SELECT COUNT(*) AS count FROM (SELECT 1 FROM ${from}${whereClause(where)} LIMIT ?)`
    return ((this.statement(sql).get(...params, PROBE_ROWS + 1)?.count as number) ?? 0) <= PROBE_ROWS
  }

  /**
   * Of terms that name many related records, the one whose rows are fewest, counted up to
   * DRIVER_ROWS each (a term's index matches and its references' rows, a duplicate counted twice);
   * null when each has more: a scan of the table costs no more then.
   */
  private fewestRows(terms: readonly SearchTerm[]): { term: SearchTerm; rows: number } | null {
    let fewest: { term: SearchTerm; rows: number } | null = null
    for (const term of terms) {
      const rows = this.search.termRows(term, this.whole, 'UNION ALL')
      if (!rows) continue
      const sql = `SELECT COUNT(*) AS count FROM (${rows.sql} LIMIT ?)`
      const count = (this.statement(sql).get(...(rows.params as Bindings), DRIVER_ROWS)?.count as number) ?? 0
      if (count < DRIVER_ROWS && (!fewest || count < fewest.rows)) fewest = { term, rows: count }
    }
    return fewest
  }

  /** Whether these ids are every record of a required related field's target. */
  readonly whole = (field: number, ids: readonly Id[]): boolean => {
    if (ids.length === 0 || !this.search.isRequired(field)) return false
    const target = this.search.relatedTable(field)
    const row = this.statement(`SELECT COUNT(*) AS count FROM (SELECT 1 FROM ${target} LIMIT ?)`).get(ids.length + 1)
    return row?.count === ids.length
  }

  /**
   * The search's condition: the words of few related ids as one FTS5 query, those of many as SQL
   * on the table (see MANY_IDS); null when no record can match.
   */
  conditionOf(terms: readonly SearchTerm[]): SearchCondition | null {
    // A page's count, window and hits ask for the same terms: their estimates are read once.
    if (!this.conditions.has(terms)) this.conditions.set(terms, this.conditionRead(terms))
    return this.conditions.get(terms) ?? null
  }

  private readonly conditions = new WeakMap<readonly SearchTerm[], SearchCondition | null>()

  private conditionRead(terms: readonly SearchTerm[]): SearchCondition | null {
    // No word: nothing matches (as a search of only spaces finds nothing).
    if (terms.length === 0) return null
    const many = (term: SearchTerm) => term.related.some((ids) => (ids?.length ?? 0) > MANY_IDS)
    const few = terms.filter((term) => !many(term))
    const expression = few.length === 0 ? '' : this.search.termsExpression(few, this.whole)
    if (expression === null) return null
    const where: string[] = []
    const params: Bindings = []
    const heavy = terms.filter(many)
    // The rows to test: those of the index's query, or else those of the heavy word matching fewest.
    const driver = expression === '' ? this.fewestRows(heavy) : null
    const probe =
      expression !== '' ? heavy.length > 0 && this.fewMatch(expression) : (driver?.rows ?? Infinity) <= PROBE_ROWS
    for (const term of heavy) {
      const form = term === driver?.term ? 'union' : probe ? 'probe' : 'or'
      const condition = this.search.termCondition(term, this.whole, form)
      if (!condition) continue
      where.push(condition.sql)
      params.push(...(condition.params as Bindings))
    }
    return { expression, where, params }
  }
}
