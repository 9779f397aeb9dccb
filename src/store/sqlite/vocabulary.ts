import type { Database, Statement } from 'bun:sqlite'
import type { ResourceDescription } from '../../model/description'
import type { StoredRecord } from '../../model/record'
import type { RecordInput } from '../../model/writes'
import { searchOf } from '../../resources/registry'
import { vocabularyRow, vocabularyTable, vocabularyWords } from '../search-typos'
import { quote, type Row } from '../sql/table'

/**
 * The vocabulary of a searched type (src/store/search-typos.ts): every word its searched attributes
 * hold, keyed by first character and length, where a misspelled word's candidates are read. Written
 * in the very transaction of each write, so a word is forgiven from the next search on; an update
 * writes the words of a searched attribute only if its value changed. A `catalogue import` large
 * beside the catalogue writes its words once, when it ends, from the search indexes' terms
 * (import.ts). A word whose last record is gone stays: it costs a candidate that matches nothing,
 * never a wrong answer.
 */

/** A searched attribute of a type: its name in records, and its column. */
interface SearchedAttribute {
  readonly name: string
  readonly column: string
}

/** The searched attributes of a type, worked out once per type: every write asks. */
const searchedByType = new WeakMap<ResourceDescription, readonly SearchedAttribute[]>()

function searchedAttributes(resource: ResourceDescription): readonly SearchedAttribute[] {
  let searched = searchedByType.get(resource)
  if (!searched) {
    searched = (searchOf(resource)?.fields ?? []).flatMap((field) =>
      'attribute' in field
        ? [{ name: field.attribute, column: resource.attributes[field.attribute]?.column ?? field.attribute }]
        : [],
    )
    searchedByType.set(resource, searched)
  }
  return searched
}

/** The vocabulary table of a searched type; none for a type without searched attributes. */
export function vocabularyTableSql(resource: ResourceDescription): string[] {
  if (searchedAttributes(resource).length === 0) return []
  return [
    `CREATE TABLE ${vocabularyTable(resource.table)} (head TEXT NOT NULL, size INTEGER NOT NULL, word TEXT NOT NULL, PRIMARY KEY (head, size, word)) WITHOUT ROWID;`,
  ]
}

/**
 * The vocabulary of the rows a table holds, from its full-text index's own terms (fts5vocab): the
 * words exactly as the index split and folded them. For the migration that adds the vocabulary.
 */
export function vocabularyFillSql(resource: ResourceDescription, index: string): string[] {
  const columns = searchedAttributes(resource).map((attribute) => attribute.column)
  if (columns.length === 0) return []
  const terms = `${index}_terms`
  return [
    `CREATE VIRTUAL TABLE temp.${terms} USING fts5vocab(main, ${index}, col);`,
    `INSERT OR IGNORE INTO ${vocabularyTable(resource.table)} (head, size, word)
  SELECT substr(term, 1, 1), length(term), term FROM temp.${terms}
  WHERE col IN (${columns.map((c) => `'${c}'`).join(', ')}) AND term GLOB '*[^0-9]*';`,
    `DROP TABLE temp.${terms};`,
  ]
}

/** Adds the words of records written to their types' vocabularies, on the writing connection. */
export class SqliteVocabulary {
  private readonly inserts = new Map<string, Statement<unknown, [string, number, string]>>()

  constructor(private readonly db: Database) {}

  /** The words of these records' searched attributes. */
  addRecords(resource: ResourceDescription, records: readonly StoredRecord[]): void {
    const searched = searchedAttributes(resource)
    if (searched.length === 0) return
    const texts: string[] = []
    for (const record of records) {
      for (const { name } of searched) {
        const value = record.attributes[name]
        if (typeof value === 'string') texts.push(value)
      }
    }
    this.addTexts(resource, texts)
  }

  /**
   * The columns of the searched attributes an update gives a value, quoted and comma-separated, for
   * reading their stored values before it; null when it gives none: its words cannot change.
   */
  givenColumns(resource: ResourceDescription, input: RecordInput): string | null {
    let columns: string | null = null
    for (const { name, column } of searchedAttributes(resource)) {
      if (input.attributes[name] === undefined) continue
      columns = columns === null ? quote(column) : `${columns}, ${quote(column)}`
    }
    return columns
  }

  /**
   * The words of an updated record's searched attributes whose values changed: `before` holds the
   * stored values read by `givenColumns`. A name given again as it was adds nothing (its words are
   * there), which saves splitting it and a statement a word (some 5-10 µs).
   */
  addChanged(resource: ResourceDescription, before: Row, record: StoredRecord): void {
    const texts: string[] = []
    for (const { name, column } of searchedAttributes(resource)) {
      const value = record.attributes[name]
      if (column in before && typeof value === 'string' && value !== before[column]) texts.push(value)
    }
    this.addTexts(resource, texts)
  }

  /** The words of these texts of a type's searched attributes. */
  addTexts(resource: ResourceDescription, texts: readonly string[]): void {
    if (searchedAttributes(resource).length === 0 || texts.length === 0) return
    const words = new Set<string>()
    for (const text of texts) {
      for (const word of vocabularyWords(text)) if (!/^[0-9]+$/.test(word)) words.add(word)
    }
    if (words.size === 0) return
    // A statement a word: some 1.5 µs each, against 13 µs for the words of a title as one JSON batch.
    const insert = this.insert(resource.table)
    for (const word of words) insert.run(...vocabularyRow(word))
  }

  private insert(table: string): Statement<unknown, [string, number, string]> {
    let statement = this.inserts.get(table)
    if (!statement) {
      statement = this.db.query(`INSERT OR IGNORE INTO ${vocabularyTable(table)} (head, size, word) VALUES (?, ?, ?)`)
      this.inserts.set(table, statement)
    }
    return statement
  }
}
