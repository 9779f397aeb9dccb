import type { Id } from '../../model/record'
import { type Row, whereClause } from '../sql/table'
import { Params } from './search'

/** Runs one statement in the read's snapshot. */
export type RunSql = (sql: string, values: readonly unknown[]) => Promise<Row[]>

/**
 * Rows a read in id order tests one by one before it turns to the indexes: 4,096 rows cost about
 * 1 ms at 1,000,000 books. A page whose matches are denser than 1 in 200 is found there; rarer
 * ones are read from the GIN index, whose cost follows the matches, few by then.
 */
const HEAD_ROWS = 4096

/**
 * How a search's rows are found in one table. PostgreSQL's planner guesses every prefix query at
 * 2% of the rows, so it cannot tell `book` (every title) from `zzzz` (none): it would walk the
 * primary key to the end for the one, or collect a million matches of the GIN index for the
 * other. These scans choose for it, from what the first rows hold.
 */
export class PostgresScans {
  constructor(
    private readonly run: RunSql,
    /** The table, quoted. */
    private readonly table: string,
  ) {}

  /**
   * How many rows match, no further than `cap`. The first HEAD_ROWS rows of the table as stored
   * tell how densely: a walk of the table as stored (a sequential scan, about 0.5 µs a row) reaches
   * the cap after cap / density rows, the indexes list about density × N entries; the cheaper is
   * taken. A walk that falls short (the matches were denser at the start) counts again through
   * the indexes.
   */
  async count(matching: (params: Params) => string[], cap: number): Promise<number> {
    const sample = new Params()
    const [row] = await this.run(
      `SELECT (SELECT COUNT(*)::int FROM ${this.stored(HEAD_ROWS, sample)}${whereClause(matching(sample))}) AS head,
        (SELECT GREATEST(reltuples, 0)::float8 FROM pg_class WHERE oid = ${sample.add(this.table)}::regclass) AS rows`,
      sample.values,
    )
    const density = Number(row?.head ?? 0) / HEAD_ROWS
    const rows = Math.max(Number(row?.rows ?? 0), HEAD_ROWS)
    const counted = async (from: (params: Params) => string) => {
      const params = new Params()
      const sql = `SELECT COUNT(*)::int AS count FROM (SELECT 1 FROM ${from(params)}${whereClause(matching(params))} LIMIT ${params.add(cap)}::bigint) AS counted`
      return Number((await this.run(sql, params.values))[0]?.count ?? 0)
    }
    if (density * density * rows > cap) {
      const walked = await counted((params) => this.stored(Math.ceil((2 * cap) / density), params))
      if (walked >= cap) return walked
    }
    return counted(() => this.table)
  }

  /**
   * The first `rows` rows of the table as stored, named as the table so that conditions on it
   * apply: the LIMIT keeps the planner from pushing them into the scan, which thus reads no more.
   */
  private stored(rows: number, params: Params): string {
    return `(SELECT * FROM ${this.table} LIMIT ${params.add(rows)}::bigint) AS ${this.table}`
  }

  /**
   * The first `want` matching ids in id order (after `after`). First among the next HEAD_ROWS
   * rows, tested one by one; what is still missing comes from past them, through the indexes:
   * along the references' when they are rarer than the words among the head's rows (`book` in
   * the title by author 7: the GIN index would list every title, 140 ms at 1,000,000 books), else
   * along the GIN index's.
   */
  async inIdOrder(
    words: (params: Params) => string[],
    refs: (params: Params) => string[],
    { descending, after, want }: { descending: boolean; after: Id | null; want: number },
  ): Promise<Id[]> {
    if (want <= 0) return []
    const direction = descending ? 'DESC' : 'ASC'
    const beyond = (params: Params) => (after === null ? '' : `"id" ${descending ? '<' : '>'} ${params.add(after)}`)
    const params = new Params()
    const where = [...words(params), ...refs(params)]
    if (where.includes('FALSE')) return []
    const head = this.head(beyond(params), params, direction)
    const found = this.ids(
      await this.run(
        `SELECT "id" FROM ${head}${whereClause(where)} ORDER BY "id" ${direction} LIMIT ${params.add(want)}::bigint`,
        params.values,
      ),
    )
    if (found.length >= want) return found
    const narrow = await this.refsRarer(words, refs, beyond, direction)
    const rest = new Params()
    const past = `${this.table}."id" ${descending ? '<' : '>'} (SELECT ${descending ? 'MIN' : 'MAX'}("id") FROM ${this.head(beyond(rest), rest, direction, '"id"')})`
    const [tierWords, tierRefs] = [words(rest), refs(rest)]
    const limit = `LIMIT ${rest.add(want - found.length)}::bigint`
    // OFFSET 0 keeps the words out of the inner scan, which then follows the references' index;
    // "id" + 0 keeps the planner from walking the primary key, to the end when the matches are few.
    const sql = narrow
      ? `SELECT "id" FROM (SELECT * FROM ${this.table}${whereClause([...tierRefs, past])} OFFSET 0) AS ${this.table}${whereClause(tierWords)} ORDER BY "id" ${direction} ${limit}`
      : `SELECT "id" FROM ${this.table}${whereClause([...tierWords, ...tierRefs, past])} ORDER BY "id" + 0 ${direction} ${limit}`
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

  /**
   * The next HEAD_ROWS rows in id order (after `from`), named as the table so that conditions on
   * it apply: a LIMIT keeps the planner from pushing them into the scan, which thus reads no more.
   */
  private head(from: string, params: Params, direction = 'ASC', columns = '*'): string {
    return `(SELECT ${columns} FROM ${this.table}${whereClause(from === '' ? [] : [from])} ORDER BY "id" ${direction} LIMIT ${params.add(HEAD_ROWS)}::bigint) AS ${this.table}`
  }

  private ids(rows: readonly Row[]): Id[] {
    return rows.map((row) => Number(row.id))
  }
}
