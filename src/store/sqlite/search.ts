import { narrowingWords, type SearchWord, searchWords } from '../../model/search-words'
import type { ResourceRegistry, SearchDescription } from '../../resources/registry'
import { searchOf } from '../../resources/registry'
import type { Conjunction } from '../search-ranking'
import {
  forgivesFrom,
  type RankedField,
  rankedFields,
  type SearchTerm,
  type WordMatch,
  wordMatch,
} from '../search-terms'
import { vocabularyTable } from '../search-typos'
import { quote, type Table } from '../sql/table'

/** The full-text index of a table: `<table>_search`, rowid = id. */
export function searchIndexName(table: string): string {
  return `${table}_search`
}

/** One column of a search index: an attribute's text, or the id of a related record. */
type IndexColumn =
  | { readonly kind: 'attribute'; readonly column: string; readonly weight: number }
  | {
      readonly kind: 'related'
      readonly column: string
      readonly weight: number
      /** The related type's own index, where its names are matched. */
      readonly targetIndex: string
      readonly targetTable: string
      /** The related type's vocabulary, where a misspelled word's candidates are read. */
      readonly targetVocabulary: string
      readonly required: boolean
    }

/** The columns of a type's search index, in the order of its search fields. */
export function indexColumns(
  table: Table,
  search: SearchDescription,
  registry: Pick<ResourceRegistry, 'get'>,
): IndexColumn[] {
  const resource = table.resource
  return search.fields.map((field): IndexColumn => {
    if ('attribute' in field) {
      const attribute = resource.attributes[field.attribute]
      return { kind: 'attribute', column: attribute?.column ?? field.attribute, weight: field.weight }
    }
    const relationship = resource.relationships[field.relationship]
    if (relationship?.kind !== 'to-one') throw new Error(`${resource.type}.${field.relationship} is not to-one`)
    const target = registry.get(relationship.target)
    if (!searchOf(target)) throw new Error(`${target.type} has no search index`)
    return {
      kind: 'related',
      column: relationship.column,
      weight: field.weight,
      targetIndex: quote(searchIndexName(target.table)),
      targetTable: quote(target.table),
      targetVocabulary: quote(vocabularyTable(target.table)),
      required: relationship.required,
    }
  })
}

/** The longest prefix the index keeps its own lists of (`prefix = '1 2 3'`, ddl.ts). */
const INDEXED_PREFIX = 3

/** An FTS5 query for one word; quoting keeps FTS5's own syntax out of the client's hands. */
function phrase(word: string): string {
  return `"${word.replaceAll('"', '""')}"`
}

/** An FTS5 query for a word match: the word as written (a prefix, or whole), or one of its whole words, OR'ed. */
function matchQuery(match: WordMatch): string {
  const parts = [
    ...(match.written === null ? [] : [match.prefix ? `${phrase(match.written)}*` : phrase(match.written)]),
    ...match.whole.map(phrase),
  ]
  return parts.length === 1 ? (parts[0] as string) : `(${parts.join(' OR ')})`
}

/** FTS5 terms for a related column: the record's reference is one of these ids. */
function anyOf(column: string, ids: readonly number[]): string {
  return `${column} : (${ids.map((id) => `"${id}"`).join(' OR ')})`
}

/**
 * The FTS5 queries of one type's `filter[search]`, from the search fields of its description. The
 * type's index holds its searched attributes and, for each searched relationship, the related
 * record's id; the related names live only in the related type's own index. A word matches an
 * attribute (as a prefix when it is the search's last, else whole), or names a related record (read first in that record's small index) whose
 * id the row holds. Renaming an author touches one row; the books' rows hold the author's id,
 * which a rename keeps. Fields are known by their position in the description's search fields.
 */
export class SqliteSearch {
  readonly index: string
  /** The type's vocabulary (src/store/search-typos.ts), quoted. */
  readonly vocabulary: string
  private readonly columns: IndexColumn[]
  private readonly fields: RankedField[]

  private readonly tableName: string

  constructor(table: Table, search: SearchDescription, registry: ResourceRegistry) {
    this.tableName = table.resource.table
    this.index = quote(searchIndexName(table.resource.table))
    this.columns = indexColumns(table, search, registry)
    this.vocabulary = quote(vocabularyTable(table.resource.table))
    this.fields = rankedFields(table.resource)
  }

  /** The words that narrow a search of this type. */
  words(text: string): SearchWord[] {
    return narrowingWords(searchWords(text), forgivesFrom(this.fields))
  }

  /** The FTS5 query of a word match, for any column. */
  matchQuery(match: WordMatch): string {
    return matchQuery(match)
  }

  /** The position and quoted table column of each attribute field. */
  attributeColumns(): [field: number, column: string][] {
    return this.columns.flatMap((c, f): [number, string][] => (c.kind === 'attribute' ? [[f, quote(c.column)]] : []))
  }

  /** The position and quoted table column of each related field. */
  relatedColumns(): [field: number, column: string][] {
    return this.columns.flatMap((c, f): [number, string][] => (c.kind === 'related' ? [[f, quote(c.column)]] : []))
  }

  /** The index where a related field's names are matched. */
  relatedIndex(field: number): string {
    const column = this.columns[field]
    if (column?.kind !== 'related') throw new Error(`search field ${field} is not a relationship`)
    return column.targetIndex
  }

  /** The vocabulary of a field's words: the related type's for a related field, else the type's own. */
  vocabularyOf(field: number | null): string {
    if (field === null) return this.vocabulary
    const column = this.columns[field]
    if (column?.kind !== 'related') throw new Error(`search field ${field} is not a relationship`)
    return column.targetVocabulary
  }

  /** A word match in one attribute field. */
  attributeExpression(field: number, match: WordMatch): string {
    return `{${this.columns[field]?.column}} : ${matchQuery(match)}`
  }

  /** A term in any attribute field: one column set where all match it alike, else each its own. */
  private attributeAlternatives(term: SearchTerm): string[] {
    const byQuery = new Map<string, string[]>()
    for (const [f, column] of this.columns.entries()) {
      if (column.kind !== 'attribute') continue
      const query = matchQuery(wordMatch(term, this.fields[f] as RankedField))
      byQuery.set(query, [...(byQuery.get(query) ?? []), column.column])
    }
    return [...byQuery].map(([query, columns]) => `{${columns.join(' ')}} : ${query}`)
  }

  /**
   * Every word matches some field; null when one of them can match nothing. `whole(field, ids)`
   * says that the ids are every record of a required relationship's target: every row then
   * matches the word through that field, and the word asks nothing of the index (`author` where
   * every author is "Author N" would otherwise be an OR of a thousand ids, 40 ms at 1,000,000 books).
   * Empty when no word asks anything: every row matches.
   */
  termsExpression(terms: readonly SearchTerm[], whole: WholeRelated = () => false): string | null {
    if (terms.length === 0) return null
    const parts: string[] = []
    for (const term of terms) {
      const alternatives: string[] = []
      let always = false
      alternatives.push(...this.attributeAlternatives(term))
      for (const [f, column] of this.columns.entries()) {
        const ids = term.related[f]
        if (column.kind !== 'related' || !ids || ids.length === 0) continue
        if (whole(f, ids)) always = true
        alternatives.push(anyOf(column.column, ids))
      }
      if (alternatives.length === 0) return null
      if (!always) parts.push(`(${alternatives.join(' OR ')})`)
    }
    return parts.join(' AND ')
  }

  /**
   * A term as an SQL condition on the table, for a term naming many related records: its words in
   * the index, its references among the ids by the table's own indexes. FTS5 would OR one term per
   * id, and step through every one of them for each row (16 s for `a e i o u k` at 200,000 books).
   * Null when it holds for every row. In the form `or`, each row is tested against the term's
   * matches, listed once; `probe`: the rows to test are few, and each asks the index about its own
   * rowid (some 27 µs a row at 1,000,000 books) rather than the index listing every match of the
   * word first (16 ms for `c`, whatever the rows); `union`: the term's rows are listed (the index's
   * matches and the rows of its references, by their indexes) and drive the read, where a table
   * scan testing every row took 370 ms at 1,000,000 books (`the plosh`, 477 matches).
   */
  termCondition(
    term: SearchTerm,
    whole: WholeRelated,
    form: 'or' | 'probe' | 'union' = 'or',
  ): { sql: string; params: unknown[] } | null {
    const table = quote(this.tableName)
    if (form === 'union') {
      const rows = this.termRows(term, whole, 'UNION')
      return rows && { sql: `${table}."id" IN (${rows.sql})`, params: rows.params }
    }
    const parts: string[] = []
    const params: unknown[] = []
    const attributes = this.attributeAlternatives(term)
    // A prefix longer than the index's prefix lists is merged from its words at each probe
    // (1.5 ms a row for `eesardrern`, against one list read for the whole search).
    const probe = form === 'probe' && !(term.prefix && [...term.word].length > INDEXED_PREFIX)
    if (attributes.length > 0) {
      parts.push(
        probe
          ? `EXISTS (SELECT 1 FROM ${this.index} WHERE ${this.index} MATCH ? AND ${this.index}.rowid = ${table}."id")`
          : `${table}."id" IN (SELECT rowid FROM ${this.index} WHERE ${this.index} MATCH ?)`,
      )
      params.push(attributes.map((a) => `(${a})`).join(' OR '))
    }
    for (const [f, column] of this.columns.entries()) {
      const ids = term.related[f]
      if (column.kind !== 'related' || !ids || ids.length === 0) continue
      if (whole(f, ids)) return null
      parts.push(`${table}.${quote(column.column)} IN (SELECT value FROM json_each(?))`)
      params.push(JSON.stringify(ids))
    }
    return { sql: parts.length === 0 ? '0' : `(${parts.join(' OR ')})`, params }
  }

  /**
   * The ids of the rows a term matches, as one SELECT: the index's matches of its words, then the
   * rows of the related records it names, joined by `UNION` (each once) or `UNION ALL` (to count
   * up to a bound, as they come). Null when it holds for every row.
   */
  termRows(
    term: SearchTerm,
    whole: WholeRelated,
    join: 'UNION' | 'UNION ALL',
  ): { sql: string; params: unknown[] } | null {
    const table = quote(this.tableName)
    const selects: string[] = []
    const params: unknown[] = []
    const attributes = this.attributeAlternatives(term)
    if (attributes.length > 0) {
      selects.push(`SELECT rowid AS id FROM ${this.index} WHERE ${this.index} MATCH ?`)
      params.push(attributes.map((a) => `(${a})`).join(' OR '))
    }
    for (const [f, column] of this.columns.entries()) {
      const ids = term.related[f]
      if (column.kind !== 'related' || !ids || ids.length === 0) continue
      if (whole(f, ids)) return null
      selects.push(`SELECT "id" FROM ${table} WHERE ${quote(column.column)} IN (SELECT value FROM json_each(?))`)
      params.push(JSON.stringify(ids))
    }
    return { sql: selects.length === 0 ? 'SELECT NULL AS id WHERE 0' : selects.join(` ${join} `), params }
  }

  /** The FTS5 terms of a relationship filter on a searched relationship; null for any other. */
  relationshipTerms(relationshipColumn: string, ids: readonly number[]): string | null {
    const found = this.columns.some((c) => c.kind === 'related' && c.column === relationshipColumn)
    return found && ids.length > 0 ? anyOf(relationshipColumn, ids) : null
  }

  /** Whether a related field's relationship is required (every row holds a reference). */
  isRequired(field: number): boolean {
    const column = this.columns[field]
    return column?.kind === 'related' && column.required
  }

  /** The table of a related field's target, quoted. */
  relatedTable(field: number): string {
    const column = this.columns[field]
    if (column?.kind !== 'related') throw new Error(`search field ${field} is not a relationship`)
    return column.targetTable
  }

  /**
   * One tier of a ranked search: its words in their fields and its references among a few ids in
   * the index (empty: every row); references among many ids as SQL on the table (see termCondition).
   */
  conjunctionParts(
    conjunction: Conjunction,
    whole: WholeRelated,
    many: number,
  ): { expression: string; where: string[]; params: unknown[] } {
    const parts: string[] = []
    const where: string[] = []
    const params: unknown[] = []
    for (const [f, matches] of conjunction.attributes) {
      for (const match of matches) parts.push(this.attributeExpression(f, match))
    }
    for (const [f, ids] of conjunction.related) {
      if (whole(f, ids)) continue
      const column = this.columns[f]?.column as string
      if (ids.length <= many) parts.push(anyOf(column, ids))
      else {
        where.push(`${quote(this.tableName)}.${quote(column)} IN (SELECT value FROM json_each(?))`)
        params.push(JSON.stringify(ids))
      }
    }
    return { expression: parts.join(' AND '), where, params }
  }
}

/** Whether these ids are every record of a related field's required target. */
export type WholeRelated = (field: number, ids: readonly number[]) => boolean
