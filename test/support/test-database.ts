import { SQL } from 'bun'
import { parseDatabaseUrl } from '../../src/store/open'
import { postgresServer } from './postgres-server'

/**
 * Which backend openTestApp opens, from TEST_DATABASE_URL: unset or `sqlite:` gives a fresh SQLite
 * file per app; a `postgres://` URL names a server on which this process keeps a few databases of
 * its own (created on first use, emptied for each app, dropped when the run ends).
 */
export type TestBackend = { readonly kind: 'sqlite' } | { readonly kind: 'postgres'; readonly server: string }

export function chosenBackend(): TestBackend {
  const url = process.env.TEST_DATABASE_URL ?? ''
  if (url === '' || url.startsWith('sqlite:')) return { kind: 'sqlite' }
  const location = parseDatabaseUrl(url)
  if (typeof location === 'string' || location.kind !== 'postgres') {
    throw new Error(`TEST_DATABASE_URL must be unset, sqlite: or postgres://... (got "${url}")`)
  }
  return { kind: 'postgres', server: location.url }
}

/** A database lent to one test app: empty, migrated by the store that opens it, ids starting at 1. */
export interface LentDatabase {
  readonly url: string
  /** Gives it back to the pool for the next app (after the app's store is closed). */
  release(): void
}

interface PooledDatabase {
  readonly name: string
  readonly url: string
  /** One connection kept for emptying it between apps. */
  readonly admin: SQL
}

/** The connection that creates and drops the databases, with its server's URL. */
let server: Promise<{ readonly sql: SQL; readonly url: string }> | undefined
const all: PooledDatabase[] = []
const free: PooledDatabase[] = []

/**
 * Creating a database takes PostgreSQL a checkpoint (tenths of a second or more); emptying one takes
 * a few milliseconds. So each test process creates a database only when every one it has is lent.
 */
export async function borrowDatabase(serverUrl: string): Promise<LentDatabase> {
  let database = free.pop()
  if (!database) {
    // A server that does not answer is replaced by a throwaway cluster where PostgreSQL is installed
    // (postgres-server.ts); TEST_DATABASE_URL asks for PostgreSQL, so none at all fails the test.
    server ??= postgresServer(serverUrl).then((found) => {
      if (found.kind === 'missing') throw new Error(`TEST_DATABASE_URL: ${found.reason}`)
      return { sql: new SQL(found.url, { max: 1, connectionTimeout: 5 }), url: found.url }
    })
    const { sql, url: usedUrl } = await server
    // The process id in the name: a run that died leaves databases a later look can tell apart.
    const name = `catalogue_test_${process.pid}_${all.length + 1}`
    await sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await sql.unsafe(`CREATE DATABASE ${name}`)
    // A test's commits need not wait for the disk: nothing outlives the run, and each write is faster.
    await sql.unsafe(`ALTER DATABASE ${name} SET synchronous_commit = off`)
    const url = new URL(usedUrl)
    url.pathname = `/${name}`
    database = { name, url: url.toString(), admin: new SQL(url.toString(), { max: 1 }) }
    all.push(database)
  } else {
    // Empty, and ids from 1 again: RESTART IDENTITY puts the tables' identity sequences back at
    // their start (postgres/migrations.ts, migration 7); the change feed empty too, nothing pruned
    // (TRUNCATE fires no row trigger, so it records no change). The tables are there unless the
    // last app's store failed to open (and so to migrate).
    await database.admin.unsafe(`DO $reset$ BEGIN
      IF to_regclass('books') IS NOT NULL THEN
        TRUNCATE books, authors, book_collections RESTART IDENTITY;
      END IF;
      IF to_regclass('changes') IS NOT NULL THEN
        TRUNCATE changes RESTART IDENTITY;
        UPDATE change_horizon SET xid = '0', seq = 0;
      END IF;
    END $reset$`)
  }
  const lent = database
  return {
    url: lent.url,
    release: () => {
      free.push(lent)
    },
  }
}

/** Drops every database this process created; run once when the test run ends (test/support/setup.ts). */
export async function dropTestDatabases(): Promise<void> {
  const opened = await server?.catch(() => undefined)
  for (const database of all) await database.admin.close()
  for (const database of all) await opened?.sql.unsafe(`DROP DATABASE IF EXISTS ${database.name} WITH (FORCE)`)
  all.length = 0
  free.length = 0
  await opened?.sql.close()
  server = undefined
}

/** Databases a test file makes for itself on one server (empty, not migrated), dropped by `dropAll`. */
export interface ScratchDatabases {
  /** A connection to the server's own database, for the file's checks of the server. */
  readonly admin: SQL
  /** A new empty database's URL. */
  fresh(): Promise<string>
  /** Drops every database `fresh` made, and closes `admin`. */
  dropAll(): Promise<void>
}

export function scratchDatabases(serverUrl: string): ScratchDatabases {
  const admin = new SQL(serverUrl, { max: 1 })
  const names: string[] = []
  return {
    admin,
    async fresh() {
      const name = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`
      await admin.unsafe(`CREATE DATABASE ${name}`)
      names.push(name)
      const url = new URL(serverUrl)
      url.pathname = `/${name}`
      return url.toString()
    },
    async dropAll() {
      for (const name of names.splice(0)) await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await admin.close()
    },
  }
}
