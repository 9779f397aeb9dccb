import type { ResourceDescription } from '../../model/description'
import type { Id } from '../../model/record'
import { narrowingWords, type SearchWord, searchWords } from '../../model/search-words'
import type { ResourceRegistry, SearchDescription } from '../../resources/registry'
import { searchOf } from '../../resources/registry'
import type { Conjunction } from '../search-ranking'
import {
  attributeLevels,
  forgivesFrom,
  hitBit,
  type RankedField,
  rankedFields,
  type SearchTerm,
  type WordMatch,
  wordMatch,
} from '../search-terms'
import { vocabularyTable } from '../search-typos'
import { quote } from '../sql/table'
import { searchColumnName, searchedColumns } from './search-columns'

/** Collects a statement's parameters and hands out their `$n` placeholders. */
export class Params {
  readonly values: unknown[] = []
  add(value: unknown): string {
    this.values.push(value)
    return `$${this.values.length}`
  }
}

/** One searched field: an attribute's stored words, or a to-one relationship matched in its target's names. */
type SearchColumn =
  | {
      readonly kind: 'attribute'
      /** Its stored search words (migration 9). */
      readonly words: string
    }
  | {
      readonly kind: 'related'
      readonly column: string
      readonly required: boolean
      readonly targetTable: string
      /** The target's vocabulary, where a misspelled word's candidates are read. */
      readonly targetVocabulary: string
      /** The stored search words of the target's own searched attributes. */
      readonly targetColumns: readonly string[]
    }

/** A tsquery literal of whole words, OR'ed: each quoted, so taken as it is. */
function wholeWords(words: readonly string[]): string {
  return words.map((word) => `'${word.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`).join(' | ')
}

/** Whether a related field's ids are every record of its target (the field then holds for every row). */
export type Whole = (field: number, ids: readonly Id[]) => boolean

/**
 * `filter[search]` of one type in PostgreSQL terms, with the semantics of the SQLite store's
 * (src/store/sqlite/search.ts): the words of the text, the last a prefix and the others whole
 * (src/model/search-words.ts), case and accents folded
 * (search_vector / search_prefix of the migrations); every word must match one of the search
 * fields: an attribute of the type (its stored words, migration 9), or the searched name of a
 * related record, matched in the related table (by the GIN index there) and never copied into the
 * type's rows. Fields are known by their position in the description, as ranking
 * (src/store/search-ranking.ts) numbers them.
 */
export class PostgresSearch {
  private readonly columns: SearchColumn[]
  private readonly fields: RankedField[]
  /** The type's vocabulary (src/store/search-typos.ts), quoted. */
  readonly vocabulary: string

  constructor(
    private readonly table: string,
    resource: ResourceDescription,
    search: SearchDescription,
    registry: ResourceRegistry,
  ) {
    this.fields = rankedFields(resource)
    this.vocabulary = quote(vocabularyTable(resource.table))
    this.columns = search.fields.map((field): SearchColumn => {
      if ('attribute' in field) {
        const column = resource.attributes[field.attribute]?.column ?? field.attribute
        return { kind: 'attribute', words: quote(searchColumnName(column)) }
      }
      const relationship = resource.relationships[field.relationship]
      if (relationship?.kind !== 'to-one') throw new Error(`${resource.type}.${field.relationship} is not to-one`)
      const target = registry.get(relationship.target)
      if (!searchOf(target)) throw new Error(`${target.type} has no search`)
      return {
        kind: 'related',
        column: quote(relationship.column),
        required: relationship.required,
        targetTable: quote(target.table),
        targetVocabulary: quote(vocabularyTable(target.table)),
        targetColumns: searchedColumns(target).map((c) => quote(searchColumnName(c))),
      }
    })
  }

  /** The words that narrow the search; none: nothing matches. */
  words(text: string): SearchWord[] {
    return narrowingWords(searchWords(text), forgivesFrom(this.fields))
  }

  /** The vocabulary of a field's words: the related type's for a related field, else the type's own. */
  vocabularyOf(field: number | null): string {
    return field === null ? this.vocabulary : this.related(field).targetVocabulary
  }

  /**
   * A word match as one tsquery: the word as written, folded as the index folds it (search_prefix;
   * a whole word is that prefix query less its `:*`), or one of its whole words.
   */
  private tsquery(match: WordMatch, params: Params): string {
    const written = match.written === null ? null : `search_prefix(${params.add(match.written)}::text)`
    const parts = [
      ...(written === null ? [] : [match.prefix ? written : `regexp_replace(${written}::text, ':\\*$', '')::tsquery`]),
      ...(match.whole.length === 0 ? [] : [`${params.add(wholeWords(match.whole))}::tsquery`]),
    ]
    return parts.length === 1 ? (parts[0] as string) : `(${parts.join(' || ')})`
  }

  /** The ids of the related records of field `f` whose searched names match, ascending. */
  relatedSql(f: number, match: WordMatch, params: Params): string {
    const column = this.related(f)
    const query = this.tsquery(match, params)
    const names = column.targetColumns.map((c) => `${column.targetTable}.${c} @@ ${query}`).join(' OR ')
    return `SELECT "id" FROM ${column.targetTable} WHERE ${names} ORDER BY "id"`
  }

  /** The target table of related field `f`, and whether every row must have one (then every id is someone's). */
  target(f: number): { table: string; required: boolean } {
    const column = this.related(f)
    return { table: column.targetTable, required: column.required }
  }

  /** The row's reference column of each related field, by position. */
  references(): [field: number, column: string][] {
    const found: [number, string][] = []
    this.columns.forEach((column, f) => {
      if (column.kind === 'related') found.push([f, `${this.table}.${column.column}`])
    })
    return found
  }

  /** The positions of the attribute fields. */
  attributeFields(): number[] {
    return this.columns.flatMap((column, f) => (column.kind === 'attribute' ? [f] : []))
  }

  /** Every word match holds in attribute field `f`: one tsquery, one index scan. */
  matches(f: number, matches: readonly WordMatch[], params: Params): string {
    const column = this.columns[f]
    if (column?.kind !== 'attribute') throw new Error(`search field ${f} is not an attribute`)
    const query = matches.map((match) => this.tsquery(match, params)).join(' && ')
    return `${this.table}.${column.words} @@ ${matches.length > 1 ? `(${query})` : query}`
  }

  /** The row's reference of related field `f` is one of `ids`. */
  among(f: number, ids: readonly Id[], params: Params): string {
    return `${this.table}.${this.related(f).column} = ANY(${params.add(ids)}::bigint[])`
  }

  /**
   * A word of the search matches some field of the row: an attribute, or a reference among the
   * related ids it matches. TRUE when some related field's ids are every record of a required
   * relationship's target (`whole`); FALSE when no field can match.
   */
  termCondition(term: SearchTerm, whole: Whole, params: Params): string {
    // Whole first: a parameter added for an alternative left out could not be typed.
    if (this.columns.some((column, f) => column.kind === 'related' && whole(f, term.related[f] ?? []))) return 'TRUE'
    const alternatives: string[] = []
    for (const [f, column] of this.columns.entries()) {
      const ids = term.related[f] ?? []
      if (column.kind === 'attribute')
        alternatives.push(this.matches(f, [wordMatch(term, this.fields[f] as RankedField)], params))
      else if (ids.length > 0) alternatives.push(this.among(f, ids, params))
    }
    return alternatives.length === 0 ? 'FALSE' : `(${alternatives.join(' OR ')})`
  }

  /** Every word matches some field; the conditions that hold for every row left out. */
  termsCondition(terms: readonly SearchTerm[], whole: Whole, params: Params): string[] {
    return terms.map((term) => this.termCondition(term, whole, params)).filter((c) => c !== 'TRUE')
  }

  /** One tier of the ranking, its words: each attribute's words match it. */
  conjunctionWords(conjunction: Conjunction, params: Params): string[] {
    return [...conjunction.attributes].map(([f, list]) => this.matches(f, list, params))
  }

  /** One tier of the ranking, its references: each among its ids (left out when they are every record). */
  conjunctionRefs(conjunction: Conjunction, whole: Whole, params: Params): string[] {
    return [...conjunction.related].filter(([f, ids]) => !whole(f, ids)).map(([f, ids]) => this.among(f, ids, params))
  }

  /** Per word, the bits (hitBit) of the attribute fields it matches in the row, and with how many typos. */
  hits(terms: readonly SearchTerm[], params: Params): string[] {
    return terms.map((term) => {
      const bits = this.attributeFields().flatMap((f) => {
        const field = this.fields[f] as RankedField
        return attributeLevels(term, field).map(
          (typos) =>
            `(CASE WHEN ${this.matches(f, [wordMatch(term, field, typos)], params)} THEN ${hitBit(f, typos)} ELSE 0 END)`,
        )
      })
      return bits.length === 0 ? '0' : bits.join(' | ')
    })
  }

  private related(f: number): Extract<SearchColumn, { kind: 'related' }> {
    const column = this.columns[f]
    if (column?.kind !== 'related') throw new Error(`search field ${f} is not a relationship`)
    return column
  }
}
