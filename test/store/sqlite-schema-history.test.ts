import { Database } from 'bun:sqlite'
import { describe, expect, it } from 'bun:test'
import { migrate } from '../../src/store/sqlite/migrate'
import { type Migration, sqliteMigrationsWith } from '../../src/store/sqlite/migrations'
import { handWrittenSqliteMigrations } from './reference/sqlite-migrations'

/** SQLite's own history, without the shared migrations after it (the hand-written SQL is of those alone). */
const sqliteHistory = sqliteMigrationsWith([])

// The SQLite migrations are written from the descriptions now (src/store/sqlite/ddl.ts). A
// database migrated by them must be the one the hand-written SQL made: from nothing, and from a
// file the hand-written migrations left at any version, with data in it.

/** SQL text as SQLite keeps it, with the layout of the source left out (indentation, line breaks). */
function layoutFree(sql: string | null): string | null {
  return (
    sql
      ?.replace(/\s+/g, ' ')
      .replace(/\s*([(),])\s*/g, '$1')
      .trim() ?? null
  )
}

/** Everything of the schema: each object's kind, table and SQL, and what the pragmas say of each table. */
function schemaDump(db: Database): unknown {
  const objects = db
    .query<{ type: string; name: string; tbl_name: string; sql: string | null }, []>(
      'SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name',
    )
    .all()
    .map((o) => ({ ...o, sql: layoutFree(o.sql) }))
  const tables = objects.filter((o) => o.type === 'table').map((o) => o.name)
  const pragmas = tables.map((table) => ({
    table,
    columns: db.query('SELECT * FROM pragma_table_xinfo(?)').all(table),
    foreignKeys: db.query('SELECT * FROM pragma_foreign_key_list(?)').all(table),
    indexes: db
      .query<{ name: string }, [string]>('SELECT * FROM pragma_index_list(?) ORDER BY name')
      .all(table)
      .map((index) => ({ index, keys: db.query('SELECT * FROM pragma_index_xinfo(?)').all(index.name) })),
  }))
  return { objects, pragmas }
}

/** Every row of every table but the times a migration ran and the generation a start draws. */
function dataDump(db: Database): unknown {
  const tables = db
    .query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    .all()
    .map((t) => t.name)
  return tables.map((table) => {
    if (table === 'schema_migrations') return db.query('SELECT version, name FROM schema_migrations').all()
    if (table === 'data_version') return db.query('SELECT changes FROM data_version').all()
    return db.query(`SELECT * FROM "${table}" ORDER BY 1`).all()
  })
}

/** Authors, collections and books written at some version, names decomposed among them (migration 5). */
function writeData(db: Database): void {
  db.run("INSERT INTO authors (name) VALUES ('E\u0301mile Zola'), ('Ursula K. Le Guin')")
  db.run("INSERT INTO book_collections (name) VALUES ('Les Rougon-Macquart')")
  db.run(`INSERT INTO books (name, author_id, book_collection_id) VALUES
    ('L''Assommoir', 1, 1), ('Germinal', 1, 1), ('The Dispossessed', 2, NULL), ('Nana', 1, 1)`)
  db.run('DELETE FROM books WHERE id = 4')
  db.run("UPDATE books SET name = 'The Left Hand of Darkness' WHERE id = 3")
  db.run('DELETE FROM book_collections WHERE id = 1')
}

/** A database in memory: `before` applied, data written, then `after`. */
function built(before: readonly Migration[], after: readonly Migration[]): Database {
  const db = new Database(':memory:')
  db.run('PRAGMA foreign_keys = ON')
  migrate(db, before)
  if (before.length > 0) writeData(db)
  migrate(db, [...before, ...after])
  return db
}

describe('the SQLite migrations drawn from the descriptions', () => {
  it('number and name the migrations as the hand-written ones did', () => {
    expect(sqliteHistory.map(({ version, name }) => ({ version, name }))).toEqual(
      handWrittenSqliteMigrations.map(({ version, name }) => ({ version, name })),
    )
  })

  it('build from nothing the schema the hand-written SQL built, at every version', () => {
    for (let version = 1; version <= sqliteHistory.length; version++) {
      const reference = built([], handWrittenSqliteMigrations.slice(0, version))
      const generated = built([], sqliteHistory.slice(0, version))
      expect({ version, schema: schemaDump(generated) }).toEqual({ version, schema: schemaDump(reference) })
      reference.close()
      generated.close()
    }
  })

  it('take a file the hand-written migrations left at any version to the same schema and data', () => {
    const last = handWrittenSqliteMigrations.length
    for (let version = 1; version <= last; version++) {
      const reference = built(handWrittenSqliteMigrations.slice(0, version), handWrittenSqliteMigrations.slice(version))
      const generated = built(handWrittenSqliteMigrations.slice(0, version), sqliteHistory.slice(version))
      expect({ version, schema: schemaDump(generated) }).toEqual({ version, schema: schemaDump(reference) })
      expect({ version, data: dataDump(generated) }).toEqual({ version, data: dataDump(reference) })
      reference.close()
      generated.close()
    }
  })
})
