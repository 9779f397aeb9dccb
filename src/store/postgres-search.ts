import type { ResourceDescription } from '../resources/description'
import type { ResourceRegistry, SearchDescription } from '../resources/registry'
import { searchOf } from '../resources/registry'
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
  | { readonly kind: 'attribute'; readonly column: string; readonly weight: number }
  | {
      readonly kind: 'related'
      readonly column: string
      readonly weight: number
      readonly targetTable: string
      /** The target's own searched attribute columns. */
      readonly targetColumns: readonly string[]
    }

function attributeColumns(resource: ResourceDescription, search: SearchDescription): string[] {
  const columns: string[] = []
  for (const field of search.fields) {
    if ('attribute' in field) columns.push(quote(resource.attributes[field.attribute]?.column ?? field.attribute))
  }
  return columns
}

/**
 * `filter[search]` of one type in PostgreSQL terms, with the semantics of the SQLite store's
 * (src/store/sqlite-search.ts): the words of the text, each a prefix, case and accents folded
 * (search_vector / search_prefix of the migrations); every word must match one of the search
 * fields: an attribute of the type, or the searched name of a related record. A related record's
 * name is matched in its own table (by the GIN index on it), never copied into the type's rows.
 * Relevance: the sum over the fields of weight × ts_rank of the field against all the words.
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
        return { kind: 'attribute', column: quote(column), weight: field.weight }
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
        targetColumns: attributeColumns(target, targetSearch),
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
        if (column.kind === 'attribute') return `search_vector(${this.table}.${column.column}) @@ ${query}`
        const names = column.targetColumns.map((c) => `search_vector(${c}) @@ ${query}`).join(' OR ')
        return `${this.table}.${column.column} IN (SELECT "id" FROM ${column.targetTable} WHERE ${names})`
      })
      return `(${alternatives.join(' OR ')})`
    })
    return terms.join(' AND ')
  }

  /**
   * Relevance, higher first: FTS5's bm25 as the SQLite store's index computes it (see `bm25`), so
   * that ranked lists come in the same order on both backends, ties included.
   */
  rank(words: readonly string[], params: Params): string {
    // A constant, not the literal 0, which ORDER BY would read as a column's position.
    if (words.length === 0) return '0::float8'
    return bm25(this.table, this.tableName, this.columns, words, params)
  }
}

/** A float8 constant: bm25's arithmetic must be float8 throughout, as FTS5's C is, never numeric. */
function float(value: number): string {
  return `${value}::float8`
}

/**
 * FTS5's bm25 (sqlite/ext/fts5/fts5_aux.c) for the query the SQLite store builds: per word, one
 * phrase for the word as a prefix of the attributes, and one per related record whose names match
 * it, as a token of the relationship's column. For each phrase, IDF = ln((N - n + 0.5) / (n + 0.5))
 * (1e-6 when not above 0; N rows, n rows where the phrase occurs), f = the weights of its
 * occurrences in the row, and the score adds IDF × f × (k1 + 1) / (f + k1 × (1 - b + b × D / avgdl)),
 * D the row's tokens, avgdl the table's tokens per row (search_totals), k1 = 1.2, b = 0.75. The
 * same operations in the same order, in float8: equal inputs give bit-equal scores, so ties are
 * ties on both backends and fall to the same sort keys. A phrase that does not occur adds 0.
 */
function bm25(
  table: string,
  tableName: string,
  columns: readonly SearchColumn[],
  words: readonly string[],
  params: Params,
): string {
  const name = params.add(tableName)
  const totals = (column: string) => `(SELECT SUM(${column})::bigint FROM search_totals WHERE table_name = ${name})`
  const rows = totals('records')
  const avgdl = `(${totals('words')}::float8 / ${rows}::float8)`
  const idf = (hits: string) =>
    `(SELECT CASE WHEN idf <= 0 THEN ${float(1e-6)} ELSE idf END FROM ln(((${rows} - ${hits})::float8 + ${float(0.5)}) / (${hits}::float8 + ${float(0.5)})) AS idf)`
  // D: the words of the attributes, and one token per related record the row refers to.
  const length = columns
    .map((column) =>
      column.kind === 'attribute'
        ? `COALESCE(cardinality(search_words(${table}.${column.column})), 0)`
        : `(${table}.${column.column} IS NOT NULL)::int`,
    )
    .join(' + ')
  const k1 = float(1.2)
  const b = float(0.75)
  const norm = `(${k1} * ((1::float8 - ${b}) + (${b} * (${length})::float8) / ${avgdl}))`
  const term = (phraseIdf: string, freq: string) =>
    `(${phraseIdf} * ((${freq} * (${k1} + 1::float8)) / (${freq} + ${norm})))`
  const attributes = columns.filter((column) => column.kind === 'attribute')
  const terms: string[] = []
  for (const word of words) {
    const query = `search_prefix(${params.add(word)})`
    if (attributes.length > 0) {
      const matches = attributes.map((c) => `search_vector(counted.${c.column}) @@ ${query}`).join(' OR ')
      const freq = attributes
        .map(
          (c) =>
            `${float(c.weight)} * (SELECT COUNT(*) FROM unnest(search_words(${table}.${c.column})) AS token WHERE array_to_tsvector(ARRAY[token]) @@ ${query})::float8`,
        )
        .join(' + ')
      terms.push(term(idf(`(SELECT COUNT(*) FROM ${table} AS counted WHERE ${matches})`), `(${freq})`))
    }
    for (const column of columns) {
      if (column.kind !== 'related') continue
      // The phrase of the related record this row refers to, when its names match the word.
      const names = column.targetColumns.map((c) => `search_vector(related.${c}) @@ ${query}`).join(' OR ')
      const hits = `(SELECT COUNT(*) FROM ${table} AS counted WHERE counted.${column.column} = ${table}.${column.column})`
      terms.push(
        `CASE WHEN EXISTS (SELECT 1 FROM ${column.targetTable} AS related WHERE related."id" = ${table}.${column.column} AND (${names})) THEN ${term(idf(hits), float(column.weight))} ELSE 0::float8 END`,
      )
    }
  }
  // Summed from 0 in phrase order, as FTS5's loop does.
  return `(0::float8 + ${terms.join(' + ')})`
}
