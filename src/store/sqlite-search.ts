import type { ResourceRegistry, SearchDescription } from '../resources/registry'
import { searchOf } from '../resources/registry'
import { quote, type Table } from './sqlite-table'

/** The words of a search as the index splits them: runs of letters and digits, after NFKC. */
export function searchWords(text: string): string[] {
  return text.normalize('NFKC').match(/[\p{L}\p{N}]+/gu) ?? []
}

/**
 * The words that narrow a search. Every word must match (as a prefix), so a word repeated, or one
 * that begins another word of the search ("of" beside "office"), adds nothing: what matches the
 * longer word matches it too, in the same field. Dropping them keeps `of of of ...` from costing
 * one pass over the index per copy. Folding case and accents is the index's job; this only
 * compares the words as the index will see them, lower-cased.
 */
export function narrowingWords(words: readonly string[]): string[] {
  const folded = [...new Set(words.map((w) => w.toLowerCase()))]
  return folded.filter((word) => !folded.some((other) => other !== word && other.startsWith(word)))
}

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
    }

/** The columns of a type's search index, in the order of its search fields. */
export function indexColumns(table: Table, search: SearchDescription, registry: ResourceRegistry): IndexColumn[] {
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
    }
  })
}

/** An FTS5 prefix query for one word; quoting keeps FTS5's own syntax out of the client's hands. */
function prefix(word: string): string {
  return `"${word.replaceAll('"', '""')}"*`
}

/**
 * The SQL of one type's `filter[search]`, from the search fields of its description. The type's
 * index holds its searched attributes and, for each searched relationship, the related record's id;
 * the related names live only in the related type's own index. A search first finds, for each
 * word, the related records whose names match it (in their small indexes), then asks the type's
 * index once: every word must match an attribute as a prefix or be one of those related ids.
 * Renaming an author touches one row; the books' rows hold the author's id, which a rename keeps.
 */
export class SqliteSearch {
  readonly index: string
  private readonly columns: IndexColumn[]
  private readonly attributeSet: string
  readonly rank: string

  constructor(table: Table, search: SearchDescription, registry: ResourceRegistry) {
    this.index = quote(searchIndexName(table.resource.table))
    this.columns = indexColumns(table, search, registry)
    // Column names from the descriptions: plain identifiers, written bare as FTS5's syntax has them.
    const attributes = this.columns.filter((c) => c.kind === 'attribute').map((c) => c.column)
    this.attributeSet = attributes.length > 0 ? `{${attributes.join(' ')}}` : ''
    // BM25 weighs a match by the weight of the column (the field) it is in.
    this.rank = `bm25(${this.index}, ${this.columns.map((c) => c.weight.toFixed(1)).join(', ')})`
  }

  /**
   * The FTS5 query for the words of `text`, or null when nothing can match. `relatedIds` looks a
   * word up in a related type's index (a read on the caller's connection, in its snapshot).
   */
  expression(text: string, relatedIds: (index: string, query: string) => readonly number[]): string | null {
    const words = narrowingWords(searchWords(text))
    if (words.length === 0) return null
    const terms = words.map((word) => {
      const alternatives: string[] = []
      if (this.attributeSet) alternatives.push(`${this.attributeSet} : ${prefix(word)}`)
      for (const column of this.columns) {
        if (column.kind !== 'related') continue
        const ids = relatedIds(column.targetIndex, prefix(word))
        if (ids.length > 0) alternatives.push(`${column.column} : (${ids.map((id) => `"${id}"`).join(' OR ')})`)
      }
      return alternatives.length > 0 ? `(${alternatives.join(' OR ')})` : null
    })
    if (terms.some((term) => term === null)) return null
    return terms.join(' AND ')
  }
}
