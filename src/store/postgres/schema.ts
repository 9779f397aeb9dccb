import type { SQL, TransactionSQL } from 'bun'
import { type ResourceRegistry, searchOf } from '../../resources/registry'
import { Table } from '../sql/table'
import { currentStage, typeFunctions, typeTriggers } from './ddl'
import { searchColumnName, searchedColumns } from './search-columns'

/**
 * Refuses to start on a database whose schema does not hold what the resource descriptions need,
 * as checkSchema does for SQLite (src/store/sqlite/schema.ts): every described column; ids that
 * the database generates; the triggers that count a table's commits for version(), TRUNCATE
 * included, and enabled; and for a searched type, each searched attribute's stored search words
 * with a GIN index on them, and the triggers that keep its search_totals (which give an
 * unfiltered page its total). A
 * description ahead of its migration would otherwise answer wrong data or fail on every request.
 * Returns the first mismatch as a sentence, or null.
 */
export async function postgresSchemaMismatch(sql: SQL, registry: ResourceRegistry): Promise<string | null> {
  // One transaction: one snapshot of the catalogs, and no STATEMENT_TIMEOUT (the start is not held
  // to it) even behind a pooler in transaction mode, which keeps no setting of a session (PgBouncer).
  const [[columns, triggers, indexes, slots], functions] = await sql.begin(async (tx) => {
    await tx`SET LOCAL statement_timeout = 0`
    return [await catalogued(tx), await functionBodies(tx)] as const
  })
  return (
    mismatchOf(registry, columns, triggers, indexes, slots) ??
    generatedMismatch(registry, triggers as CataloguedTrigger[], functions)
  )
}

type CataloguedTrigger = { table_name: string; trigger_name: string; function_name: string }

/** The bodies of the schema's functions, by name (pg_proc alone: no lock to wait for). */
async function functionBodies(sql: TransactionSQL): Promise<Map<string, string>> {
  const rows = await sql`
    SELECT proname::text AS name, prosrc AS body FROM pg_proc
      WHERE pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())`
  return new Map((rows as { name: string; body: string }[]).map((r) => [r.name, r.body]))
}

/** SQL text with the layout of its source left out. */
function layoutFree(text: string): string {
  return text.replace(/\s+/g, ' ').trim()
}

/**
 * What the generator (ddl.ts) writes for the descriptions, compared with the database: every
 * trigger on its table running its function, and every function it writes with its body (the
 * flush's list of tables among them, so that a type left out of it cannot go unseen).
 */
function generatedMismatch(
  registry: ResourceRegistry,
  triggers: readonly CataloguedTrigger[],
  functions: ReadonlyMap<string, string>,
): string | null {
  for (const resource of registry.all) {
    for (const trigger of typeTriggers(resource, currentStage)) {
      const found = triggers.find((t) => t.table_name === trigger.table && t.trigger_name === trigger.name)
      if (!found)
        return `the database has no trigger ${trigger.name} on ${trigger.table}, which the descriptions' schema holds`
      if (found.function_name !== trigger.function) {
        return `the trigger ${trigger.name} runs ${found.function_name}(), but the descriptions' schema runs ${trigger.function}()`
      }
    }
  }
  for (const fn of typeFunctions(registry.all, currentStage)) {
    const body = functions.get(fn.name)
    if (body === undefined) return `the database has no function ${fn.name}(), which the descriptions' schema holds`
    if (layoutFree(body) !== layoutFree(fn.body)) {
      return `the function ${fn.name}() is not as the descriptions' schema writes it: ${fn.sql}`
    }
  }
  return null
}

/**
 * What the check reads: the schema's columns, its enabled triggers, the columns its GIN indexes
 * cover, and the slots of search_totals each table has.
 */
async function catalogued(sql: TransactionSQL): Promise<[unknown[], unknown[], unknown[], unknown[]]> {
  const columns = await sql`
    SELECT table_name::text AS table_name, column_name::text AS column_name,
        is_identity = 'YES' OR column_default IS NOT NULL AS generated
      FROM information_schema.columns
      WHERE table_schema = current_schema()`
  const triggers = await sql`
    SELECT c.relname::text AS table_name, t.tgname::text AS trigger_name, p.proname::text AS function_name
      FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid
      WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())
        AND NOT t.tgisinternal AND t.tgenabled <> 'D'`
  // The columns that a GIN index covers (migration 9: each searched attribute's stored words),
  // from the catalogs alone: pg_get_indexdef() would wait for a lock that an operator's LOCK TABLE
  // holds, and this runs at start without STATEMENT_TIMEOUT.
  const indexes = await sql`
    SELECT t.relname::text AS table_name, a.attname::text AS column_name
      FROM pg_index x
      JOIN pg_class t ON t.oid = x.indrelid
      JOIN pg_class i ON i.oid = x.indexrelid
      JOIN pg_am am ON am.oid = i.relam AND am.amname = 'gin'
      JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = ANY(x.indkey::int2[])
      WHERE t.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())`
  // A commit adds its change to the slot of its backend (pid modulo 8): a slot without its row
  // would drop the changes of every commit that lands on it.
  const slots = await sql`
    SELECT table_name, COUNT(DISTINCT slot)::int AS slots FROM search_totals WHERE slot BETWEEN 0 AND 7 GROUP BY table_name`
  return [columns, triggers, indexes, slots]
}

function mismatchOf(
  registry: ResourceRegistry,
  columns: unknown[],
  triggers: unknown[],
  indexes: unknown[],
  slots: unknown[],
): string | null {
  const columnsOf = new Map<string, Set<string>>()
  const generatedIds = new Set<string>()
  for (const { table_name, column_name, generated } of columns as {
    table_name: string
    column_name: string
    generated: boolean
  }[]) {
    const set = columnsOf.get(table_name) ?? new Set<string>()
    set.add(column_name)
    columnsOf.set(table_name, set)
    if (column_name === 'id' && generated) generatedIds.add(table_name)
  }
  const hasTrigger = (table: string, name: string) =>
    (triggers as { table_name: string; trigger_name: string }[]).some(
      (t) => t.table_name === table && t.trigger_name === name,
    )
  const searchIndexed = indexes as { table_name: string; column_name: string }[]
  for (const resource of registry.all) {
    const table = resource.table
    const present = columnsOf.get(table)
    if (!present) return `the database has no table ${table} for ${resource.type}`
    const absent = new Table(resource).columnNames().filter((c) => !present.has(c))
    if (absent.length > 0) {
      return `table ${table} lacks the column(s) ${absent.join(', ')} that ${resource.type} describes`
    }
    // Migration 7: a create leaves the id to the database; without it every create would fail.
    if (!generatedIds.has(table)) return `table ${table} does not generate its ids (an identity column, migration 7)`
    for (const trigger of [`${table}_commit`, `${table}_truncate`]) {
      if (!hasTrigger(table, trigger)) {
        return `the database has no trigger ${trigger}, so changes to ${table} would not reach version()`
      }
    }
    const search = searchOf(resource)
    if (!search) continue
    for (const column of searchedColumns(resource).map(searchColumnName)) {
      if (!present.has(column)) return `table ${table} lacks the column ${column} that searches read (migration 9)`
      const indexed = searchIndexed.some((i) => i.table_name === table && i.column_name === column)
      if (!indexed) return `the database has no search index on ${table}.${column}, which ${resource.type} searches`
    }
    // The feed's row trigger counts the records a write adds or removes, the commit's trigger writes
    // them (shared migration 5); migration 3's TRUNCATE clears them. The sum of its slots is the
    // total of an unfiltered page.
    for (const trigger of [`${table}_feed`, `${table}_search_truncate`]) {
      if (!hasTrigger(table, trigger)) {
        return `the database has no trigger ${trigger}, so the page totals of ${resource.type} would be wrong`
      }
    }
    const kept = (slots as { table_name: string; slots: number }[]).find((s) => s.table_name === table)?.slots ?? 0
    if (kept !== 8) {
      return `search_totals holds ${kept} of the 8 slots of ${table}, so the page totals of ${resource.type} would be wrong`
    }
  }
  return null
}
