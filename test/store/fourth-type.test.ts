import { Database } from 'bun:sqlite'
import { expect, setDefaultTimeout, describe as sqliteDescribe, it as sqliteIt } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SQL } from 'bun'
import { createApp } from '../../src/http/app'
import { createLogger } from '../../src/logger'
import { type DatabaseLocation, openStore } from '../../src/store/open'
import { postgresMigrations } from '../../src/store/postgres/migrations'
import { sharedMigrations } from '../../src/store/shared-migrations'
import { addIndex, handSql, type SharedMigration } from '../../src/store/sql/schema-changes'
import { sqliteMigrations } from '../../src/store/sqlite/migrations'
import { JSON_API } from '../support/harness'
import { afterAll, describe, it, POSTGRES_SERVER } from '../support/postgres-tests'
import { publishers, publishersMigration, registryWithPublishers } from '../support/publishers'
import { scratchDatabases } from '../support/test-database'

/** The version a migration after this build's last gets on each backend. */
const next = {
  sqlite: (sqliteMigrations.at(-1)?.version ?? 0) + 1,
  postgres: (postgresMigrations.at(-1)?.version ?? 0) + 1,
}

// Databases made and migrated: more than Bun's 5 s default on a busy machine.
setDefaultTimeout(60_000)

// A fourth type from one description file and one migration entry (test/support/publishers.ts),
// served over the real app on both backends: the schema, its migration and the start-up check
// all come from the description.

/** Opens the app over `location` with publishers, runs `use`, and closes everything. */
async function served(location: DatabaseLocation, version: number, use: (send: Send) => Promise<void>): Promise<void> {
  const migrated: { version: number; name: string }[] = []
  const store = await openStore(location, registryWithPublishers, {
    sharedMigrations: [...sharedMigrations, publishersMigration],
    poolSize: 2,
    onMigration: ({ version, name }) => migrated.push({ version, name }),
  })
  expect(migrated.at(-1)).toEqual({ version, name: publishersMigration.name })
  try {
    const app = createApp({ cores: 2, store, registry: registryWithPublishers, logger: createLogger('silent') })
    await use(async (method, path, body) => {
      const headers: Record<string, string> = { accept: JSON_API }
      if (body !== undefined) headers['content-type'] = JSON_API
      const response = await app.handle(
        new Request(`http://localhost${path}`, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      )
      const text = await response.text()
      return { status: response.status, json: text === '' ? undefined : JSON.parse(text) }
    })
  } finally {
    await store.close()
  }
  // Opened again: the migrated database passes the start-up check, with nothing left to apply.
  const applied: number[] = []
  const again = await openStore(location, registryWithPublishers, {
    sharedMigrations: [...sharedMigrations, publishersMigration],
    onMigration: (m) => applied.push(m.version),
  })
  await again.close()
  expect(applied).toEqual([])
}

// biome-ignore lint/suspicious/noExplicitAny: documents of every shape
type Send = (method: string, path: string, body?: unknown) => Promise<{ status: number; json: any }>

async function publishersServed(send: Send): Promise<void> {
  const author = await send('POST', '/api/v1/authors', {
    data: { type: 'authors', attributes: { name: 'J.R.R. Tolkien' } },
  })
  expect(author.status).toBe(201)
  const publisher = await send('POST', '/api/v1/publishers', {
    data: { type: 'publishers', attributes: { name: 'George Allen & Unwin' } },
  })
  expect(publisher.status).toBe(201)
  expect(publisher.json.data).toMatchObject({
    type: 'publishers',
    id: '1',
    attributes: { name: 'George Allen & Unwin' },
  })
  const book = await send('POST', '/api/v1/books', {
    data: {
      type: 'books',
      attributes: { name: 'The Hobbit' },
      relationships: {
        author: { data: { type: 'authors', id: '1' } },
        publisher: { data: { type: 'publishers', id: '1' } },
      },
    },
  })
  expect(book.status).toBe(201)
  const unpublished = await send('POST', '/api/v1/books', {
    data: {
      type: 'books',
      attributes: { name: 'Leaf by Niggle' },
      relationships: { author: { data: { type: 'authors', id: '1' } } },
    },
  })
  expect(unpublished.status).toBe(201)

  const read = await send('GET', '/api/v1/books/1?include=publisher')
  expect(read.status).toBe(200)
  expect(read.json.data.relationships.publisher.data).toEqual({ type: 'publishers', id: '1' })
  expect((await send('GET', '/api/v1/books/2?include=publisher')).json.data.relationships.publisher.data).toBeNull()
  expect(read.json.included).toEqual([expect.objectContaining({ type: 'publishers', id: '1' })])
  const shown = await send('GET', '/api/v1/publishers/1')
  expect(shown.json.included.map((r: { id: string }) => r.id)).toEqual(['1'])

  const ids = (answer: { json: { data: { id: string }[] } }) => answer.json.data.map((r) => r.id)
  expect(ids(await send('GET', '/api/v1/books?filter[publisher]=1'))).toEqual(['1'])
  expect(ids(await send('GET', '/api/v1/publishers?filter[search]=unwi'))).toEqual(['1'])
  expect(ids(await send('GET', '/api/v1/publishers?filter[name]=George%20Allen%20%26%20Unwin'))).toEqual(['1'])
  const page = await send('GET', '/api/v1/publishers?page[size]=1')
  expect(page.json.meta).toMatchObject({ total: 1 })

  // Deleting the publisher leaves its book without one (the foreign key's ON DELETE SET NULL).
  expect((await send('DELETE', '/api/v1/publishers/1')).status).toBe(204)
  const orphan = await send('GET', '/api/v1/books/1?include=publisher')
  expect(orphan.json.data.relationships.publisher.data).toBeNull()
  expect(ids(await send('GET', '/api/v1/publishers?filter[search]=unwin'))).toEqual([])
}

sqliteDescribe('a fourth type over SQLite', () => {
  sqliteIt(
    `is created by its migration (${next.sqlite}) and served: create, read, include, filter, search`,
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'catalogue-fourth-'))
      try {
        await served({ kind: 'sqlite', path: join(dir, 'catalogue.db') }, next.sqlite, publishersServed)
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    },
  )
})

const databases = scratchDatabases(POSTGRES_SERVER)
afterAll(() => databases.dropAll())

describe('a fourth type over PostgreSQL', () => {
  it(`is created by its migration (${next.postgres}) and served: create, read, include, filter, search`, async () => {
    await served({ kind: 'postgres', url: await databases.fresh() }, next.postgres, publishersServed)
  })
})

/** A migration after the type's: an index of its own, and SQL the descriptions cannot say. */
const indexAndView: SharedMigration = {
  name: 'an index on the publishers, and a view of their names',
  changes: [
    addIndex(publishers, 'publishers_by_name_and_id', ['name', 'id']),
    handSql({
      sqlite: 'CREATE VIEW publisher_names AS SELECT name FROM publishers;',
      postgres: 'CREATE VIEW publisher_names AS SELECT name FROM publishers;',
    }),
  ],
}

/** Opens `location` with both migrations, ending with those two, then again with nothing left to apply. */
async function migratedWithIndexAndView(location: DatabaseLocation, first: number): Promise<void> {
  const open = async () => {
    const applied: number[] = []
    const store = await openStore(location, registryWithPublishers, {
      sharedMigrations: [...sharedMigrations, publishersMigration, indexAndView],
      onMigration: (m) => applied.push(m.version),
    })
    await store.close()
    return applied
  }
  expect((await open()).slice(-2)).toEqual([first, first + 1])
  expect(await open()).toEqual([])
}

sqliteDescribe('a migration of an index and of hand-written SQL, over SQLite', () => {
  sqliteIt('adds the index and runs the SQL once, and the start-up check accepts the result', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'catalogue-fourth-'))
    try {
      const path = join(dir, 'catalogue.db')
      await migratedWithIndexAndView({ kind: 'sqlite', path }, next.sqlite)
      const db = new Database(path, { readonly: true })
      try {
        const index = db
          .query<{ name: string }, []>("SELECT name FROM pragma_index_info('publishers_by_name_and_id') ORDER BY seqno")
          .all()
        expect(index.map((c) => c.name)).toEqual(['name', 'id'])
        expect(db.query("SELECT type FROM sqlite_master WHERE name = 'publisher_names'").get()).toEqual({
          type: 'view',
        })
      } finally {
        db.close()
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('a migration of an index and of hand-written SQL, over PostgreSQL', () => {
  it('adds the index and runs the SQL once, and the start-up check accepts the result', async () => {
    const url = await databases.fresh()
    await migratedWithIndexAndView({ kind: 'postgres', url }, next.postgres)
    const sql = new SQL(url)
    try {
      const [index] = await sql`SELECT indexdef FROM pg_indexes WHERE indexname = 'publishers_by_name_and_id'`
      expect(index?.indexdef).toContain('(name, id)')
      const [view] = await sql`SELECT count(*)::int AS n FROM pg_views WHERE viewname = 'publisher_names'`
      expect(view?.n).toBe(1)
    } finally {
      await sql.close()
    }
  })
})
