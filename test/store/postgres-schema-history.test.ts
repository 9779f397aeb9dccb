import { expect, setDefaultTimeout } from 'bun:test'
import { SQL } from 'bun'
import { migratePostgres, type PostgresMigration } from '../../src/store/postgres/migrate'
import { postgresMigrationsWith } from '../../src/store/postgres/migrations'
import { afterAll, describe, it, POSTGRES_SERVER } from '../support/postgres-tests'
import { scratchDatabases } from '../support/test-database'
import { handWrittenPostgresMigrations1to3 } from './reference/postgres-migrations-1-3'
import { handWrittenPostgresMigrations4to9 } from './reference/postgres-migrations-4-9'

/** PostgreSQL's own history, without the shared migrations after it (the hand-written SQL is of those alone). */
const postgresHistory = postgresMigrationsWith([])

// Databases made and migrated many times over: more than Bun's 5 s default on a busy machine.
setDefaultTimeout(120_000)

// The PostgreSQL migrations are written from the descriptions now (src/store/postgres/ddl.ts). A
// database migrated by them must be the one the hand-written SQL made, from a database the
// hand-written migrations left at any version, with data in it: the same catalog and the same rows.

const handWritten: readonly PostgresMigration[] = [
  ...handWrittenPostgresMigrations1to3,
  ...handWrittenPostgresMigrations4to9,
]
const databases = scratchDatabases(POSTGRES_SERVER)

afterAll(() => databases.dropAll())

/** The schema as the catalog holds it: columns, constraints, indexes, triggers, functions, sequences. */
async function schemaDump(sql: SQL): Promise<unknown> {
  const columns = await sql`
    SELECT table_name, column_name, ordinal_position, data_type, is_nullable, collation_name, column_default,
        is_identity, identity_generation, identity_start, is_generated, generation_expression
      FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`
  const constraints = await sql`
    SELECT conrelid::regclass::text AS on_table, conname, pg_get_constraintdef(oid) AS definition, condeferrable,
        condeferred
      FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2`
  const indexes =
    await sql`SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1, 2`
  const triggers = await sql`
    SELECT tgrelid::regclass::text AS on_table, tgname, pg_get_triggerdef(oid) AS definition, tgenabled
      FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1, 2`
  const functions = await sql`
    SELECT proname, pg_get_function_identity_arguments(oid) AS arguments, prosrc, provolatile, proisstrict,
        proparallel, prorettype::regtype::text AS returns
      FROM pg_proc WHERE pronamespace = 'public'::regnamespace ORDER BY 1, 2`
  const sequences = await sql`SELECT sequencename, start_value, increment_by FROM pg_sequences ORDER BY 1`
  return { columns, constraints, indexes, triggers, functions, sequences }
}

/** Every row of the tables but the times of the migrations and the generation drawn at random. */
async function dataDump(sql: SQL): Promise<unknown> {
  const tables = await sql`
    SELECT table_name FROM information_schema.tables
      WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1`
  const rows: Record<string, unknown> = {}
  for (const { table_name } of tables as { table_name: string }[]) {
    if (table_name === 'data_generation') continue
    const shown = table_name === 'schema_migrations' ? 'version, name' : '*'
    rows[table_name] = await sql.unsafe(`SELECT ${shown} FROM "${table_name}" ORDER BY 1, 2`)
  }
  return rows
}

/** Authors, collections and books written at some version, names decomposed among them (migration 6). */
async function writeData(sql: SQL, version: number): Promise<void> {
  // Before migration 7 the ids were the writer's to choose (from record_ids); since, the table's.
  const ids = version < 7
  await sql.unsafe(
    `INSERT INTO authors (${ids ? 'id, ' : ''}name) VALUES (${ids ? '1, ' : ''}'E\u0301mile Zola'), (${ids ? '2, ' : ''}'Ursula K. Le Guin')`,
  )
  await sql.unsafe(
    `INSERT INTO book_collections (${ids ? 'id, ' : ''}name) VALUES (${ids ? '1, ' : ''}'Les Rougon-Macquart')`,
  )
  await sql.unsafe(`INSERT INTO books (${ids ? 'id, ' : ''}name, author_id, book_collection_id) VALUES
    (${ids ? '1, ' : ''}'L''Assommoir', 1, 1), (${ids ? '2, ' : ''}'Germinal', 1, 1),
    (${ids ? '3, ' : ''}'The Dispossessed', 2, NULL), (${ids ? '4, ' : ''}'Nana', 1, 1)`)
  if (ids) await sql`UPDATE record_ids SET last_id = 4 WHERE table_name = 'books'`
  await sql`DELETE FROM books WHERE id = 4`
  await sql`UPDATE books SET name = 'The Left Hand of Darkness' WHERE id = 3`
  await sql`DELETE FROM book_collections WHERE id = 1`
}

/** A fresh database: `before` applied, data written, then `after`; its schema and rows. */
async function built(before: readonly PostgresMigration[], after: readonly PostgresMigration[]) {
  const sql = new SQL(await databases.fresh(), { max: 1 })
  try {
    await migratePostgres(sql, before)
    if (before.length > 0) await writeData(sql, before.length)
    await migratePostgres(sql, [...before, ...after])
    // search_totals and data_version are kept in slots by backend pid: summed, as every reader sums them.
    const totals = await sql`
      SELECT table_name, SUM(records)::int AS records, SUM(words)::int AS words FROM search_totals GROUP BY 1 ORDER BY 1`
    const [commits] = await sql`SELECT SUM(commits)::int AS commits FROM data_version`
    await sql`UPDATE search_totals SET records = 0, words = 0`
    await sql`UPDATE data_version SET commits = 0`
    return { schema: await schemaDump(sql), data: await dataDump(sql), totals, commits }
  } finally {
    await sql.close()
  }
}

describe('the PostgreSQL migrations drawn from the descriptions', () => {
  it('number and name the migrations as the hand-written ones did', () => {
    expect(postgresHistory.map(({ version, name }) => ({ version, name }))).toEqual(
      handWritten.map(({ version, name }) => ({ version, name })),
    )
  })

  it('build from nothing the schema the hand-written SQL built', async () => {
    expect(await built([], postgresHistory)).toEqual(await built([], handWritten))
  })

  it('take a database the hand-written migrations left at any version to the same schema and data', async () => {
    const reference = new Map<number, unknown>()
    for (let version = 1; version <= handWritten.length; version++) {
      const before = handWritten.slice(0, version)
      reference.set(version, await built(before, handWritten.slice(version)))
      const generated = await built(before, postgresHistory.slice(version))
      expect({ version, ...(generated as object) }).toEqual({ version, ...(reference.get(version) as object) })
    }
  })
})
