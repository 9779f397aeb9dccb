import { expect, setDefaultTimeout } from 'bun:test'
import { SQL } from 'bun'
import type { ChangeRead } from '../../src/model/changes'
import { resources } from '../../src/resources/registry'
import { PostgresStore } from '../../src/store/postgres/postgres-store'
import { afterAll, afterEach, describe, it, POSTGRES_SERVER } from '../support/postgres-tests'
import { scratchDatabases } from '../support/test-database'

// Databases made and transactions held open: more than Bun's 5 s default on a busy machine.
setDefaultTimeout(30_000)

/*
 * The PostgreSQL change feed orders changes by transaction id (postgres/feed-ddl.ts), reading only
 * below the oldest transaction still running. Two things make that exact, each shown here with
 * transactions held open by hand: a transaction that commits late is never skipped, and a record's
 * changes keep the order in which they were made even when an older transaction changes the record
 * after a younger one committed a change to it.
 */

const authors = resources.get('authors')
const scratch = scratchDatabases(POSTGRES_SERVER)
const opened: { close(): Promise<void> }[] = []

afterEach(async () => {
  for (const one of opened.splice(0).reverse()) await one.close()
})
afterAll(() => scratch.dropAll())

async function setUp(): Promise<{ store: PostgresStore; url: string }> {
  const url = await scratch.fresh()
  const store = await PostgresStore.open(url, resources, { poolSize: 4, listenUrl: null })
  opened.push(store)
  return { store, url }
}

function connection(url: string): SQL {
  const sql = new SQL(url, { max: 1 })
  opened.push({ close: () => sql.close() })
  return sql
}

function seen(read: ChangeRead): string[] {
  if (read.kind !== 'page') throw new Error('gone')
  return read.changes.map((c) => `${c.op} ${c.type}/${c.recordId}`)
}

describe('the PostgreSQL change feed under concurrent transactions', () => {
  it('holds back a change while an older transaction runs, and never skips the older one', async () => {
    const { store, url } = await setUp()
    const held = connection(url)
    const slow = await held.reserve()
    await slow`BEGIN`
    await slow`INSERT INTO authors (name) VALUES ('Slow')`
    const fast = await store.create(authors, { attributes: { name: 'Fast' }, toOne: {} })
    expect(fast.ok).toBe(true)
    // The fast one committed, but the slow one's position comes before it: nothing is final yet.
    expect(seen(await store.changes.read({ after: null, types: null, size: 10 }))).toEqual([])
    expect(await store.changes.latest()).toBeNull()
    await slow`COMMIT`
    slow.release()
    expect(seen(await store.changes.read({ after: null, types: null, size: 10 }))).toEqual([
      'create authors/1',
      'create authors/2',
    ])
  })

  it("runs again a write that changes a record after a younger transaction's committed change to it", async () => {
    const { store, url } = await setUp()
    const made = await store.create(authors, { attributes: { name: 'A' }, toOne: {} })
    if (!made.ok) throw new Error('no author')
    const id = made.record.id
    const older = await connection(url).reserve()
    const younger = await connection(url).reserve()
    // The older transaction takes its id first (a write elsewhere), the younger one then changes the record.
    await older`BEGIN`
    await older`INSERT INTO authors (name) VALUES ('Other')`
    await younger`BEGIN`
    await younger`UPDATE authors SET name = 'Younger' WHERE id = ${id}`
    // The older one waits for the record's lock; once the younger commits, the trigger refuses it.
    const waiting = older`UPDATE authors SET name = 'Older' WHERE id = ${id}`.then(
      () => 'updated',
      (error: Error & { errno?: string; code?: string }) => String(error.errno ?? error.code ?? error.message),
    )
    await Bun.sleep(200)
    await younger`COMMIT`
    expect(await waiting).toBe('40001')
    await older`ROLLBACK`
    older.release()
    younger.release()
    expect(seen(await store.changes.read({ after: null, types: null, size: 10 }))).toEqual([
      `create authors/${id}`,
      `update authors/${id}`,
    ])
  })

  it("keeps a record's changes in the order made when an atomic batch changes it after another write did", async () => {
    const { store, url } = await setUp()
    const ids: number[] = []
    for (const name of ['Q', 'R']) {
      const made = await store.create(authors, { attributes: { name }, toOne: {} })
      if (!made.ok) throw new Error('no author')
      ids.push(made.record.id)
    }
    const [q, r] = ids as [number, number]
    // A gate holds Q. The batch creates a record first (its transaction takes its id then), and
    // its next operation waits for Q.
    const gate = await connection(url).reserve()
    await gate`BEGIN`
    await gate`UPDATE authors SET name = 'Gate' WHERE id = ${q}`
    const batch = store.atomic([
      { kind: 'create', resource: authors, input: { attributes: { name: 'New' }, toOne: {} } },
      { kind: 'update', resource: authors, target: { id: q }, input: { attributes: { name: 'Q2' }, toOne: {} } },
      {
        kind: 'update',
        resource: authors,
        target: { id: r },
        input: { attributes: { name: 'R from the batch' }, toOne: {} },
      },
    ])
    await Bun.sleep(200)
    // Meanwhile another write changes R and is acknowledged; then the gate opens.
    const other = await store.update(authors, r, { attributes: { name: 'R first' }, toOne: {} })
    expect(other?.ok).toBe(true)
    await gate`COMMIT`
    gate.release()
    expect((await batch).ok).toBe(true)
    const changes = seen(await store.changes.read({ after: null, types: null, size: 20 }))
    // R: created, changed by the write acknowledged first, then by the batch.
    expect(changes.filter((c) => c.endsWith(`/${r}`))).toEqual([
      `create authors/${r}`,
      `update authors/${r}`,
      `update authors/${r}`,
    ])
    const found = await store.find(authors, r)
    expect(found?.attributes.name).toBe('R from the batch')
    // The batch's three changes come together, after the other write's.
    // (Run again, the batch's create took another id: an identity sequence gives none back.)
    expect(changes.slice(-3)).toEqual([
      expect.stringMatching(/^create authors\/\d+$/),
      `update authors/${q}`,
      `update authors/${r}`,
    ])
  })
})

describe('the PostgreSQL change feed with transaction ids of different lengths', () => {
  /** Changes as a restore leaves them: transaction ids 99, 100 and 1000 (all ended), a day old. */
  async function withShortAndLongIds(url: string): Promise<void> {
    const sql = connection(url)
    await sql`INSERT INTO changes (xid, type, record_id, op, at) VALUES
      ('1000', 'authors', 3, 'create', now() - interval '1 day'),
      ('99', 'authors', 1, 'create', now() - interval '1 day'),
      ('100', 'authors', 2, 'create', now() - interval '1 day')`
  }

  it('prunes them all, in the order of the numbers, not of their text', async () => {
    const { store, url } = await setUp()
    await withShortAndLongIds(url)
    expect(seen(await store.changes.read({ after: null, types: null, size: 10 }))).toEqual([
      'create authors/1',
      'create authors/2',
      'create authors/3',
    ])
    expect(await store.changes.prune(3600)).toBe(3)
    const [{ left }] = await connection(url)`SELECT count(*)::int AS left FROM changes`
    expect(left).toBe(0)
    const latest = (await store.changes.latest()) as string
    expect(latest.split('.')[1]).toBe('1000')
    const a = await store.create(authors, { attributes: { name: 'After' }, toOne: {} })
    if (!a.ok) throw new Error('create failed')
    expect(seen(await store.changes.read({ after: latest, types: null, size: 10 }))).toEqual([
      `create authors/${a.record.id}`,
    ])
  })

  it('starts over past the newest of them by number, not by text', async () => {
    const { store, url } = await setUp()
    await withShortAndLongIds(url)
    await store.changes.startOver()
    const [{ left }] = await connection(url)`SELECT count(*)::int AS left FROM changes`
    expect(left).toBe(0)
    expect(seen(await store.changes.read({ after: null, types: null, size: 10 }))).toEqual([])
    expect(((await store.changes.latest()) as string).split('.')[1]).toBe('1000')
  })
})

describe('the PostgreSQL change feed while its database is being restored', () => {
  it('answers a read without the horizon row (a pg_restore under way) as a fault of the database, and goes on once it is back', async () => {
    const { store, url } = await setUp()
    const sql = connection(url)
    const [horizon] = await sql`SELECT xid::text AS xid, seq, history FROM change_horizon`
    await sql`DELETE FROM change_horizon`
    for (const read of [
      () => store.changes.read({ after: null, types: null, size: 10 }),
      () => store.changes.latest(),
    ]) {
      await expect(read()).rejects.toMatchObject({ name: 'StoreUnavailableError', reason: 'unavailable' })
    }
    await sql`INSERT INTO change_horizon (xid, seq, history) VALUES (${horizon.xid}::xid8, ${horizon.seq}, ${horizon.history})`
    expect(seen(await store.changes.read({ after: null, types: null, size: 10 }))).toEqual([])
  })
})
