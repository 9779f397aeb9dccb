import type { ResourceDescription } from '../../model/description'
import { vocabularyTable } from '../search-typos'
import { searchColumnName, searchedColumns } from './search-columns'
import { type PostgresFunction, triggerFunction } from './search-totals-ddl'

/**
 * The vocabulary of a searched type (src/store/search-typos.ts): every word its searched attributes
 * hold, as search_words() splits and folds them, keyed by first character and length. Kept by
 * triggers in the writing transaction, so a word is forgiven from the next search on, on every
 * instance and replica. A word whose last record is gone stays: it costs a candidate that matches
 * nothing, never a wrong answer. Words of digits alone are left out: a number is never forgiven.
 *
 * Since shared migration 6 a vocabulary has no unique key: a word is inserted where no row the
 * transaction sees holds it. With the key, a writer adding a word another open transaction had
 * just added waited for that one to end; two adding words to two vocabularies in opposite orders
 * waited for each other, a deadlock PostgreSQL broke after its deadlock_timeout (a second). Now no
 * writer waits; two adding the same new word at the same moment both keep it, a duplicate the
 * reads take once (DISTINCT), bounded by the writers at once.
 */

/** The vocabularies' form: with the unique key of shared migration 3, or without (migration 6 on). */
export type VocabularyKey = 'keyed' | 'unkeyed'

/**
 * Where a trigger takes a row's words from: search_words() of its text (shared migration 3), or
 * since shared migration 5 its stored search words (migration 9), computed already by the write.
 */
export type VocabularySource = 'computed' | 'stored'

/** The words of the searched columns of the rows `from` names (a transition table, the table, NEW) as `written`. */
function insertSql(resource: ResourceDescription, from: string, source: VocabularySource, key: VocabularyKey): string {
  const arrays = searchedColumns(resource)
    .map((c) =>
      source === 'stored'
        ? `pg_catalog.tsvector_to_array(written.${searchColumnName(c)})`
        : `search_words(written.${c})`,
    )
    .join(' || ')
  const table = vocabularyTable(resource.table)
  const words = `SELECT DISTINCT pg_catalog.left(w, 1) AS head, pg_catalog.length(w) AS size, w AS word
    FROM ${from}, unnest(${arrays}) AS w WHERE w ~ '[^0-9]'`
  if (key === 'keyed') {
    return `INSERT INTO ${table} (head, size, word)
    ${words} ORDER BY 1, 2, 3
    ON CONFLICT DO NOTHING`
  }
  return `INSERT INTO ${table} (head, size, word)
    SELECT n.head, n.size, n.word FROM (${words}) AS n
    WHERE NOT EXISTS (SELECT FROM ${table} AS v WHERE v.head = n.head AND v.size = n.size AND v.word = n.word)`
}

/** The one row a row trigger wrote, as a FROM item: the columns `source` reads. */
function newRow(resource: ResourceDescription, source: VocabularySource): string {
  const columns = searchedColumns(resource).map((c) => (source === 'stored' ? searchColumnName(c) : c))
  return `(SELECT ${columns.map((c) => `NEW.${c} AS ${c}`).join(', ')}) AS written`
}

export function vocabularyTableSql(resource: ResourceDescription, key: VocabularyKey): string[] {
  if (searchedColumns(resource).length === 0) return []
  const table = vocabularyTable(resource.table)
  const columns = `head text COLLATE "C" NOT NULL, size int NOT NULL, word text COLLATE "C" NOT NULL`
  if (key === 'keyed') return [`CREATE TABLE ${table} (${columns}, PRIMARY KEY (head, size, word));`]
  return [`CREATE TABLE ${table} (${columns});`, `CREATE INDEX ${table}_word ON ${table} (head, size, word);`]
}

/** The vocabulary of the rows the table holds: for the migration that adds it. */
export function vocabularyFillSql(resource: ResourceDescription): string[] {
  if (searchedColumns(resource).length === 0) return []
  return [`${insertSql(resource, `${resource.table} AS written`, 'computed', 'keyed')};`]
}

/**
 * Shared migration 6 for a type: its vocabulary's key becomes a plain index of the same columns,
 * and its trigger functions (on the stored words: after shared migration 5) insert without it.
 */
export function unkeyVocabularySql(resource: ResourceDescription): string[] {
  if (searchedColumns(resource).length === 0) return []
  const table = vocabularyTable(resource.table)
  return [
    `ALTER TABLE ${table} DROP CONSTRAINT ${table}_pkey;`,
    `CREATE INDEX ${table}_word ON ${table} (head, size, word);`,
    ...vocabularyFunctions(resource, 'stored', 'unkeyed').map((fn) => fn.sql),
  ]
}

function functionName(resource: ResourceDescription): string {
  return `${vocabularyTable(resource.table)}_add`
}

/** A vocabulary trigger's function: `insert`, then nothing more. */
function wordsFunction(name: string, insert: string): PostgresFunction {
  const body = `
BEGIN
  ${insert};
  RETURN NULL;
END
`
  return triggerFunction(name, 'words', body)
}

/**
 * The trigger functions: the words of the rows a statement inserted (`written_rows`), of a row
 * renamed. The stored words are the same set as search_words() gives (search_vector() is built from
 * it), without computing it again: 10-20 µs of a create or a rename.
 */
export function vocabularyFunctions(
  resource: ResourceDescription,
  source: VocabularySource,
  key: VocabularyKey,
): PostgresFunction[] {
  if (searchedColumns(resource).length === 0) return []
  const name = functionName(resource)
  return [
    wordsFunction(name, insertSql(resource, 'written_rows AS written', source, key)),
    wordsFunction(`${name}_row`, insertSql(resource, newRow(resource, source), source, key)),
  ]
}

/**
 * Once per statement over its new rows (an import's thousands at once), and after an update only
 * of rows whose searched text changed: a to-many write moving 8,000 books reads no word.
 */
export function vocabularyTriggers(
  resource: ResourceDescription,
): { name: string; table: string; function: string; sql: string }[] {
  const columns = searchedColumns(resource)
  if (columns.length === 0) return []
  const table = resource.table
  const fn = functionName(resource)
  const changed = columns.map((c) => `OLD.${c} IS DISTINCT FROM NEW.${c}`).join(' OR ')
  return [
    {
      name: `${vocabularyTable(table)}_insert`,
      table,
      function: fn,
      sql: `CREATE TRIGGER ${vocabularyTable(table)}_insert AFTER INSERT ON ${table}
  REFERENCING NEW TABLE AS written_rows FOR EACH STATEMENT EXECUTE FUNCTION ${fn}();`,
    },
    {
      name: `${vocabularyTable(table)}_update`,
      table,
      function: `${fn}_row`,
      sql: `CREATE TRIGGER ${vocabularyTable(table)}_update AFTER UPDATE OF ${columns.join(', ')} ON ${table}
  FOR EACH ROW WHEN (${changed}) EXECUTE FUNCTION ${fn}_row();`,
    },
  ]
}
