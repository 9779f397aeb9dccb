import type { Id } from '../../model/record'
import { type SearchWord, searchKey } from '../../model/search-words'
import { type Conjunction, type RankedWindow, rankAll, rankedWindow, type SearchMatch } from '../search-ranking'
import { rankAsync } from '../search-runs'
import {
  canMatch,
  type NearRequest,
  type RankedField,
  type RelatedRequest,
  type SearchTerm,
  searchTerms,
} from '../search-terms'
import { type Row, whereClause } from '../sql/table'
import { PostgresScans, type RunSql } from './scans'
import { Params, type PostgresSearch } from './search'

/**
 * Rows a sorted search walks along the order's index, whatever its matches, before it would rather
 * sort them (see dense): past it, it walks only when the rows to walk are fewer than the matches.
 */
const DENSE_WALK = 2_000

/**
 * The reads of a search over one type's table (what src/store/search-ranking.ts asks), all through
 * `run`, in one snapshot: the related records a word names, then the tiers, counts and matches,
 * found by the scans of postgres/scans.ts (which choose between walking the rows in id order and
 * the indexes), with the list's other filters applied.
 */
export class PostgresSearchReads {
  /** `${field}:${n}`: whether n ids are every record of the field's target. */
  private readonly wholes = new Map<string, boolean>()
  private readonly scans: PostgresScans
  private readonly termsByWords = new Map<string, Promise<SearchTerm[] | null>>()

  constructor(
    private readonly run: RunSql,
    /** The table, quoted. */
    private readonly table: string,
    private readonly search: PostgresSearch,
    private readonly fields: readonly RankedField[],
    /** The list's other filters, as conditions on the table. */
    private readonly other: (params: Params) => string[],
  ) {
    this.scans = new PostgresScans(run, table)
  }

  /** A window of the search ranked, and its total (capped at SEARCH_WINDOW). */
  ranked(words: readonly SearchWord[], offset: number, limit: number): Promise<RankedWindow> {
    return rankAsync(rankedWindow(this.fields, words, offset, limit), this)
  }

  /** Every match, ranked. */
  rankedIds(words: readonly SearchWord[]): Promise<Id[]> {
    return rankAsync(rankAll(this.fields, words), this)
  }

  /** How many records match, counted no further than `cap`. */
  async countUpTo(words: readonly SearchWord[], cap: number): Promise<number> {
    const terms = await this.terms(words)
    return terms ? this.count(terms, cap) : 0
  }

  /** A window in id order (a cursor page, or a search sorted by id), after `after` when given. */
  async byId(
    words: readonly SearchWord[],
    descending: boolean,
    after: Id | null,
    offset: number,
    limit: number,
  ): Promise<Id[]> {
    const terms = await this.terms(words)
    if (!terms) return []
    await this.knowWholes(terms.flatMap((t) => this.relatedOf(t)))
    const ids = await this.scans.inIdOrder(
      (params) => this.search.termsCondition(terms, this.whole, params),
      (params) => this.other(params),
      {
        descending,
        after,
        want: offset + limit,
      },
    )
    return ids.slice(offset, offset + limit)
  }

  /**
   * A window in the order of `order` (ORDER BY terms), after a keyset position when `keyset` gives
   * one. With at most `window` matches (`count`, from countUpTo), they are sorted as they are;
   * with more, the order's index is walked and each row tested, which costs about N / matches
   * rows a record: never a sort of every match.
   */
  async sorted(
    words: readonly SearchWord[],
    count: number,
    window: number,
    order: readonly string[],
    keyset: (params: Params) => string[],
    offset: number,
    limit: number,
  ): Promise<Id[]> {
    const terms = await this.terms(words)
    if (!terms || count === 0) return []
    await this.knowWholes(terms.flatMap((t) => this.relatedOf(t)))
    const params = new Params()
    const where = [...this.search.termsCondition(terms, this.whole, params), ...this.other(params), ...keyset(params)]
    const page = `ORDER BY ${order.join(', ')} LIMIT ${params.add(limit)}::bigint OFFSET ${params.add(offset)}::bigint`
    const sql =
      count <= window && !(await this.dense(count, offset + limit))
        ? // MATERIALIZED: the matches are collected by the indexes first, never tested along the order's index.
          `WITH matched AS MATERIALIZED (SELECT * FROM ${this.table}${whereClause(where)}) SELECT "id" FROM matched AS ${this.table} ${page}`
        : `SELECT "id" FROM ${this.table}${whereClause(where)} ${page}`
    return this.ids(await this.run(sql, params.values))
  }

  /**
   * Whether `count` matches are dense enough in the table that walking the order's index finds the
   * first `want` of them in fewer rows than sorting them takes (`the w`, 9,636 of 100,000 books:
   * some 200 rows, where collecting and sorting every match took 100-190 ms).
   */
  private async dense(count: number, want: number): Promise<boolean> {
    const [row] = await this.run(`SELECT max("id") AS top FROM ${this.table}`, [])
    return (want * Number(row?.top ?? 0)) / count <= Math.max(DENSE_WALK, count)
  }

  /** The words' terms, or null when no record can match; read once for a page's count and window. */
  private terms(words: readonly SearchWord[]): Promise<SearchTerm[] | null> {
    const key = searchKey(words)
    let found = this.termsByWords.get(key)
    if (!found) {
      found = this.readTerms(words)
      this.termsByWords.set(key, found)
    }
    return found
  }

  private async readTerms(words: readonly SearchWord[]): Promise<SearchTerm[] | null> {
    const terms = await rankAsync(searchTerms(this.fields, words), this)
    return canMatch(this.fields, terms) ? terms : null
  }

  /**
   * For each request, the words of its vocabulary with its first character and a length in its
   * range: one statement, a column each.
   */
  async near(requests: readonly NearRequest[]): Promise<string[][]> {
    const params = new Params()
    const columns = requests.map(
      ({ field, range }, i) =>
        `ARRAY(SELECT DISTINCT word FROM ${this.search.vocabularyOf(field)} WHERE head = ${params.add(range.head)}::text AND size BETWEEN ${params.add(range.min)}::int AND ${params.add(range.max)}::int) AS n${i}`,
    )
    const [row] = await this.run(`SELECT ${columns.join(', ')}`, params.values)
    return requests.map((_, i) => (row?.[`n${i}`] ?? []) as unknown as string[])
  }

  /** For each request, the ids of the related records its match names, ascending: one statement, a column each. */
  async related(requests: readonly RelatedRequest[]): Promise<Id[][]> {
    const params = new Params()
    const columns = requests.map(
      ({ field, match }, i) => `ARRAY(${this.search.relatedSql(field, match, params)}) AS r${i}`,
    )
    const [row] = await this.run(`SELECT ${columns.join(', ')}`, params.values)
    return requests.map((_, i) => ((row?.[`r${i}`] ?? []) as unknown as (string | number)[]).map(Number))
  }

  /** Every match in the order of `order` (ORDER BY terms): an unpaged list of a sorted search. */
  async allInOrder(words: readonly SearchWord[], order: readonly string[]): Promise<Id[]> {
    const terms = await this.terms(words)
    if (!terms) return []
    await this.knowWholes(terms.flatMap((t) => this.relatedOf(t)))
    const params = new Params()
    const where = [...this.search.termsCondition(terms, this.whole, params), ...this.other(params)]
    // One row holding the array: 100,000 ids as one value, not 100,000 rows.
    const [row] = await this.run(
      `SELECT COALESCE(array_agg(${this.table}."id" ORDER BY ${order.join(', ')}), '{}') AS ids FROM ${this.table}${whereClause(where)}`,
      params.values,
    )
    return ((row?.ids ?? []) as unknown as (string | number)[]).map(Number)
  }

  /** How many rows match, no further than `cap`. */
  async count(terms: readonly SearchTerm[], cap: number): Promise<number> {
    await this.knowWholes(terms.flatMap((t) => this.relatedOf(t)))
    return this.scans.count(
      (params) => [...this.search.termsCondition(terms, this.whole, params), ...this.other(params)],
      cap,
    )
  }

  /** The first `limit` ids of one tier, ascending. */
  async first(conjunction: Conjunction, limit: number): Promise<Id[]> {
    await this.knowWholes([...conjunction.related])
    return this.scans.inIdOrder(
      (params) => this.search.conjunctionWords(conjunction, params),
      (params) => [...this.search.conjunctionRefs(conjunction, this.whole, params), ...this.other(params)],
      { descending: false, after: null, want: limit },
    )
  }

  /** Every match with its references, and per word the attribute fields it matches in each. */
  async matches(terms: readonly SearchTerm[]): Promise<SearchMatch[]> {
    await this.knowWholes(terms.flatMap((t) => this.relatedOf(t)))
    const params = new Params()
    const where = [...this.search.termsCondition(terms, this.whole, params), ...this.other(params)]
    const references = this.search.references()
    const hits = this.search.hits(terms, params)
    // One row of arrays: 100,000 matches as a few values, not 100,000 rows.
    const columns = [
      `COALESCE(array_agg(${this.table}."id" ORDER BY ${this.table}."id"), '{}') AS ids`,
      ...references.map(([, column], i) => `array_agg(${column} ORDER BY ${this.table}."id") AS r${i}`),
      ...hits.map((bits, w) => `array_agg(${bits} ORDER BY ${this.table}."id") AS h${w}`),
    ]
    const [row] = await this.run(`SELECT ${columns.join(', ')} FROM ${this.table}${whereClause(where)}`, params.values)
    const ids = ((row?.ids ?? []) as unknown as (string | number)[]).map(Number)
    const refs = references.map((_, i) => (row?.[`r${i}`] ?? []) as unknown as (string | number | null)[])
    const bits = hits.map((_, w) => (row?.[`h${w}`] ?? []) as unknown as number[])
    return ids.map((id, n) => {
      const byField: (Id | null | undefined)[] = this.fields.map(() => undefined)
      references.forEach(([f], i) => {
        const ref = refs[i]?.[n]
        byField[f] = ref === null || ref === undefined ? null : Number(ref)
      })
      return { id, refs: byField, hits: bits.map((list) => Number(list[n] ?? 0)) }
    })
  }

  /** The related id lists of a term, by field. */
  private relatedOf(term: SearchTerm): [number, readonly Id[]][] {
    return term.related.flatMap((ids, f) => (ids && ids.length > 0 ? [[f, ids] as [number, readonly Id[]]] : []))
  }

  /** Finds out which of these id lists are every record of a required relationship's target. */
  private async knowWholes(lists: readonly (readonly [number, readonly Id[]])[]): Promise<void> {
    for (const [f, ids] of lists) {
      const key = `${f}:${ids.length}`
      const target = this.search.target(f)
      if (!target.required || this.wholes.has(key)) continue
      const params = new Params()
      const [row] = await this.run(
        `SELECT COUNT(*)::int AS count FROM (SELECT 1 FROM ${target.table} LIMIT ${params.add(ids.length + 1)}::bigint) AS c`,
        params.values,
      )
      this.wholes.set(key, Number(row?.count) === ids.length)
    }
  }

  private readonly whole = (field: number, ids: readonly Id[]): boolean =>
    this.wholes.get(`${field}:${ids.length}`) === true

  private ids(rows: readonly Row[]): Id[] {
    return rows.map((row) => Number(row.id))
  }
}
