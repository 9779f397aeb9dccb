import { afterAll, beforeAll, expect, it, setDefaultTimeout } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SQL } from 'bun'
import { createApp } from '../../src/http/app'
import { createLogger } from '../../src/logger'
import { resources } from '../../src/resources/registry'
import { PostgresStore } from '../../src/store/postgres/postgres-store'
import { runCli } from '../support/commands'
import {
  type CopiedCluster,
  nextTransactionId,
  startCopiedCluster,
  startTwoClusters,
  type TwoClusters,
  useTransactionIds,
} from '../support/postgres-clusters'
import { type ReplicatedClusters, replayed, startReplicatedClusters } from '../support/postgres-replication'
import { describeWithPrograms, POSTGRES_PROGRAMS } from '../support/postgres-tests'

// Clusters of its own, dumps and restores: more than Bun's 5 s default on a busy machine.
setDefaultTimeout(120_000)

/*
 * The change feed across restores (docs/changes.md, "Restores and copies"): a position a client
 * holds is of one history of one database. Whatever the database becomes (a dump restored onto a
 * server whose transaction ids are lower, a restore into the same database, a database made again
 * under its name, a promoted standby), a position from before is 410 Gone, even once the new
 * server's ids pass it, and the feed after the restore gives every new change once, in order.
 */

const JSON_API = 'application/vnd.api+json'

interface Served {
  get(path: string): Promise<{ status: number; json: FeedPage }>
  createAuthor(name: string): Promise<string>
  close(): Promise<void>
}

interface FeedPage {
  data: {
    id: string
    attributes: { op: string }
    relationships: { resource: { data: { type: string; id: string } } }
  }[]
  links: { next: string }
  meta: { latest: string | null }
  errors?: { status: string; detail: string }[]
}

/** The real app over the database at `url` (migrated at open). */
async function served(url: string): Promise<Served> {
  const store = await PostgresStore.open(url, resources, { poolSize: 3 })
  const app = createApp({ cores: 2, store, logger: createLogger('silent') })
  const send = async (method: string, path: string, body?: unknown) => {
    const headers: Record<string, string> = { accept: JSON_API }
    if (body !== undefined) headers['content-type'] = JSON_API
    const init = { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }
    const response = await app.handle(new Request(`http://localhost${path}`, init))
    return { status: response.status, json: (await response.json()) as FeedPage & { data: { id: string } } }
  }
  return {
    get: (path) => send('GET', path),
    async createAuthor(name) {
      const answer = await send('POST', '/api/v1/authors', { data: { type: 'authors', attributes: { name } } })
      if (answer.status !== 201) throw new Error(`create failed: ${answer.status}`)
      return (answer.json.data as unknown as { id: string }).id
    },
    async close() {
      app.decorator.changeFeed.close()
      await store.close()
    },
  }
}

/** The feed's page after `position` (or from its start), once the newest change has settled. */
async function changesAfter(app: Served, position: string | null): Promise<{ status: number; json: FeedPage }> {
  const query = position === null ? '' : `&page[after]=${encodeURIComponent(position)}`
  // A change is readable once every older transaction has ended: ask until the answer holds still.
  let last = await app.get(`/api/v1/changes?page[size]=100${query}`)
  for (let i = 0; i < 50; i++) {
    await Bun.sleep(20)
    const again = await app.get(`/api/v1/changes?page[size]=100${query}`)
    if (JSON.stringify(again) === JSON.stringify(last)) return again
    last = again
  }
  return last
}

/** What the page says happened: `create authors/3`, ... */
function seen(page: FeedPage): string[] {
  return page.data.map(
    (c) => `${c.attributes.op} ${c.relationships.resource.data.type}/${c.relationships.resource.data.id}`,
  )
}

function expectGone(answer: { status: number; json: FeedPage }): void {
  expect(answer.status).toBe(410)
  expect(answer.json.errors?.[0]?.status).toBe('410')
}

async function createDatabase(adminUrl: string, name: string): Promise<void> {
  const admin = new SQL(adminUrl, { max: 1 })
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`)
  } finally {
    await admin.close()
  }
}

async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const admin = new SQL(adminUrl, { max: 1 })
  try {
    await admin.unsafe(`DROP DATABASE ${name} WITH (FORCE)`)
  } finally {
    await admin.close()
  }
}

/** Runs one of PostgreSQL's client programs (pg_dump, pg_restore) to its end; throws on failure. */
function program(name: string, args: readonly string[]): void {
  const done = Bun.spawnSync([join(POSTGRES_PROGRAMS as string, name), ...args], { stdout: 'pipe', stderr: 'pipe' })
  if (done.exitCode !== 0) throw new Error(`${name} failed: ${done.stderr.toString()}`)
}

describeWithPrograms('the change feed across restores (PostgreSQL)', () => {
  let clusters: TwoClusters
  let dir: string
  let number = 0
  const name = () => `feed_history_${++number}`

  beforeAll(() => {
    clusters = startTwoClusters(POSTGRES_PROGRAMS as string)
    dir = mkdtempSync(join(tmpdir(), 'catalogue-feed-history-'))
  })

  afterAll(() => {
    clusters?.remove()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  /**
   * A catalogue on the first cluster, whose transaction ids are made to run ahead of the second's:
   * three authors; the positions a follower holds after the first and after the last.
   */
  async function sourceCatalogue(): Promise<{ url: string; early: string; latest: string; dump: string }> {
    const database = name()
    await createDatabase(clusters.firstUrl('postgres'), database)
    const url = clusters.firstUrl(database)
    const ahead = (await nextTransactionId(clusters.secondUrl('postgres'))) + 3000n
    await useTransactionIds(url, Number(ahead - (await nextTransactionId(url))) + 100)
    const app = await served(url)
    try {
      await app.createAuthor('Before 1')
      const early = (await changesAfter(app, null)).json.meta.latest as string
      await app.createAuthor('Before 2')
      await app.createAuthor('Before 3')
      const latest = (await changesAfter(app, null)).json.meta.latest as string
      expect(latest).toMatch(/^[0-9a-f]{10}\.\d+\.\d+$/)
      const dump = join(dir, `${database}.dump`)
      program('pg_dump', ['-Fc', '-f', dump, url])
      return { url, early, latest, dump }
    } finally {
      await app.close()
    }
  }

  it('answers 410 to a position from before a dump restored onto a server with lower transaction ids, even once its ids pass it, and gives every new change once', async () => {
    const source = await sourceCatalogue()
    const database = name()
    await createDatabase(clusters.secondUrl('postgres'), database)
    const target = clusters.secondUrl(database)
    program('pg_restore', ['-d', target, source.dump])
    expect(await nextTransactionId(target)).toBeLessThan(BigInt(source.latest.split('.')[1] as string))
    const app = await served(target)
    try {
      const [a, b] = [await app.createAuthor('After 1'), await app.createAuthor('After 2')]
      for (const held of [source.latest, source.early, '0']) expectGone(await changesAfter(app, held))
      // The feed begins after the restored records: a new follower reads the lists, then this.
      const fresh = await changesAfter(app, null)
      expect(seen(fresh.json)).toEqual([`create authors/${a}`, `create authors/${b}`])
      // The new server's ids pass the old position: still gone, and new changes still come in order.
      const until = BigInt(source.latest.split('.')[1] as string) - (await nextTransactionId(target)) + 100n
      await useTransactionIds(target, Number(until))
      const c = await app.createAuthor('After 3')
      for (const held of [source.latest, source.early]) expectGone(await changesAfter(app, held))
      const next = await changesAfter(app, fresh.json.meta.latest)
      expect(seen(next.json)).toEqual([`create authors/${c}`])
      expect(seen((await changesAfter(app, null)).json)).toEqual([
        `create authors/${a}`,
        `create authors/${b}`,
        `create authors/${c}`,
      ])
    } finally {
      await app.close()
    }
  })

  it('answers 410 to a position from before a catalogue import --create onto a server with lower ids, even once its ids pass it', async () => {
    const source = await sourceCatalogue()
    const file = join(dir, `${name()}.catalogue`)
    const exported = await runCli(['export', file], { env: { DATABASE_URL: source.url } })
    expect(exported.code).toBe(0)
    const database = name()
    await createDatabase(clusters.secondUrl('postgres'), database)
    const target = clusters.secondUrl(database)
    const imported = await runCli(['import', '--create', file], { env: { DATABASE_URL: target } })
    expect(imported.code).toBe(0)
    const until = BigInt(source.latest.split('.')[1] as string) - (await nextTransactionId(target)) + 100n
    await useTransactionIds(target, Number(until))
    const app = await served(target)
    try {
      const a = await app.createAuthor('After')
      for (const held of [source.latest, source.early, '0']) expectGone(await changesAfter(app, held))
      expect(seen((await changesAfter(app, null)).json)).toEqual([`create authors/${a}`])
    } finally {
      await app.close()
    }
  })

  it('answers 410 to a position from before pg_restore --clean into the same database', async () => {
    const source = await sourceCatalogue()
    let app = await served(source.url)
    const after = await app.createAuthor('Made after the dump')
    const held = (await changesAfter(app, null)).json.meta.latest as string
    await app.close()
    program('pg_restore', ['--clean', '--if-exists', '-d', source.url, source.dump])
    app = await served(source.url)
    try {
      const a = await app.createAuthor('After the restore')
      // The author made after the dump is gone with the restore: its id is handed out again.
      expect(a).toBe(after)
      for (const position of [held, source.latest, source.early]) expectGone(await changesAfter(app, position))
      expect(seen((await changesAfter(app, null)).json)).toEqual([`create authors/${a}`])
    } finally {
      await app.close()
    }
  })

  it('answers 410 to a position from a database dropped and made again under the same name', async () => {
    const source = await sourceCatalogue()
    const database = new URL(source.url).pathname.slice(1)
    await dropDatabase(clusters.firstUrl('postgres'), database)
    await createDatabase(clusters.firstUrl('postgres'), database)
    const app = await served(source.url)
    try {
      const a = await app.createAuthor('In the new database')
      for (const held of [source.latest, source.early]) expectGone(await changesAfter(app, held))
      expect(seen((await changesAfter(app, null)).json)).toEqual([`create authors/${a}`])
    } finally {
      await app.close()
    }
  })
})

describeWithPrograms('the change feed after a standby is promoted (PostgreSQL)', () => {
  let pair: ReplicatedClusters

  beforeAll(async () => {
    pair = await startReplicatedClusters(POSTGRES_PROGRAMS as string)
  })

  afterAll(() => pair?.remove())

  it('answers 410 to every position read from the old primary, and follows the new one', async () => {
    await createDatabase(pair.primaryAdminUrl, 'promoted')
    let app = await served(pair.primaryUrl('promoted'))
    await app.createAuthor('On the old primary')
    const held = (await changesAfter(app, null)).json.meta.latest as string
    await app.close()
    await replayed(pair.primaryAdminUrl, pair.replicaAdminUrl)
    // Still a standby: its feed cannot be adopted there, a fault of the setup (503), not of our SQL.
    await expect(PostgresStore.open(pair.replicaUrl('promoted'), resources)).rejects.toMatchObject({
      reason: 'read-only',
    })
    pair.promoteReplica()
    app = await served(pair.replicaUrl('promoted'))
    try {
      const a = await app.createAuthor('On the new primary')
      expectGone(await changesAfter(app, held))
      const fresh = await changesAfter(app, null)
      expect(seen(fresh.json)).toEqual([`create authors/${a}`])
      const b = await app.createAuthor('Again')
      expect(seen((await changesAfter(app, fresh.json.meta.latest)).json)).toEqual([`create authors/${b}`])
    } finally {
      await app.close()
    }
  })
})

describeWithPrograms('the change feed after a physical copy of the cluster is put back (PostgreSQL)', () => {
  let cluster: CopiedCluster

  beforeAll(() => {
    cluster = startCopiedCluster(POSTGRES_PROGRAMS as string)
  })

  afterAll(() => cluster?.remove())

  it('answers 410, for good, to a position given after the copy was taken, and goes on from one the copy holds', async () => {
    await createDatabase(cluster.url('postgres'), 'copied')
    let app = await served(cluster.url('copied'))
    await app.createAuthor('Before the copy')
    const early = (await changesAfter(app, null)).json.meta.latest as string
    cluster.copy()
    for (let i = 0; i < 3; i++) await app.createAuthor(`After the copy ${i}`)
    const late = (await changesAfter(app, null)).json.meta.latest as string
    await app.close()
    // The same system identifier, database, table and timeline: the same history.
    cluster.putCopyBack()
    app = await served(cluster.url('copied'))
    try {
      const made: string[] = []
      for (let i = 0; i < 6; i++) made.push(await app.createAuthor(`After the restore ${i}`))
      expect((await changesAfter(app, null)).json.meta.latest?.split('.')[0]).toBe(late.split('.')[0])
      expectGone(await changesAfter(app, late))
      expect(seen((await changesAfter(app, early)).json)).toEqual(made.map((id) => `create authors/${id}`))
    } finally {
      await app.close()
    }
  })
})
