import type { Statement } from 'bun:sqlite'
import type { SortKey } from '../../model/query'
import type { Id } from '../../model/record'
import { type SearchWord, searchKey } from '../../model/search-words'
import { textWords } from '../../model/typos'
import {
  type Conjunction,
  type RankedWindow,
  rankAll,
  rankedWindow,
  SEARCH_WINDOW,
  type SearchMatch,
} from '../search-ranking'
import { rankSync } from '../search-runs'
import {
  attributeLevels,
  hitBit,
  type NearRequest,
  type RankedField,
  type RelatedRequest,
  type SearchTerm,
  searchTerms,
  wordMatch,
} from '../search-terms'
import { foldedMatch, holds, termTest } from '../search-text-match'
import { type Bindings, type Row, type Table, whereClause } from '../sql/table'
import type { SqliteSearch } from './search'
import { MANY_IDS, type OtherConditions, type SearchCondition, SqliteSearchConditions } from './search-conditions'

/** Rows a sorted search walks before it marks its matches instead (see walkInOrder): some 30 ms. */
const WALK_BUDGET = 20_000

/**
 * Rows a sorted search walks, whatever its matches, before it would rather sort them (see sorted):
 * past it, it walks only when the rows to walk are fewer than the matches to sort.
 */
const DENSE_WALK = 2_000

/**
 * The reads of a search over one type's FTS5 index. Every read starts from the index (FTS5 hands
 * out its matches in rowid order, and stops when the reader does) and joins the table only for
 * the other filters: `id IN (SELECT rowid ... MATCH ...)` would first collect every match.
 * Measured at 1,000,000 books: the first 20 of `book` (every title) in 15 ms, its capped count in
 * 29 ms, against 895 ms for the bm25 ranking of every match that this replaces.
 */
export class SqliteSearchReads {
  private termsRead?: { readonly key: string; readonly terms: SearchTerm[] | null }
  /** The search as SQL: its index query, its conditions on the table, where a read starts. */
  private readonly conditions: SqliteSearchConditions

  constructor(
    private readonly statement: (sql: string) => Statement<Row, Bindings>,
    private readonly table: Table,
    private readonly search: SqliteSearch,
    private readonly fields: readonly RankedField[],
    private readonly other: OtherConditions,
    /** FTS5 terms of the list's filters on searched relationships: the index applies them itself. */
    private readonly folded: string,
  ) {
    this.conditions = new SqliteSearchConditions(statement, table, search, other, folded)
  }

  /** A window of the search ranked, and its total (capped at SEARCH_WINDOW). */
  ranked(words: readonly SearchWord[], offset: number, limit: number): RankedWindow {
    return rankSync(rankedWindow(this.fields, words, offset, limit), this)
  }

  /** Every match, ranked. */
  rankedIds(words: readonly SearchWord[]): Id[] {
    return rankSync(rankAll(this.fields, words), this)
  }

  /** How many records match, counted no further than `cap`. */
  countUpTo(words: readonly SearchWord[], cap: number): number {
    const terms = this.terms(words)
    return terms ? this.count(terms, cap) : 0
  }

  /**
   * A window in id order (a cursor page of a search, or a search sorted by id): FTS5 gives its
   * matches in rowid order and starts at the cursor, so a page costs the same at any depth.
   */
  byId(words: readonly SearchWord[], descending: boolean, after: Id | null, offset: number, limit: number): Id[] {
    const condition = this.condition(words)
    if (!condition) return []
    const { from, where, params, rowid } = this.conditions.source(condition.expression, condition)
    if (after !== null) {
      where.push(`${rowid} ${descending ? '<' : '>'} ?`)
      params.push(after)
    }
    const sql = `SELECT ${rowid} AS id FROM ${from}${whereClause(where)} ORDER BY ${rowid} ${descending ? 'DESC' : 'ASC'} LIMIT ? OFFSET ?`
    return this.ids(sql, [...params, limit, offset])
  }

  /**
   * A window in an attribute's order. At most SEARCH_WINDOW matches are sorted as they are; more
   * are marked in a bitmap (one pass over the index, about 150 ms at 1,000,000 matches) and the
   * order's own index is walked until the window is full, which takes about N / matches rows a
   * record: never a sort of every match.
   */
  sorted(
    words: readonly SearchWord[],
    sort: readonly SortKey[],
    keyset: OtherConditions | null,
    offset: number,
    limit: number,
    /** The search's count up to SEARCH_WINDOW + 1, as the caller read it for the page's total. */
    count: number,
  ): Id[] {
    const condition = this.condition(words)
    if (!condition) return []
    const order = this.table.orderTerms(sort)
    const where = [...this.other.where, ...(keyset?.where ?? []), ...condition.where]
    const params = [...this.other.params, ...(keyset?.params ?? []), ...condition.params]
    const query = [condition.expression, this.folded].filter((part) => part !== '').join(' AND ')
    const walk = `SELECT ${this.table.name}."id" AS id FROM ${this.table.name}`
    const plainWalk = () =>
      this.ids(`${walk}${whereClause(where)} ORDER BY ${order.join(', ')} LIMIT ? OFFSET ?`, [...params, limit, offset])
    // Every row matches: the order's index walked as a plain list.
    if (query === '' && condition.where.length === 0) return plainWalk()
    const index = this.search.index
    const matching = `SELECT rowid FROM ${index} WHERE ${index} MATCH ?`
    // Matches dense in the table: walking the order's index finds the window in fewer rows than
    // the matches are (`the w`, 9,636 of 100,000 books: 41 ms sorted, some 300 rows walked;
    // `utwhie the`, 6,757 of 1,000,000: 205 ms sorted, some 3,000 rows to walk).
    const top = this.statement(`SELECT MAX("id") AS top FROM ${this.table.name}`).get()?.top as number | null
    const toWalk = count > 0 ? ((offset + limit) * (top ?? 0)) / count : Number.POSITIVE_INFINITY
    const walkFirst = toWalk <= Math.max(DENSE_WALK, count)
    if (walkFirst && this.folded === '') {
      const walked = this.walkInOrder(this.terms(words) ?? [], order, keyset, offset, limit)
      if (walked) return walked
    }
    if (count <= SEARCH_WINDOW) {
      // `+` keeps SQLite from walking the order's index to test each row against the matches.
      const matched = query === '' ? [] : [`${this.table.name}."id" IN (${matching})`]
      const sql = `${walk}${whereClause([...matched, ...where])} ORDER BY ${order.map((term) => `+${term}`).join(', ')} LIMIT ? OFFSET ?`
      return this.ids(sql, [...(query === '' ? [] : [query]), ...params, limit, offset])
    }
    if (!walkFirst && this.folded === '') {
      const walked = this.walkInOrder(this.terms(words) ?? [], order, keyset, offset, limit)
      if (walked) return walked
    }
    // Words that name only many related records mark no matches in the index: the conditions test each row.
    if (query === '') return plainWalk()
    const matched = new Uint8Array((top ?? 0) + 1)
    for (const row of this.statement(`${matching.replace('SELECT rowid', 'SELECT rowid AS id')}`).iterate(query)) {
      matched[row.id as number] = 1
    }
    const found: Id[] = []
    let skipped = 0
    for (const row of this.statement(`${walk}${whereClause(where)} ORDER BY ${order.join(', ')}`).iterate(...params)) {
      if (matched[row.id as number] !== 1) continue
      if (skipped < offset) skipped++
      else if (found.push(row.id as Id) === limit) break
    }
    return found
  }

  /**
   * A window of a search that matches more than SEARCH_WINDOW records, in a sort order: the order's
   * index walked, each row tested here against the words by the rules the index matches by
   * (src/model/typos.ts), until the window is full. With 1 in 1,000 rows matching or more, a page of
   * 20 reads at most some 20,000 rows, and one in most titles a few dozen: no pass over every
   * match. Null past WALK_BUDGET rows (a deep page), for the bitmap of the matches instead.
   */
  private walkInOrder(
    terms: readonly SearchTerm[],
    order: readonly string[],
    keyset: OtherConditions | null,
    offset: number,
    limit: number,
  ): Id[] | null {
    const refs = this.search.relatedColumns()
    const texts = this.search.attributeColumns()
    const columns = [
      ...refs.map(([, column], i) => `, ${this.table.name}.${column} AS r${i}`),
      ...texts.map(([, column], i) => `, ${this.table.name}.${column} AS t${i}`),
    ].join('')
    const tests = terms.flatMap((term) => {
      const test = termTest(term, this.fields, refs, texts, this.conditions.whole)
      return test ? [test] : []
    })
    const where = [...this.other.where, ...(keyset?.where ?? [])]
    const params = [...this.other.params, ...(keyset?.params ?? [])]
    const sql = `SELECT ${this.table.name}."id" AS id${columns} FROM ${this.table.name}${whereClause(where)} ORDER BY ${order.join(', ')}`
    const found: Id[] = []
    let skipped = 0
    let walked = 0
    for (const row of this.statement(sql).iterate(...params)) {
      if (++walked > WALK_BUDGET) return null
      const words = texts.map((_, i) => textWords(String(row[`t${i}`] ?? '')))
      const references = refs.map((_, i) => row[`r${i}`] as Id | null)
      if (!tests.every((test) => test(references, words))) continue
      if (skipped < offset) skipped++
      else if (found.push(row.id as Id) === limit) break
    }
    return found
  }

  /** The search's condition (see conditionOf); null when nothing can match. */
  condition(words: readonly SearchWord[]): SearchCondition | null {
    const terms = this.terms(words)
    return terms ? this.conditions.conditionOf(terms) : null
  }

  /**
   * The words' terms, or null when no record can match (a word that names nothing anywhere): read
   * once per list, for its count and then its window.
   */
  private terms(words: readonly SearchWord[]): SearchTerm[] | null {
    const key = searchKey(words)
    if (this.termsRead?.key === key) return this.termsRead.terms
    const terms = rankSync(searchTerms(this.fields, words), this)
    const found = this.conditions.conditionOf(terms) === null ? null : terms
    this.termsRead = { key, terms: found }
    return found
  }

  /** For each request, the words of its vocabulary with its first character and a length in its range. */
  near(requests: readonly NearRequest[]): string[][] {
    return requests.map(({ field, range }) =>
      this.statement(`SELECT word FROM ${this.search.vocabularyOf(field)} WHERE head = ? AND size BETWEEN ? AND ?`)
        .values(range.head, range.min, range.max)
        .map(([word]) => word as string),
    )
  }

  /** For each request, the ids of the related records its match names, ascending. */
  related(requests: readonly RelatedRequest[]): Id[][] {
    return requests.map(({ field, match }) => {
      const index = this.search.relatedIndex(field)
      return this.ids(`SELECT rowid AS id FROM ${index} WHERE ${index} MATCH ?`, [this.search.matchQuery(match)])
    })
  }

  count(terms: readonly SearchTerm[], cap: number): number {
    const condition = this.conditions.conditionOf(terms)
    if (condition === null) return 0
    const { from, where, params } = this.conditions.source(condition.expression, condition)
    const sql = `SELECT COUNT(*) AS count FROM (SELECT 1 FROM ${from}${whereClause(where)} LIMIT ?)`
    return (this.statement(sql).get(...params, cap)?.count as number) ?? 0
  }

  first(conjunction: Conjunction, limit: number): Id[] {
    const parts = this.search.conjunctionParts(conjunction, this.conditions.whole, MANY_IDS)
    const { from, where, params, rowid } = this.conditions.source(parts.expression, {
      where: parts.where,
      params: parts.params as Bindings,
    })
    return this.ids(`SELECT ${rowid} AS id FROM ${from}${whereClause(where)} ORDER BY ${rowid} LIMIT ?`, [
      ...params,
      limit,
    ])
  }

  /**
   * Every match with its references, and per word the attribute fields it matches in each, found
   * from the attributes' text by the rules the index matches by (src/model/typos.ts): one read of
   * the matches, not one more pass over the index per word, field and typo level.
   */
  matches(terms: readonly SearchTerm[]): SearchMatch[] {
    const condition = this.conditions.conditionOf(terms)
    if (condition === null) return []
    const refColumns = this.search.relatedColumns()
    const textColumns = this.search.attributeColumns()
    const columns = [...refColumns, ...textColumns].map(([, column]) => `, ${this.table.name}.${column}`).join('')
    const { where, params, rowid } = this.conditions.source(condition.expression, condition)
    const joined =
      rowid === `${this.table.name}."id"`
        ? this.table.name
        : `${this.search.index} CROSS JOIN ${this.table.name} ON ${this.table.name}."id" = ${rowid}`
    const rows = this.statement(
      `SELECT ${rowid} AS id${columns} FROM ${joined}${whereClause(where)} ORDER BY ${rowid}`,
    ).values(...params)
    const checks = terms.map((term) =>
      textColumns.map(([f]) => {
        const field = this.fields[f] as RankedField
        return attributeLevels(term, field).map((typos) => ({
          f,
          typos,
          match: foldedMatch(wordMatch(term, field, typos)),
        }))
      }),
    )
    return rows.map((row) => {
      const byField: (Id | null | undefined)[] = this.fields.map(() => undefined)
      refColumns.forEach(([f], i) => {
        byField[f] = (row[i + 1] as Id | null) ?? null
      })
      const words = textColumns.map((_, i) => textWords(String(row[1 + refColumns.length + i] ?? '')))
      const hits = checks.map((byColumn) => {
        let bits = 0
        byColumn.forEach((levels, i) => {
          for (const { f, typos, match } of levels) if (holds(match, words[i] ?? [])) bits |= hitBit(f, typos)
        })
        return bits
      })
      return { id: row[0] as Id, refs: byField, hits }
    })
  }

  private ids(sql: string, params: Bindings): Id[] {
    return this.statement(sql)
      .values(...params)
      .map(([id]) => id as Id)
  }
}
