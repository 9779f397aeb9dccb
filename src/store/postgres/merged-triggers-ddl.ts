import type { ResourceDescription } from '../../model/description'
import { searchOf } from '../../resources/registry'
import type { PostgresTrigger } from './ddl'
import { type PostgresFunction, triggerFunction } from './search-totals-ddl'
import { vocabularyFunctions } from './vocabulary-ddl'

/**
 * A write's triggers as shared migration 5 (PostgreSQL 14) merges them. Each trigger a write fires
 * runs PL/pgSQL and each statement in it starts and ends an executor: about 40-50 µs a trigger on
 * this machine, most of what a write into the service's schema costs beyond a plain table
 * (bench/standalone/postgres-write-cost.ts). So:
 *
 * - the feed's row trigger also counts the records a write adds or removes, into the transaction-
 *   local setting the statement triggers used to fill from their transition tables (which go);
 * - the feed's order check is the WHEN of a trigger of its own, evaluated without PL/pgSQL: the
 *   row a BEFORE trigger is given is the version the write locked, whose xmin is its last writer
 *   (no second read of the row);
 * - one deferred trigger at the commit counts the commit for version() and writes the pending
 *   record counts, instead of two triggers and four statements;
 * - the vocabulary takes a row's words from its stored search words, not search_words() again.
 *
 * What each keeps is as before: a change in `changes` for each row, in the write's transaction;
 * data_version and search_totals' slots locked only from the commit trigger to the end of the
 * commit; a TRUNCATE clears what is pending (clear_search_totals()).
 */

/** What the pending record count of a table is kept under, for the rest of the transaction. */
function pendingSetting(table: string): string {
  return `catalogue.search_records_${table}`
}

/** The feed's function of a type: its row in `changes`, and ±1 to the pending count of a searched type. */
export function countedFeedFunction(resource: ResourceDescription): PostgresFunction {
  const name = `${resource.table}_feed`
  const searched = searchOf(resource) !== undefined
  const setting = pendingSetting(resource.table)
  const pend = (sign: '+' | '-') =>
    searched
      ? `\n    pended := pg_catalog.set_config('${setting}', (COALESCE(NULLIF(pg_catalog.current_setting('${setting}', true), ''), '0')::bigint ${sign} 1)::text, true);`
      : ''
  const insert = (id: string, op: string) =>
    `INSERT INTO changes (type, record_id, op) VALUES ('${resource.type}', ${id}, '${op}');`
  const body = `
DECLARE
  pended text;
BEGIN
  IF TG_OP = 'INSERT' THEN
    ${insert('NEW.id', 'create')}${pend('+')}
    RETURN NEW;
  END IF;
  IF TG_OP = 'UPDATE' THEN
    ${insert('OLD.id', 'update')}
    RETURN NEW;
  END IF;
  ${insert('OLD.id', 'delete')}${pend('-')}
  RETURN OLD;
END
`
  return triggerFunction(name, 'feed', body)
}

const orderFailureBody = `
BEGIN
  RAISE EXCEPTION 'record % of % was changed by a younger transaction', OLD.id, TG_TABLE_NAME
    USING ERRCODE = 'serialization_failure';
END
`

/** Raised when the order check's WHEN holds: the store runs the write again (postgres/retries.ts). */
export const feedOrderFunction: PostgresFunction = triggerFunction('feed_order_failure', 'order', orderFailureBody)

/**
 * The order check (feed-ddl.ts): a write of a row whose last writer is a transaction younger than
 * its own fails with 40001. BEFORE, so that OLD is the version it locked, the last committed one.
 */
export function feedOrderTrigger(resource: ResourceDescription): PostgresTrigger {
  const table = resource.table
  const name = `${table}_feed_order`
  return {
    name,
    table,
    function: feedOrderFunction.name,
    sql: `CREATE TRIGGER ${name} BEFORE UPDATE OR DELETE ON ${table}
  FOR EACH ROW WHEN (pg_catalog.age(OLD.xmin) < 0) EXECUTE FUNCTION ${feedOrderFunction.name}();`,
  }
}

/**
 * At the commit, once a transaction: one to this backend's slot of data_version (pid modulo 8),
 * and the pending record counts of every searched table into its slots of search_totals, each an
 * update of one row found by its key, as migration 13's two triggers did, in one trigger. Each
 * later row of the transaction finds it counted and nothing pending. (Tried: both in one statement
 * joined to the pending counts, and a slot no other commit held, FOR UPDATE SKIP LOCKED: the join
 * scanned a slot's rows of every table, and the free slot's search scanned data_version's dead
 * versions and logged a lock before its update: the service's POST, PATCH and DELETE ran at
 * 0.49-0.92 of the build before this migration (0f93196), where this runs at 0.98-1.15 (bun run
 * bench -- before-after, load 7-10).)
 * A TRUNCATE counted the commit already (count_data_commit(), at once); the records written after
 * it are still flushed here.
 */
export function commitFlushFunction(resources: readonly ResourceDescription[]): PostgresFunction {
  const tables = resources.filter((r) => searchOf(r)).map((r) => `'${r.table}'`)
  const body = `
      DECLARE
        tbl text;
        pending text;
        done text;
      BEGIN
        IF pg_catalog.current_setting('catalogue.commit_counted', true) IS DISTINCT FROM 'yes' THEN
          done := pg_catalog.set_config('catalogue.commit_counted', 'yes', true);
          UPDATE data_version SET commits = commits + 1 WHERE slot = pg_catalog.pg_backend_pid() % 8;
        END IF;
        FOREACH tbl IN ARRAY ARRAY[${tables.join(', ')}]::text[] LOOP
          pending := pg_catalog.current_setting('catalogue.search_records_' || tbl, true);
          IF pending IS NOT NULL AND pending <> '' THEN
            done := pg_catalog.set_config('catalogue.search_records_' || tbl, '', true);
            IF pending <> '0' THEN
              UPDATE search_totals SET records = records + pending::bigint
                WHERE table_name = tbl AND slot = pg_catalog.pg_backend_pid() % 8;
            END IF;
          END IF;
        END LOOP;
        RETURN NULL;
      END
      `
  const name = 'flush_commit'
  return triggerFunction(name, 'flush', body)
}

/** The commit's trigger of a type: deferred to the commit, on every kind of row write. */
export function commitFlushTrigger(resource: ResourceDescription): PostgresTrigger {
  const table = resource.table
  const name = `${table}_commit`
  return {
    name,
    table,
    function: 'flush_commit',
    sql: `CREATE CONSTRAINT TRIGGER ${name} AFTER INSERT OR UPDATE OR DELETE ON ${table}
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION flush_commit();`,
  }
}

/**
 * The migration from migration 13's triggers for the types there are: the records' statement and
 * flush triggers and their functions go, the commit's trigger runs the one flush, the feed's
 * functions count and lose their read of the row, the order check and the vocabularies' functions
 * on the stored words come.
 */
export function mergedTriggersMigrationSql(resources: readonly ResourceDescription[]): string[] {
  const searched = resources.filter((r) => searchOf(r))
  return [
    ...searched.flatMap((r) =>
      ['added', 'removed', 'totals'].map((part) => `DROP TRIGGER ${r.table}_search_${part} ON ${r.table};`),
    ),
    ...resources.map((r) => `DROP TRIGGER ${r.table}_commit ON ${r.table};`),
    'DROP FUNCTION count_records_added();',
    'DROP FUNCTION count_records_removed();',
    'DROP FUNCTION flush_search_records();',
    feedOrderFunction.sql,
    commitFlushFunction(resources).sql,
    ...resources.flatMap((r) => [
      countedFeedFunction(r).sql,
      feedOrderTrigger(r).sql,
      commitFlushTrigger(r).sql,
      ...vocabularyFunctions(r, 'stored', 'keyed').map((fn) => fn.sql),
    ]),
  ]
}
