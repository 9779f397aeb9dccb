import type { ResourceDescription } from '../resources/description'
import type { ResourceRegistry, SearchDescription } from '../resources/registry'
import { searchOf } from '../resources/registry'
import { searchColumnName, searchedColumns } from './postgres-search-columns'
import { narrowingWords, searchWords } from './sqlite-search'
import { quote } from './sqlite-table'

/** Collects a statement's parameters and hands out their `$n` placeholders. */
export class Params {
  readonly values: unknown[] = []
  add(value: unknown): string {
    this.values.push(value)
    return `$${this.values.length}`
  }
}

/** One searched field: an attribute's column, or a to-one relationship matched in its target's names. */
type SearchColumn =
  | {
      readonly kind: 'attribute'
      readonly column: string
      /** Its stored search words (migration 9). */
      readonly words: string
      readonly weight: number
    }
  | {
      readonly kind: 'related'
      readonly column: string
      readonly weight: number
      readonly targetTable: string
      /** The stored search words of the target's own searched attributes. */
      readonly targetColumns: readonly string[]
    }

/**
 * `filter[search]` of one type in PostgreSQL terms, with the semantics of the SQLite store's
 * (src/store/sqlite-search.ts): the words of the text, each a prefix, case and accents folded
 * (search_vector / search_prefix of the migrations); every word must match one of the search
 * fields: an attribute of the type, or the searched name of a related record. A related record's
 * name is matched in its own table (by the GIN index on it), never copied into the type's rows.
 * Relevance: FTS5's bm25, as over SQLite (`ranking`).
 */
export class PostgresSearch {
  private readonly columns: SearchColumn[]

  /** The table's name unquoted, as search_totals holds it. */
  private readonly tableName: string

  constructor(
    private readonly table: string,
    resource: ResourceDescription,
    search: SearchDescription,
    registry: ResourceRegistry,
  ) {
    this.tableName = resource.table
    this.columns = search.fields.map((field): SearchColumn => {
      if ('attribute' in field) {
        const column = resource.attributes[field.attribute]?.column ?? field.attribute
        return {
          kind: 'attribute',
          column: quote(column),
          words: quote(searchColumnName(column)),
          weight: field.weight,
        }
      }
      const relationship = resource.relationships[field.relationship]
      if (relationship?.kind !== 'to-one') throw new Error(`${resource.type}.${field.relationship} is not to-one`)
      const target = registry.get(relationship.target)
      const targetSearch = searchOf(target)
      if (!targetSearch) throw new Error(`${target.type} has no search`)
      return {
        kind: 'related',
        column: quote(relationship.column),
        weight: field.weight,
        targetTable: quote(target.table),
        targetColumns: searchedColumns(target).map((c) => quote(searchColumnName(c))),
      }
    })
  }

  /** The words that narrow the search; none: nothing matches. */
  words(text: string): string[] {
    return narrowingWords(searchWords(text))
  }

  /** The condition that every word matches some field; FALSE when there are no words. */
  condition(words: readonly string[], params: Params): string {
    if (words.length === 0) return 'FALSE'
    const terms = words.map((word) => {
      const query = `search_prefix(${params.add(word)})`
      const alternatives = this.columns.map((column) => {
        if (column.kind === 'attribute') return `${this.table}.${column.words} @@ ${query}`
        const names = column.targetColumns.map((c) => `${c} @@ ${query}`).join(' OR ')
        // = ANY(ARRAY(...)): the related ids are read once (an InitPlan) and the row's column is then
        // matched by its index, OR'ed with the others' bitmap scans; `IN (SELECT ...)` inside an OR
        // defeats the indexes and reads every row (60 ms against 1.8 ms on 10,000 books).
        return `${this.table}.${column.column} = ANY(ARRAY(SELECT "id" FROM ${column.targetTable} WHERE ${names}))`
      })
      return `(${alternatives.join(' OR ')})`
    })
    return terms.join(' AND ')
  }

  /**
   * Relevance, higher first: FTS5's bm25 as the SQLite store's index computes it, so that ranked
   * lists come in the same order on both backends, ties included. FTS5 scores a row by the phrases
   * of its query (src/store/sqlite-search.ts): per word, one for the word as a prefix of the
   * attributes, then one per related record whose names match it, as a token of the
   * relationship's column. A phrase adds IDF × f × (k1 + 1) / (f + k1 × (1 - b + b × D / avgdl))
   * (bm25_idf, bm25_term of migration 3): N rows and avgdl from search_totals, n the rows holding
   * the phrase, f the weights of its occurrences in the row, D the row's tokens. A row holds at
   * most one related record per relationship, so only that one's phrase adds anything (the others
   * add 0, which leaves a float8 sum as it is); the sum runs in phrase order, as FTS5's loop does.
   *
   * Everything that depends only on the search is computed once: N, avgdl and the attribute
   * phrases' IDFs (one row, `bm25_search`), and per word and relationship the related records
   * that match with their row counts (`GROUP BY`, joined by the row's reference). Per row, one
   * pass over its words counts D and every word's occurrences.
   *
   * A table with no rows (fresh, or all deleted) has N = 0: avgdl is then NULL, not a division by
   * zero, since bm25_search is computed even when no row matches; no row can need it then.
   */
  ranking(words: readonly string[], params: Params): Ranking {
    // A constant, not the literal 0, which ORDER BY would read as a column's position.
    if (words.length === 0) return { with: '', join: '', score: '0::float8' }
    const attributes = this.columns.filter((c) => c.kind === 'attribute')
    const name = params.add(this.tableName)
    const ctes = [
      `bm25_search AS MATERIALIZED (SELECT totals.rows AS bm25_rows, totals.words::float8 / NULLIF(totals.rows, 0)::float8 AS bm25_avgdl${words
        .map((word, i) => {
          if (attributes.length === 0) return ''
          const query = `search_prefix(${params.add(word)})`
          const matches = attributes.map((c) => `${c.words} @@ ${query}`).join(' OR ')
          return `, bm25_idf(totals.rows, (SELECT COUNT(*) FROM ${this.table} WHERE ${matches})) AS bm25_idf${i}`
        })
        .join(
          '',
        )} FROM (SELECT SUM(records)::bigint AS rows, SUM(words)::bigint AS words FROM search_totals WHERE table_name = ${name}) AS totals)`,
    ]
    const joins = [`CROSS JOIN bm25_search`]
    // One pass over the row's words: how many (D's share) and how many begin with each search word.
    if (attributes.length > 0) {
      const folds = words.map((word) => `search_fold(${params.add(word)})`)
      const tokens = attributes.map((_, j) => `bm25_t${j}`)
      const counts = folds.map(
        (fold, i) =>
          `, (${attributes.map((c, j) => `${c.weight.toFixed(1)}::float8 * (COUNT(*) FILTER (WHERE starts_with(bm25_t${j}, ${fold})))::float8`).join(' + ')}) AS bm25_f${i}`,
      )
      joins.push(
        `CROSS JOIN LATERAL (SELECT (${tokens.map((t) => `COUNT(${t})`).join(' + ')}) AS bm25_words${counts.join('')} FROM unnest(${attributes.map((c) => `search_words(${this.table}.${c.column})`).join(', ')}) AS bm25_tokens(${tokens.join(', ')})) AS bm25_row`,
      )
    }
    const length = [
      ...(attributes.length > 0 ? ['bm25_row.bm25_words'] : []),
      ...this.columns.filter((c) => c.kind === 'related').map((c) => `(${this.table}.${c.column} IS NOT NULL)::int`),
    ].join(' + ')
    const term = (idf: string, freq: string) =>
      `bm25_term(${idf}, ${freq}, (${length})::float8, bm25_search.bm25_avgdl)`
    const terms: string[] = []
    words.forEach((word, i) => {
      if (attributes.length > 0) terms.push(term(`bm25_search.bm25_idf${i}`, `bm25_row.bm25_f${i}`))
      this.columns.forEach((column, c) => {
        if (column.kind !== 'related') return
        const related = `bm25_r${i}_${c}`
        const names = column.targetColumns.map((t) => `${t} @@ search_prefix(${params.add(word)})`).join(' OR ')
        ctes.push(
          `${related} AS MATERIALIZED (SELECT ${column.column} AS bm25_ref, COUNT(*) AS bm25_hits FROM ${this.table} WHERE ${column.column} IN (SELECT "id" FROM ${column.targetTable} WHERE ${names}) GROUP BY ${column.column})`,
        )
        joins.push(`LEFT JOIN ${related} ON ${related}.bm25_ref = ${this.table}.${column.column}`)
        terms.push(
          `COALESCE(${term(`bm25_idf(bm25_search.bm25_rows, ${related}.bm25_hits)`, `${column.weight.toFixed(1)}::float8`)}, 0::float8)`,
        )
      })
    })
    return {
      with: `WITH ${ctes.join(', ')} `,
      join: ` ${joins.join(' ')}`,
      score: `(0::float8 + ${terms.join(' + ')})`,
    }
  }
}

/** What a ranked list adds to its statement: CTEs before it, joins after its table, and the score. */
export interface Ranking {
  readonly with: string
  readonly join: string
  readonly score: string
}
