import { Params, type PostgresSearch } from './postgres-search'
import type { Id } from './record'
import {
  type Conjunction,
  canMatch,
  type RankedField,
  type RankedWindow,
  rankAll,
  rankAsync,
  rankedWindow,
  type SearchAnswer,
  type SearchMatch,
  type SearchRead,
  type SearchTerm,
  searchTerms,
} from './search-ranking'
import { type Row, whereClause } from './sqlite-table'

/** Runs one statement in the read's snapshot. */
export type RunSql = (sql: string, values: readonly unknown[]) => Promise<Row[]>

/**
 * Rows a read in id order tests one by one before it turns to the indexes: 4,096 rows cost about
 * 1 ms at 1,000,000 books. A page whose matches are denser than 1 in 200 is found there; rarer
 * ones are read from the GIN index, whose cost follows the matches, few by then.
 */
const HEAD_ROWS = 4096

/**
 * The reads of a search over one type's table (what src/store/search-ranking.ts asks), all through
 * `run`, in one snapshot. PostgreSQL's planner guesses every prefix query at 2% of the rows, so
 * it cannot tell `book` (every title) from `zzzz` (none): it would walk the primary key to the end
 * for the one, or collect a million matches of the GIN index for the other. The reads choose for
 * it, from what the first rows hold: a page in id order is looked for among the first HEAD_ROWS
 * rows, and only when it is not there read from the indexes; a capped count walks the rows in id
 * order when they match densely enough to reach the cap sooner than the index would list them.
 */
export class PostgresSearchReads {
  /** `${field}:${n}`: whether n ids are every record of the field's target. */
  private readonly wholes = new Map<string, boolean>()

  constructor(
    private readonly run: RunSql,
    /** The table, quoted. */
    private readonly table: string,
    private readonly search: PostgresSearch,
    private readonly fields: readonly RankedField[],
    /** The list's other filters, as conditions on the table. */
    private readonly other: (params: Params) => string[],
  ) {}

  /** A window of the search ranked, and its total (capped at SEARCH_WINDOW). */
  ranked(words: readonly string[], offset: number, limit: number): Promise<RankedWindow> {
    return rankAsync(rankedWindow(this.fields, words, offset, limit), (read) => this.answer(read))
  }

  /** Every match, ranked. */
  rankedIds(words: readonly string[]): Promise<Id[]> {
    return rankAsync(rankAll(this.fields, words), (read) => this.answer(read))
  }

  /** How many records match, counted no further than `cap`. */
  async countUpTo(words: readonly string[], cap: number): Promise<number> {
    const terms = await this.terms(words)
    return terms ? this.count(terms, cap) : 0
  }

  /** A window in id order (a cursor page, or a search sorted by id), after `after` when given. */
  async byId(
    words: readonly string[],
    descending: boolean,
    after: Id | null,
    offset: number,
    limit: number,
  ): Promise<Id[]> {
    const terms = await this.terms(words)
    if (!terms) return []
    await this.knowWholes(terms.flatMap((t) => this.relatedOf(t)))
    const ids = await this.inIdOrder(
      (params) => this.search.termsCondition(terms, this.whole, params),
      () => [],
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
    words: readonly string[],
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
      count <= window
        ? // MATERIALIZED: the matches are collected by the indexes first, never tested along the order's index.
          `WITH matched AS MATERIALIZED (SELECT * FROM ${this.table}${whereClause(where)}) SELECT "id" FROM matched AS ${this.table} ${page}`
        : `SELECT "id" FROM ${this.table}${whereClause(where)} ${page}`
    return this.ids(await this.run(sql, params.values))
  }

  private answer(read: SearchRead): Promise<SearchAnswer> {
    switch (read.kind) {
      case 'related':
        return this.related(read.field, read.word)
      case 'count':
        return this.count(read.terms, read.cap)
      case 'matches':
        return this.matches(read.terms)
      case 'first':
        return this.first(read.conjunction, read.limit)
    }
  }

  /** The words' terms, or null when no record can match. */
  private async terms(words: readonly string[]): Promise<SearchTerm[] | null> {
    const plan = searchTerms(this.fields, words)
    let step = plan.next()
    while (!step.done) {
      const read = step.value
      step = plan.next(read.kind === 'related' ? await this.related(read.field, read.word) : [])
    }
    return canMatch(this.fields, step.value) ? step.value : null
  }

  private async related(field: number, word: string): Promise<Id[]> {
    const params = new Params()
    const rows = await this.run(`SELECT ARRAY(${this.search.relatedSql(field, word, params)}) AS ids`, params.values)
    return ((rows[0]?.ids ?? []) as unknown as (string | number)[]).map(Number)
  }

  /**
   * How many rows match, no further than `cap`. The first HEAD_ROWS rows tell how densely: a
   * walk in id order costs cap / density rows, the indexes about density × N entries; the
   * cheaper is taken, and a walk that falls short goes on by the indexes past where it stopped.
   */
  private async count(terms: readonly SearchTerm[], cap: number): Promise<number> {
    await this.knowWholes(terms.flatMap((t) => this.relatedOf(t)))
    const matching = (params: Params) => [
      ...this.search.termsCondition(terms, this.whole, params),
      ...this.other(params),
    ]
    const sample = new Params()
    const [row] = await this.run(
      `SELECT (SELECT COUNT(*)::int FROM ${this.head('', sample)}${whereClause(matching(sample))}) AS head,
        (SELECT GREATEST(reltuples, 0)::float8 FROM pg_class WHERE oid = ${sample.add(this.table)}::regclass) AS rows`,
      sample.values,
    )
    const density = Number(row?.head ?? 0) / HEAD_ROWS
    const rows = Math.max(Number(row?.rows ?? 0), HEAD_ROWS)
    if (density * density * rows <= cap) {
      const params = new Params()
      const sql = `SELECT COUNT(*)::int AS count FROM (SELECT 1 FROM ${this.table}${whereClause(matching(params))} LIMIT ${params.add(cap)}::bigint) AS counted`
      return Number((await this.run(sql, params.values))[0]?.count ?? 0)
    }
    const walk = Math.ceil((2 * cap) / density)
    const params = new Params()
    const walked = `(SELECT * FROM ${this.table} ORDER BY "id" LIMIT ${params.add(walk)}::bigint) AS ${this.table}`
    const last = `(SELECT MAX("id") FROM (SELECT "id" FROM ${this.table} ORDER BY "id" LIMIT ${params.add(walk)}::bigint) AS walked)`
    const capParam = params.add(cap)
    const head = `SELECT COUNT(*)::int AS n FROM (SELECT 1 FROM ${walked}${whereClause(matching(params))} LIMIT ${capParam}::bigint) AS counted`
    const tail = `SELECT COUNT(*)::int FROM (SELECT 1 FROM ${this.table}${whereClause([...matching(params), `${this.table}."id" > ${last}`])} LIMIT ${capParam}::bigint - head.n) AS counted`
    const [counted] = await this.run(
      `SELECT head.n + CASE WHEN head.n < ${capParam}::bigint THEN (${tail}) ELSE 0 END AS count FROM (${head}) AS head`,
      params.values,
    )
    return Number(counted?.count ?? 0)
  }

  /** The first `limit` ids of one tier, ascending. */
  private async first(conjunction: Conjunction, limit: number): Promise<Id[]> {
    await this.knowWholes([...conjunction.related])
    return this.inIdOrder(
      (params) => this.search.conjunctionWords(conjunction, params),
      (params) => this.search.conjunctionRefs(conjunction, this.whole, params),
      { descending: false, after: null, want: limit },
    )
  }

  /**
   * The first `want` matching ids in id order (after `after`). First among the next HEAD_ROWS
   * rows, tested one by one; what is still missing comes from past them, through the indexes:
   * along the references' when they are rarer than the words among the head's rows (`book` in
   * the title by author 7: the GIN index would list every title, 140 ms at 1,000,000 books), else
   * along the GIN index's.
   */
  private async inIdOrder(
    words: (params: Params) => string[],
    refs: (params: Params) => string[],
    { descending, after, want }: { descending: boolean; after: Id | null; want: number },
  ): Promise<Id[]> {
    if (want <= 0) return []
    const direction = descending ? 'DESC' : 'ASC'
    const beyond = (params: Params) => (after === null ? '' : `"id" ${descending ? '<' : '>'} ${params.add(after)}`)
    const params = new Params()
    const where = [...words(params), ...refs(params), ...this.other(params)]
    if (where.includes('FALSE')) return []
    const head = this.head(beyond(params), params, direction)
    const found = this.ids(
      await this.run(
        `SELECT "id" FROM ${head}${whereClause(where)} ORDER BY "id" ${direction} LIMIT ${params.add(want)}::bigint`,
        params.values,
      ),
    )
    if (found.length >= want) return found
    const narrow = await this.refsRarer(words, (p) => [...refs(p), ...this.other(p)], beyond, direction)
    const rest = new Params()
    const past = `${this.table}."id" ${descending ? '<' : '>'} (SELECT ${descending ? 'MIN' : 'MAX'}("id") FROM ${this.head(beyond(rest), rest, direction, '"id"')})`
    const [tierWords, tierRefs, others] = [words(rest), refs(rest), this.other(rest)]
    const limit = `LIMIT ${rest.add(want - found.length)}::bigint`
    // OFFSET 0 keeps the words out of the inner scan, which then follows the references' index;
    // "id" + 0 keeps the planner from walking the primary key, to the end when the matches are few.
    const sql = narrow
      ? `SELECT "id" FROM (SELECT * FROM ${this.table}${whereClause([...tierRefs, ...others, past])} OFFSET 0) AS ${this.table}${whereClause(tierWords)} ORDER BY "id" ${direction} ${limit}`
      : `SELECT "id" FROM ${this.table}${whereClause([...tierWords, ...tierRefs, ...others, past])} ORDER BY "id" + 0 ${direction} ${limit}`
    return [...found, ...this.ids(await this.run(sql, rest.values))]
  }

  /**
   * Whether the references (with the other filters) hold in fewer of the head's rows than the
   * words: the rest is then read along the references' index, else along the words' GIN index.
   * Either costs about its share of the rows past the head.
   */
  private async refsRarer(
    words: (params: Params) => string[],
    refs: (params: Params) => string[],
    beyond: (params: Params) => string,
    direction: string,
  ): Promise<boolean> {
    const params = new Params()
    const [wordConditions, refConditions] = [words(params), refs(params)]
    if (wordConditions.length === 0 || refConditions.length === 0) return false
    const all = (conditions: string[]) => conditions.map((c) => `(${c})`).join(' AND ')
    const [row] = await this.run(
      `SELECT COUNT(*) FILTER (WHERE ${all(wordConditions)})::int AS words, COUNT(*) FILTER (WHERE ${all(refConditions)})::int AS refs
        FROM ${this.head(beyond(params), params, direction)}`,
      params.values,
    )
    return Number(row?.refs ?? 0) < Number(row?.words ?? 0)
  }

  /** Every match with its references, and per word the attribute fields it matches in each. */
  private async matches(terms: readonly SearchTerm[]): Promise<SearchMatch[]> {
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

  /**
   * The next HEAD_ROWS rows in id order (after `from`), named as the table so that conditions on
   * it apply: a LIMIT keeps the planner from pushing them into the scan, which thus reads no more.
   */
  private head(from: string, params: Params, direction = 'ASC', columns = '*'): string {
    return `(SELECT ${columns} FROM ${this.table}${whereClause(from === '' ? [] : [from])} ORDER BY "id" ${direction} LIMIT ${params.add(HEAD_ROWS)}::bigint) AS ${this.table}`
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
