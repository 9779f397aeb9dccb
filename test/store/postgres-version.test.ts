import { expect, setDefaultTimeout } from 'bun:test'
import { SQL } from 'bun'
import type { Id } from '../../src/model/record'
import type { WriteResult } from '../../src/model/writes'
import { resources } from '../../src/resources/registry'
import { PostgresStore } from '../../src/store/postgres/postgres-store'
import { afterAll, beforeAll, describe, it, POSTGRES_SERVER } from '../support/postgres-tests'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

// What PostgreSQL adds to the store's version (what tags a streamed answer; see Store.version in
// src/store/store.ts): it counts this database's commits only, whoever makes them, and counts them
// when they commit. The version's change after the store's own writes is in the contract (test/store/contract).

const authors = resources.get('authors')
const books = resources.get('books')

/** The server the tests use: POSTGRES_TEST_URL, the local one or a throwaway cluster (postgres-tests.ts). */
const SERVER = POSTGRES_SERVER
const admin = new SQL(SERVER, { max: 1 })
const database = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`
/** Another database on the same server, whose commits must not change this one's version. */
const neighbour = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`

function urlOf(name: string): string {
  const url = new URL(SERVER)
  url.pathname = `/${name}`
  return url.toString()
}

let store: PostgresStore
/** A plain connection to the store's database, as an operator's psql would be. */
let direct: SQL
let neighbourSql: SQL
let authorId: Id

function created(result: WriteResult): Id {
  if (!result.ok) throw new Error(`write refused: missing ${result.missing.join(', ')}`)
  return result.record.id
}

beforeAll(async () => {
  await admin.unsafe(`CREATE DATABASE ${database}`)
  await admin.unsafe(`CREATE DATABASE ${neighbour}`)
  store = await PostgresStore.open(urlOf(database), resources, { poolSize: 3 })
  direct = new SQL(urlOf(database), { max: 2 })
  neighbourSql = new SQL(urlOf(neighbour), { max: 1 })
  await neighbourSql`CREATE TABLE notes (id serial PRIMARY KEY, body text)`
  authorId = created(await store.create(authors, { attributes: { name: 'Ann' }, toOne: {} }))
})

afterAll(async () => {
  await store.close()
  await direct.close()
  await neighbourSql.close()
  await admin.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
  await admin.unsafe(`DROP DATABASE IF EXISTS ${neighbour} WITH (FORCE)`)
  await admin.close()
})

describe('PostgresStore.version', () => {
  it('stays the same while other databases on the server commit, and while this one is only read', async () => {
    const before = await store.version()
    for (let i = 0; i < 5; i++) await neighbourSql`INSERT INTO notes (body) VALUES (${`note ${i}`})`
    await admin`SELECT 1`
    await store.list(authors, { filters: [], sort: [{ field: 'id', descending: false }], limit: 10 })
    await direct`SELECT COUNT(*) FROM books`
    expect(await store.version()).toBe(before)
  })

  it("changes after each of the store's own writes, and not after a write that changed nothing", async () => {
    const first = await store.version()
    const bookId = created(await store.create(books, { attributes: { name: 'Stone' }, toOne: { author: authorId } }))
    const second = await store.version()
    expect(second).not.toBe(first)
    await store.update(books, bookId, { attributes: { name: 'Stones' }, toOne: {} })
    const third = await store.version()
    expect(third).not.toBe(second)
    // A batch that fails is rolled back whole: nothing changed, nor does the version.
    const failed = await store.atomic([
      { kind: 'create', resource: authors, lid: 'x', input: { attributes: { name: 'Rolled back' }, toOne: {} } },
      { kind: 'delete', resource: authors, target: { id: 999_999 } },
    ])
    expect(failed.ok).toBe(false)
    expect(await store.update(books, 999_999, { attributes: { name: 'x' }, toOne: {} })).toBeNull()
    expect(await store.version()).toBe(third)
  })

  it('changes when another connection commits a change to this database, not before', async () => {
    const before = await store.version()
    const written = Promise.withResolvers<void>()
    const commit = Promise.withResolvers<void>()
    const transaction = direct.begin(async (tx) => {
      await tx`UPDATE authors SET name = 'Anne' WHERE id = ${authorId}`
      written.resolve()
      await commit.promise
    })
    await written.promise
    // Written, not committed: a reader sees neither the change nor a new version.
    expect(await store.version()).toBe(before)
    commit.resolve()
    await transaction
    expect(await store.version()).not.toBe(before)
  })

  it("changes after another instance's write, and an operator's TRUNCATE", async () => {
    const other = await PostgresStore.open(urlOf(database), resources, { poolSize: 1 })
    try {
      const before = await store.version()
      created(await other.create(books, { attributes: { name: 'Elsewhere' }, toOne: { author: authorId } }))
      const after = await store.version()
      expect(after).not.toBe(before)
      await direct`TRUNCATE books`
      expect(await store.version()).not.toBe(after)
    } finally {
      await other.close()
    }
  })

  it('is the same for every instance on the database, before and after a write', async () => {
    const other = await PostgresStore.open(urlOf(database), resources, { poolSize: 1 })
    try {
      const now = await store.version()
      expect(await other.version()).toBe(now)
      created(await other.create(authors, { attributes: { name: 'Bea' }, toOne: {} }))
      const after = await other.version()
      expect(after).not.toBe(now)
      expect(await store.version()).toBe(after)
    } finally {
      await other.close()
    }
  })

  it('takes a new generation at each start: counts put back by a restore never give a tag given before', async () => {
    const before = await store.version()
    const [generation, commits] = (before ?? '').split('.')
    // A restore puts the counts back where a dump left them: here, as they are now.
    const dumped = await direct`SELECT slot, commits FROM data_version ORDER BY slot`
    created(await store.create(authors, { attributes: { name: 'Lost' }, toOne: {} }))
    const tagged = await store.version()
    for (const row of dumped) await direct`UPDATE data_version SET commits = ${row.commits} WHERE slot = ${row.slot}`
    const restarted = await PostgresStore.open(urlOf(database), resources, { poolSize: 1, newGeneration: true })
    try {
      created(await restarted.create(authors, { attributes: { name: 'Other' }, toOne: {} }))
      const now = await restarted.version()
      expect(now?.split('.')[1]).toBe(tagged?.split('.')[1])
      expect(now).not.toBe(tagged)
      expect(now?.split('.')[0]).not.toBe(generation)
      expect(Number(commits)).toBeGreaterThanOrEqual(0)
    } finally {
      await restarted.close()
    }
  })

  it('never gives a tag given before by a database of the same name dropped and made again from a dump, and is ready on it', async () => {
    const name = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`
    await admin.unsafe(`CREATE DATABASE ${name}`)
    const served = await PostgresStore.open(urlOf(name), resources, { poolSize: 1, newGeneration: true })
    try {
      created(await served.create(authors, { attributes: { name: 'Old' }, toOne: {} }))
      const before = await served.version()
      const old = new SQL(urlOf(name), { max: 1 })
      const generation = await old`SELECT generation FROM data_generation`
      const counts = await old`SELECT slot, commits FROM data_version ORDER BY slot`
      await old.close()
      // As an operator restoring a dump into the same name while the service runs: the same
      // generation and counts, in a new database.
      await admin.unsafe(`DROP DATABASE ${name} WITH (FORCE)`)
      await admin.unsafe(`CREATE DATABASE ${name}`)
      const restoring = await PostgresStore.open(urlOf(name), resources, { poolSize: 1 })
      await restoring.close()
      const dump = new SQL(urlOf(name), { max: 1 })
      await dump`UPDATE data_generation SET generation = ${generation[0].generation}`
      for (const row of counts) {
        await dump`INSERT INTO data_version (slot, commits) VALUES (${row.slot}, ${row.commits})
          ON CONFLICT (slot) DO UPDATE SET commits = EXCLUDED.commits`
      }
      await dump.close()
      let now: string | null = null
      for (let i = 0; i < 50 && now === null; i++) now = await served.version().catch(() => null)
      expect(now).not.toBeNull()
      expect(now).not.toBe(before)
      await served.ready()
    } finally {
      await served.close()
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    }
  })

  it('keeps its generation for an opening that is not a start of the service, and gives no tag without its row', async () => {
    const before = await store.version()
    const command = await PostgresStore.open(urlOf(database), resources, { poolSize: 1 })
    await command.close()
    expect(await store.version()).toBe(before)
    await direct`DELETE FROM data_generation`
    expect(await store.version()).toBeNull()
    // The next start of the service makes it again.
    const started = await PostgresStore.open(urlOf(database), resources, { poolSize: 1, newGeneration: true })
    try {
      const now = await started.version()
      expect(now).not.toBeNull()
      expect(await store.version()).toBe(now)
    } finally {
      await started.close()
    }
  })

  it('lets many writes commit side by side without one failing on the counter', async () => {
    const others = await Promise.all(
      Array.from({ length: 4 }, () => PostgresStore.open(urlOf(database), resources, { poolSize: 3 })),
    )
    // After the others' starts, which drew a new generation.
    const before = await store.version()
    try {
      const ids = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          (others[i % others.length] as PostgresStore).create(books, {
            attributes: { name: `Book ${i}` },
            toOne: { author: authorId },
          }),
        ),
      )
      expect(ids.map(created)).toHaveLength(40)
      // Batches renaming books a then b, racing batches renaming b alone: were the counter locked at
      // a's update, the first would wait for b held by the second, waiting for the counter.
      const [a, b] = ids.map(created)
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, (_, i) => {
          const order = i % 2 === 0 ? [a, b] : [b]
          return (others[i % others.length] as PostgresStore).atomic(
            order.map((id) => ({
              kind: 'update',
              resource: books,
              target: { id: id as Id },
              input: { attributes: { name: `Renamed ${i}` }, toOne: {} },
            })),
          )
        }),
      )
      expect(outcomes.every((outcome) => outcome.ok)).toBe(true)
      // One count per committed transaction: 40 creates and 20 batches.
      const [opening, commits] = (before ?? '').split('.')
      expect(await store.version()).toBe(`${opening}.${Number(commits) + 60}`)
    } finally {
      for (const other of others) await other.close()
    }
  })
})
