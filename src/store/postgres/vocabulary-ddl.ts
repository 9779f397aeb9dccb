import type { ResourceDescription } from '../../model/description'
import { vocabularyTable } from '../search-typos'
import { searchColumnName, searchedColumns } from './search-columns'
import { type PostgresFunction, triggerFunction } from './search-totals-ddl'

/**
 * The vocabulary of a searched type (src/store/search-typos.ts): every word its searched attributes
 * hold, as search_words() splits and folds them, keyed by first character and length. Kept by
 * triggers in the writing transaction, so a word is forgiven from the next search on, on every
 * instance and replica. New words are inserted in order, so two writers adding the same new words
 * wait for each other instead of deadlocking. A word whose last record is gone stays: it costs a
 * candidate that matches nothing, never a wrong answer. Words of digits alone are left out: a
 * number is never forgiven.
 */

/**
 * Where a trigger takes a row's words from: search_words() of its text (shared migration 3), or
 * since shared migration 5 its stored search words (migration 9), computed already by the write.
 */
export type VocabularySource = 'computed' | 'stored'

/** The words of the searched columns of the rows `from` names (a transition table, the table, NEW) as `written`. */
function insertSql(resource: ResourceDescription, from: string, source: VocabularySource = 'computed'): string {
  const arrays = searchedColumns(resource)
    .map((c) =>
      source === 'stored'
        ? `pg_catalog.tsvector_to_array(written.${searchColumnName(c)})`
        : `search_words(written.${c})`,
    )
    .join(' || ')
  return `INSERT INTO ${vocabularyTable(resource.table)} (head, size, word)
    SELECT DISTINCT pg_catalog.left(w, 1), pg_catalog.length(w), w FROM ${from}, unnest(${arrays}) AS w
    WHERE w ~ '[^0-9]' ORDER BY 1, 2, 3
    ON CONFLICT DO NOTHING`
}

/** The one row a row trigger wrote, as a FROM item: the columns `source` reads. */
function newRow(resource: ResourceDescription, source: VocabularySource): string {
  const columns = searchedColumns(resource).map((c) => (source === 'stored' ? searchColumnName(c) : c))
  return `(SELECT ${columns.map((c) => `NEW.${c} AS ${c}`).join(', ')}) AS written`
}

export function vocabularyTableSql(resource: ResourceDescription): string[] {
  if (searchedColumns(resource).length === 0) return []
  return [
    `CREATE TABLE ${vocabularyTable(resource.table)} (head text COLLATE "C" NOT NULL, size int NOT NULL, word text COLLATE "C" NOT NULL, PRIMARY KEY (head, size, word));`,
  ]
}

/** The vocabulary of the rows the table holds: for the migration that adds it. */
export function vocabularyFillSql(resource: ResourceDescription): string[] {
  if (searchedColumns(resource).length === 0) return []
  return [`${insertSql(resource, `${resource.table} AS written`)};`]
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
export function vocabularyFunctions(resource: ResourceDescription, source: VocabularySource): PostgresFunction[] {
  if (searchedColumns(resource).length === 0) return []
  const name = functionName(resource)
  return [
    wordsFunction(name, insertSql(resource, 'written_rows AS written', source)),
    wordsFunction(`${name}_row`, insertSql(resource, newRow(resource, source), source)),
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
