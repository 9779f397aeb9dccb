import type { SearchField } from '../resources/description'
import { type ResourceRegistry, type SearchDescription, searchOf } from '../resources/registry'
import { type Bindings, quote, type Table } from './sqlite-table'

/** The words of a search as the index splits them: runs of letters and digits, after NFKC. */
export function searchWords(text: string): string[] {
  return text.normalize('NFKC').match(/[\p{L}\p{N}]+/gu) ?? []
}

/** An FTS5 prefix query for one word; quoting keeps FTS5's own syntax out of the client's hands. */
function prefix(word: string): string {
  return `"${word}"*`
}

/** The full-text index of a table (`<table>_search`, rowid = id), holding its searched attributes. */
export function searchIndexName(table: string): string {
  return `${table}_search`
}

/** The attributes a type's search index holds, in column order. */
export function indexedAttributes(search: SearchDescription): string[] {
  return search.fields.flatMap((field) => ('attribute' in field ? [field.attribute] : []))
}

type RelatedField = { readonly column: string; readonly index: string; readonly weight: number }

/**
 * The SQL of one type's `filter[search]`, from the search fields of its description: every word
 * must match one field, as a prefix; relevance adds up the BM25 score of each field, weighted.
 */
export class SqliteSearch {
  private readonly index: string | null
  private readonly columnWeights: number[]
  private readonly related: RelatedField[]

  constructor(
    private readonly table: Table,
    search: SearchDescription,
    registry: ResourceRegistry,
  ) {
    const resource = table.resource
    const own = search.fields.filter((f): f is Extract<SearchField, { attribute: string }> => 'attribute' in f)
    this.index = own.length > 0 ? quote(searchIndexName(resource.table)) : null
    this.columnWeights = own.map((f) => f.weight)
    this.related = []
    for (const field of search.fields) {
      if (!('relationship' in field)) continue
      const relationship = resource.relationships[field.relationship]
      if (relationship?.kind !== 'to-one') continue
      const target = registry.get(relationship.target)
      if (!searchOf(target)) continue
      this.related.push({
        column: quote(relationship.column),
        index: quote(searchIndexName(target.table)),
        weight: field.weight,
      })
    }
  }

  /**
   * A query of the ids of the records that match every word: per word, the union of the records
   * whose own index matches it and those whose related record's index does; the words intersected.
   * Its cost grows with the number of words times the records each word matches.
   */
  hits(words: readonly string[], params: Bindings): string {
    const perWord = words.map((word) => {
      const parts: string[] = []
      if (this.index) {
        parts.push(`SELECT rowid AS hit FROM ${this.index} WHERE ${this.index} MATCH ?`)
        params.push(prefix(word))
      }
      for (const related of this.related) {
        parts.push(
          `SELECT "id" AS hit FROM ${this.table.name} WHERE ${related.column} IN (SELECT rowid FROM ${related.index} WHERE ${related.index} MATCH ?)`,
        )
        params.push(prefix(word))
      }
      // A compound inside FROM keeps UNION and INTERSECT from binding left to right across words.
      return `SELECT hit FROM (${parts.join(' UNION ')})`
    })
    return perWord.join(' INTERSECT ')
  }

  /**
   * LEFT JOINs that score each record against any of the words, and the relevance expression to
   * order by (BM25 is negative: lower is more relevant). Joins come before WHERE in the SQL text,
   * so their parameters are pushed first.
   */
  relevance(words: readonly string[], params: Bindings): { joins: string; score: string } {
    const anyWord = words.map(prefix).join(' OR ')
    const joins: string[] = []
    const terms: string[] = []
    if (this.index) {
      joins.push(
        `LEFT JOIN (SELECT rowid AS sid, bm25(${this.index}, ${this.columnWeights.map((w) => w.toFixed(1)).join(', ')}) AS score FROM ${this.index} WHERE ${this.index} MATCH ?) AS own_score ON own_score.sid = ${this.table.name}."id"`,
      )
      params.push(anyWord)
      terms.push('COALESCE(own_score.score, 0)')
    }
    this.related.forEach((related, i) => {
      joins.push(
        `LEFT JOIN (SELECT rowid AS sid, bm25(${related.index}) AS score FROM ${related.index} WHERE ${related.index} MATCH ?) AS related_score_${i} ON related_score_${i}.sid = ${this.table.name}.${related.column}`,
      )
      params.push(anyWord)
      terms.push(`${related.weight.toFixed(1)} * COALESCE(related_score_${i}.score, 0)`)
    })
    return { joins: joins.join(' '), score: terms.length > 0 ? terms.join(' + ') : '0' }
  }
}
