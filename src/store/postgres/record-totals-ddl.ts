import type { ResourceDescription } from '../../model/description'
import { searchOf } from '../../resources/registry'
import type { PostgresTrigger } from './ddl'
import { type PostgresFunction, triggerFunction } from './search-totals-ddl'

/**
 * search_totals as it is kept since shared migration 4 (PostgreSQL 13): the records of each
 * searched table alone, the total of an unfiltered page. Its words (what the bm25 emulation read,
 * gone since) cost every write one more search_words() of each row added or removed, two of each
 * row renamed, and were read by nothing. A statement that adds or removes rows sums them from its
 * transition table into a transaction-local setting (undone with a savepoint rolled back, as the
 * rows are); a deferred trigger writes the sums into this backend's slot once, at the commit,
 * after every other lock of the transaction. An UPDATE changes no total and fires none of these.
 * The start-up check (schema.ts) compares the database's triggers and bodies with these.
 */

/** What the pending sum of a table is kept under, for the rest of the transaction. */
const pending = "'catalogue.search_records_' || TG_TABLE_NAME"

function countFunction(name: string, rows: 'new_rows' | 'old_rows', sign: '+' | '-'): PostgresFunction {
  const body = `
      DECLARE
        setting text := ${pending};
        changed bigint;
      BEGIN
        SELECT pg_catalog.count(*) INTO changed FROM ${rows};
        PERFORM pg_catalog.set_config(setting,
          (COALESCE(NULLIF(pg_catalog.current_setting(setting, true), ''), '0')::bigint ${sign} changed)::text, true);
        RETURN NULL;
      END
      `
  return triggerFunction(name, 'count', body)
}

/** The statement triggers' functions, the same for every searched table (TG_TABLE_NAME says which). */
export const recordCountFunctions: readonly PostgresFunction[] = [
  countFunction('count_records_added', 'new_rows', '+'),
  countFunction('count_records_removed', 'old_rows', '-'),
]

/** At the commit, once a transaction: the pending sums of every searched table into this backend's slot. */
export function recordFlushFunction(resources: readonly ResourceDescription[]): PostgresFunction {
  const tables = resources.filter((r) => searchOf(r)).map((r) => `'${r.table}'`)
  const body = `
      DECLARE
        tbl text;
        pending text;
      BEGIN
        FOREACH tbl IN ARRAY ARRAY[${tables.join(', ')}] LOOP
          pending := pg_catalog.current_setting('catalogue.search_records_' || tbl, true);
          IF pending IS NOT NULL AND pending <> '' THEN
            PERFORM pg_catalog.set_config('catalogue.search_records_' || tbl, '', true);
            IF pending <> '0' THEN
              UPDATE search_totals SET records = records + pending::bigint
                WHERE table_name = tbl AND slot = pg_catalog.pg_backend_pid() % 8;
            END IF;
          END IF;
        END LOOP;
        RETURN NULL;
      END
      `
  const name = 'flush_search_records'
  return triggerFunction(name, 'flush', body)
}

/** A TRUNCATE clears the table's total at once, and what earlier statements left pending. */
export const clearRecordsSql = `CREATE OR REPLACE FUNCTION clear_search_totals() RETURNS trigger LANGUAGE plpgsql AS $clear$
      BEGIN
        PERFORM pg_catalog.set_config(${pending}, '', true);
        UPDATE search_totals SET records = 0 WHERE table_name = TG_TABLE_NAME;
        RETURN NULL;
      END
      $clear$;`

/** A searched table's triggers that keep its records in search_totals. */
export function recordTotalTriggers(resource: ResourceDescription): PostgresTrigger[] {
  if (!searchOf(resource)) return []
  const table = resource.table
  const statement = (change: 'added' | 'removed', on: string, fn: string): PostgresTrigger => ({
    name: `${table}_search_${change}`,
    table,
    function: fn,
    sql: `CREATE TRIGGER ${table}_search_${change} ${on}\n  FOR EACH STATEMENT EXECUTE FUNCTION ${fn}();`,
  })
  return [
    statement('added', `AFTER INSERT ON ${table} REFERENCING NEW TABLE AS new_rows`, 'count_records_added'),
    statement('removed', `AFTER DELETE ON ${table} REFERENCING OLD TABLE AS old_rows`, 'count_records_removed'),
    {
      name: `${table}_search_totals`,
      table,
      function: 'flush_search_records',
      sql: `CREATE CONSTRAINT TRIGGER ${table}_search_totals AFTER INSERT OR DELETE ON ${table}
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION flush_search_records();`,
    },
    {
      name: `${table}_search_truncate`,
      table,
      function: 'clear_search_totals',
      sql: `CREATE TRIGGER ${table}_search_truncate AFTER TRUNCATE ON ${table} EXECUTE FUNCTION clear_search_totals();`,
    },
  ]
}

/**
 * The migration from the word-counting totals (migration 5) of the types there are: their
 * statement and flush triggers and functions go, the words column with them, the records' come.
 * `wordFunctionNames`: the names of migration 5's word functions of these types.
 */
export function recordTotalsMigrationSql(
  resources: readonly ResourceDescription[],
  wordFunctionNames: readonly string[],
): string[] {
  const searched = resources.filter((r) => searchOf(r))
  return [
    ...searched.flatMap((r) =>
      ['added', 'removed', 'changed', 'totals'].map((part) => `DROP TRIGGER ${r.table}_search_${part} ON ${r.table};`),
    ),
    ...[...new Set(wordFunctionNames)].map((name) => `DROP FUNCTION ${name}();`),
    'DROP FUNCTION flush_search_totals();',
    'DROP FUNCTION pend_search_totals(text, bigint, bigint);',
    // Migration 3's, unused since migration 5: it wrote the words too.
    'DROP FUNCTION add_search_totals(text, int, bigint);',
    'ALTER TABLE search_totals DROP COLUMN words;',
    clearRecordsSql,
    ...recordCountFunctions.map((fn) => fn.sql),
    recordFlushFunction(resources).sql,
    // The truncate trigger stays as it was; the others are the records' now.
    ...searched.flatMap((r) =>
      recordTotalTriggers(r)
        .filter((t) => !t.name.endsWith('_truncate'))
        .map((t) => t.sql),
    ),
  ]
}
