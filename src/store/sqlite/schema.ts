import { Database } from 'bun:sqlite'
import { type ResourceRegistry, searchOf } from '../../resources/registry'
import type { IndexBuilt } from '../migration-state'
import { Table } from '../sql/table'
import { schemaSql } from './ddl'
import { indexColumns, searchIndexName } from './search'

/**
 * Refuses to start on a database whose tables do not hold what the resource descriptions say:
 * every described column, the triggers that count its changes for version(), a search index of
 * exactly the searched attributes, and its row of record_counts with the triggers that keep it.
 * Without this, a description ahead of its migration answered wrong data (SQLite takes an unknown
 * double-quoted column name for a string literal). Last, every table, index and trigger that the
 * generator (ddl.ts) writes for the descriptions must be in the file as it writes them (an index
 * it lacks may be built or allowed: see missingIndexes).
 */
export function checkSchema(
  db: Database,
  registry: ResourceRegistry,
  /**
   * What becomes of an index the generator writes and the file lacks: allowed (a reader, which
   * answers the same without it) or built (a writer, see missingIndexesOf).
   */
  missingIndexes: 'allowed' | 'built',
  /** Told of each index built (missingIndexes `built`). */
  onIndexBuilt: (built: IndexBuilt) => void = () => {},
): void {
  const columnsOf = (table: string) =>
    db
      .query<{ name: string }, [string]>('SELECT name FROM pragma_table_info(?)')
      .all(table)
      .map((c) => c.name)
  for (const resource of registry.all) {
    const present = new Set(columnsOf(resource.table))
    if (present.size === 0) throw new Error(`the database has no table ${resource.table} for ${resource.type}`)
    const absent = new Table(resource).columnNames().filter((c) => !present.has(c))
    if (absent.length > 0) {
      throw new Error(
        `table ${resource.table} lacks the column(s) ${absent.join(', ')} that ${resource.type} describes`,
      )
    }
    const search = searchOf(resource)
    if (!search) continue
    const wanted = indexColumns(new Table(resource), search, registry).map((c) => c.column)
    const index = searchIndexName(resource.table)
    const indexed = columnsOf(index)
    if (indexed.join(',') !== wanted.join(',')) {
      throw new Error(
        `the search index ${index} holds (${indexed.join(', ')}), but ${resource.type} searches (${wanted.join(', ')})`,
      )
    }
  }
  // version() counts the changes of every data table: a table its migration left out of the count
  // would let a streamed answer keep a tag its data no longer has.
  for (const resource of registry.all) {
    for (const event of ['insert', 'update', 'delete']) {
      const trigger = `${resource.table}_count_${event}`
      if (!db.query('SELECT 1 FROM sqlite_master WHERE type = ? AND name = ?').get('trigger', trigger)) {
        throw new Error(
          `the database has no trigger ${trigger}, so changes to ${resource.table} would not reach version()`,
        )
      }
    }
  }
  // A page's total of an unfiltered list is its table's row of record_counts (migration 7): a table
  // without its row or its triggers would answer a wrong total.
  for (const resource of registry.all) {
    if (!db.query('SELECT 1 FROM record_counts WHERE table_name = ?').get(resource.table)) {
      throw new Error(`record_counts has no row for ${resource.table}, so its pages would have no total`)
    }
    for (const event of ['insert', 'delete']) {
      const trigger = `${resource.table}_records_${event}`
      if (!db.query('SELECT 1 FROM sqlite_master WHERE type = ? AND name = ?').get('trigger', trigger)) {
        throw new Error(
          `the database has no trigger ${trigger}, so the total of a page of ${resource.table} would be wrong`,
        )
      }
    }
  }
  // One a transaction, so that an import under way (whose next batch waits for the lock) and the
  // service's writes wait for one at most; IF NOT EXISTS: another process may have built it since.
  const expected = generatedObjects(registry)
  if (missingIndexes === 'built') {
    for (const index of missingIndexesOf(db, expected)) {
      const started = performance.now()
      db.transaction(() => db.run(ifNotExists(index.sql as string))).immediate()
      onIndexBuilt({ name: index.name, durationMs: performance.now() - started })
    }
  }
  const differing = generatedMismatch(db, expected, missingIndexes === 'allowed')
  if (differing) throw new Error(differing)
}

/** SQL text with the layout of its source left out, as two writings of one statement compare. */
export function layoutFree(sql: string): string {
  return sql
    .replace(/\s+/g, ' ')
    .replace(/\s*([(),])\s*/g, '$1')
    .trim()
}

type SchemaObject = { type: string; name: string; sql: string | null }

/** What the generator writes for `registry`, as SQLite records it, built in memory. */
function generatedObjects(registry: ResourceRegistry): SchemaObject[] {
  const wanted = new Database(':memory:')
  try {
    wanted.run(schemaSql(registry))
    return wanted.query<SchemaObject, []>('SELECT type, name, sql FROM sqlite_master ORDER BY name').all()
  } finally {
    wanted.close()
  }
}

/**
 * The indexes the generator writes that the file lacks. An import into an empty catalogue builds
 * most of its books' indexes at its end (sqlite/import-indexes.ts), and one stopped before that, by
 * a crash, leaves them out. An index holds nothing its table does not, so a writer opening the file
 * builds them rather than refuse it, and a reader answers the same without them, only slower.
 */
function missingIndexesOf(db: Database, expected: readonly SchemaObject[]): SchemaObject[] {
  const present = new Set(
    db
      .query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'index'")
      .all()
      .map((o) => o.name),
  )
  return expected.filter((o) => o.type === 'index' && o.sql !== null && !present.has(o.name))
}

/** A CREATE INDEX statement that does nothing where the index is there already. */
export function ifNotExists(createIndex: string): string {
  return createIndex.replace(/^CREATE (UNIQUE )?INDEX (?!IF NOT EXISTS)/i, 'CREATE $1INDEX IF NOT EXISTS ')
}

/**
 * Compares each table, index and trigger the generator writes (`expected`) with the file's
 * (FTS5's own shadow tables left out: their SQL is FTS5's, and may differ with the SQLite version
 * that made them). Returns the first mismatch, or null.
 */
function generatedMismatch(
  db: Database,
  expected: readonly SchemaObject[],
  missingIndexesAllowed: boolean,
): string | null {
  const present = new Map(
    db
      .query<SchemaObject, []>('SELECT type, name, sql FROM sqlite_master')
      .all()
      .map((o) => [o.name, o]),
  )
  const shadows = new Set(
    expected
      .filter((o) => o.sql?.startsWith('CREATE VIRTUAL TABLE'))
      .flatMap((o) => ['data', 'idx', 'content', 'docsize', 'config'].map((part) => `${o.name}_${part}`)),
  )
  for (const object of expected) {
    if (object.name.startsWith('sqlite_') || shadows.has(object.name)) continue
    const found = present.get(object.name)
    if (!found && object.type === 'index' && missingIndexesAllowed) continue
    if (!found || found.type !== object.type) {
      return `the database has no ${object.type} ${object.name}, which the descriptions' schema holds`
    }
    if (layoutFree(found.sql ?? '') !== layoutFree(object.sql ?? '')) {
      return `the ${object.type} ${object.name} is not as the descriptions' schema writes it: ${object.sql}`
    }
  }
  return null
}
