import type { ResourceDescription } from '../../model/description'
import { HISTORY_SQL } from './change-history'
import { type PostgresFunction, triggerFunction } from './search-totals-ddl'

/**
 * The change feed's schema on PostgreSQL (src/store/change-log.ts). A row trigger on every type
 * writes a row to `changes` in the writing transaction: its transaction id, a sequence number in
 * the order of the statements, the record and what happened to it. A read returns positions
 * (xid, seq) only below the oldest transaction still running (pg_snapshot_xmin), so a transaction
 * that commits late can never land before a position already read, and no write waits for another.
 *
 * Per record, the feed must hold the order in which the writes happened. Ordering by transaction
 * id can only break it when a transaction with an older id changes a row after a younger one
 * committed a change to it (it waited for the row's lock): the trigger sees the row's last writer
 * (its xmin, younger than this transaction) and fails the write with a serialization failure, which
 * the store runs again (postgres/retries.ts), then with a younger id of its own.
 */
export const feedTablesSql = [
  `CREATE TABLE changes (
  xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
  seq bigint GENERATED ALWAYS AS IDENTITY,
  type text NOT NULL,
  record_id bigint NOT NULL,
  op text NOT NULL,
  at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (xid, seq)
);`,
  `CREATE TABLE change_horizon (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  xid xid8 NOT NULL,
  seq bigint NOT NULL
);`,
  `INSERT INTO change_horizon (xid, seq) VALUES ('0', 0);`,
]

/**
 * The history the feed's positions belong to (src/store/postgres/change-history.ts), recorded when
 * the feed gets it (shared migration 2): a database whose history differs since (a restore, a
 * database made again, a promoted standby) starts its feed over when an instance opens it, or at
 * a running instance's next read of the feed.
 */
export const feedHistorySql = [
  "ALTER TABLE change_horizon ADD COLUMN history text NOT NULL DEFAULT '';",
  `UPDATE change_horizon SET history = ${HISTORY_SQL};`,
]

function functionName(resource: ResourceDescription): string {
  return `${resource.table}_feed`
}

/** The function a type's feed trigger runs: the order check, then its row in `changes`. */
export function feedFunction(resource: ResourceDescription): PostgresFunction {
  const name = functionName(resource)
  const body = `
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO changes (type, record_id, op) VALUES ('${resource.type}', NEW.id, 'create');
    RETURN NEW;
  END IF;
  IF (SELECT age(xmin) FROM ${resource.table} WHERE id = OLD.id) < 0 THEN
    RAISE EXCEPTION 'record % of ${resource.table} was changed by a younger transaction', OLD.id
      USING ERRCODE = 'serialization_failure';
  END IF;
  IF TG_OP = 'UPDATE' THEN
    INSERT INTO changes (type, record_id, op) VALUES ('${resource.type}', OLD.id, 'update');
    RETURN NEW;
  END IF;
  INSERT INTO changes (type, record_id, op) VALUES ('${resource.type}', OLD.id, 'delete');
  RETURN OLD;
END
`
  return triggerFunction(name, 'feed', body)
}

/** The trigger: BEFORE, so that the order check sees the row's last committed writer. */
export function feedTrigger(resource: ResourceDescription): {
  name: string
  table: string
  function: string
  sql: string
} {
  const name = functionName(resource)
  const table = resource.table
  return {
    name,
    table,
    function: name,
    sql: `CREATE TRIGGER ${name} BEFORE INSERT OR UPDATE OR DELETE ON ${table}
  FOR EACH ROW EXECUTE FUNCTION ${name}();`,
  }
}

/** Everything the feed adds to a type: its function and trigger. */
export function feedTypeSql(resource: ResourceDescription): string[] {
  return [feedFunction(resource).sql, feedTrigger(resource).sql]
}
