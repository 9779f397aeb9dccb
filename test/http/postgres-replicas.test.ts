import { afterAll, beforeAll, expect, it, setDefaultTimeout } from 'bun:test'
import { SQL } from 'bun'
import { parseTokenFile, TokenSet, tokenFileLine } from '../../src/http/access/api-tokens'
import { type App, createApp } from '../../src/http/app'
import { createLogger } from '../../src/logger'
import { resources } from '../../src/resources/registry'
import { PostgresStore } from '../../src/store/postgres/postgres-store'
import { POLL_MS } from '../../src/store/postgres/replicas/replicas'
import { startService } from '../support/commands'
import {
  holdsReplicationPrograms,
  type ReplicatedClusters,
  replayed,
  startReplicatedClusters,
} from '../support/postgres-replication'
import { describeWithPrograms, POSTGRES_PROGRAMS } from '../support/postgres-tests'
import { stopChildren } from '../support/process'
import { parseSamples, type Sample, sampleValue } from '../support/prometheus'

// Two clusters of its own, started and stopped: more than Bun's 5 s default on a busy machine.
setDefaultTimeout(60_000)

/*
 * Read replicas (DATABASE_REPLICA_URL, docs/postgres.md): a primary and a standby streaming from
 * it, made here (initdb, pg_basebackup -R), the real app over them, and clients told apart by
 * their API tokens, as the service tells them apart.
 */

const JSON_API = 'application/vnd.api+json'
const ATOMIC = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'
const CLIENTS = 16
const tokenOf = (client: number) => `cat_replica_test_client_${client}`

interface ReplicatedApp {
  readonly app: App
  readonly store: PostgresStore
  /** Sends as client `client` (its own API token). */
  send(client: number, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer>
  close(): Promise<void>
}

interface Answer {
  readonly status: number
  readonly headers: Headers
  // biome-ignore lint/suspicious/noExplicitAny: documents of every shape
  readonly json: any
  readonly text: string
}

describeWithPrograms('read replicas (DATABASE_REPLICA_URL)', () => {
  let clusters: ReplicatedClusters
  let replicaAdmin: SQL
  let databases = 0
  const opened: ReplicatedApp[] = []

  beforeAll(async () => {
    const bin = POSTGRES_PROGRAMS as string
    if (!holdsReplicationPrograms(bin)) throw new Error(`pg_basebackup is needed beside initdb in ${bin}`)
    clusters = await startReplicatedClusters(bin)
    replicaAdmin = new SQL(clusters.replicaAdminUrl, { max: 1 })
  })

  afterAll(async () => {
    // A test that failed while the standby was frozen leaves it so: let it go, or nothing stops it.
    try {
      clusters?.thawReplica()
    } catch {
      // Not frozen, or not running.
    }
    await stopChildren()
    for (const t of opened) await t.close().catch(() => {})
    await replicaAdmin?.close().catch(() => {})
    clusters?.remove()
  })

  /** The app over a new database of the primary, its standby as DATABASE_REPLICA_URL. */
  /** A new database on the primary, replayed on the standby; its name. */
  async function replicatedDatabase(): Promise<string> {
    const name = `replicated_${++databases}`
    const admin = new SQL(clusters.primaryAdminUrl, { max: 1 })
    await admin.unsafe(`CREATE DATABASE ${name}`)
    await admin.close()
    await replayed(clusters.primaryAdminUrl, clusters.replicaAdminUrl)
    return name
  }

  async function replicatedApp(replicaMaxLagMs: number): Promise<ReplicatedApp> {
    const name = await replicatedDatabase()
    const store = await PostgresStore.open(clusters.primaryUrl(name), resources, {
      poolSize: 8,
      replicaUrls: [clusters.replicaUrl(name)],
      replicaMaxLagMs,
    })
    const lines = Array.from({ length: CLIENTS }, (_, i) => tokenFileLine(`client${i}`, 'write', tokenOf(i)))
    const app = createApp({
      store,
      logger: createLogger('silent'),
      tokens: new TokenSet(parseTokenFile(lines.join('\n'))),
      cores: 2,
    })
    const t: ReplicatedApp = {
      app,
      store,
      async send(client, method, path, body, headers = {}) {
        const response = await app.handle(
          new Request(`http://localhost${path}`, {
            method,
            headers: {
              accept: JSON_API,
              authorization: `Bearer ${tokenOf(client)}`,
              ...(body === undefined ? {} : { 'content-type': JSON_API }),
              ...headers,
            },
            body: body === undefined ? undefined : JSON.stringify(body),
          }),
        )
        const text = await response.text()
        const json =
          text !== '' && response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : undefined
        return { status: response.status, headers: response.headers, json, text }
      },
      close: () => store.close(),
    }
    opened.push(t)
    // The migrations the store ran on the primary, replayed before any test reads the standby.
    await settled(t)
    return t
  }

  /** Once the standby has replayed all the primary has, and the service has polled it since. */
  async function settled(t: ReplicatedApp): Promise<void> {
    await replayed(clusters.primaryAdminUrl, clusters.replicaAdminUrl)
    await waitFor(t, (replica) => replica.state === 'streaming')
    await Bun.sleep(3 * POLL_MS)
  }

  interface ShownReplica {
    readonly replica: string
    readonly state: string
    readonly lag_seconds: number | null
    readonly reads: number
  }

  async function ready(t: ReplicatedApp): Promise<{ status: number; replica: ShownReplica }> {
    const answer = await t.send(0, 'GET', '/ready')
    return { status: answer.status, replica: answer.json.replicas[0] }
  }

  /** Resolves once /ready shows the replica as `holds` wants it; fails after 15 s. */
  async function waitFor(t: ReplicatedApp, holds: (replica: ShownReplica) => boolean): Promise<ShownReplica> {
    const until = Date.now() + 15_000
    for (;;) {
      const { replica } = await ready(t)
      if (holds(replica)) return replica
      if (Date.now() > until) throw new Error(`the replica stayed ${JSON.stringify(replica)}`)
      await Bun.sleep(POLL_MS)
    }
  }

  async function metrics(t: ReplicatedApp): Promise<Sample[]> {
    await new Promise((resolve) => setImmediate(resolve))
    const answer = await t.send(0, 'GET', '/metrics')
    expect(answer.status).toBe(200)
    return parseSamples(answer.text)
  }

  const replicaReads = async (t: ReplicatedApp) =>
    sampleValue(await metrics(t), 'catalogue_database_reads_total', { node: (await ready(t)).replica.replica })

  async function pauseReplay(): Promise<void> {
    await replicaAdmin`SELECT pg_wal_replay_pause()`
    for (;;) {
      const [{ state }] = await replicaAdmin`SELECT pg_get_wal_replay_pause_state() AS state`
      if (state === 'paused') return
      await Bun.sleep(10)
    }
  }

  const resumeReplay = () => replicaAdmin`SELECT pg_wal_replay_resume()`

  const author = (name: string) => ({ data: { type: 'authors', attributes: { name } } })

  it('lets each of many clients writing and reading at once read its own writes, while the others read the replica', async () => {
    const t = await replicatedApp(60_000)
    const before = await replicaReads(t)
    const failures: string[] = []
    const writer = async (client: number) => {
      for (let round = 0; round < 12; round++) {
        const name = `Writer ${client} round ${round}`
        const created = await t.send(client, 'POST', '/api/v1/authors', author(name))
        if (created.status !== 201) {
          failures.push(`client ${client}: POST ${created.status}`)
          continue
        }
        const id = created.json.data.id
        const shown = await t.send(client, 'GET', `/api/v1/authors/${id}`)
        if (shown.status !== 200 || shown.json.data.attributes.name !== name)
          failures.push(`client ${client}: GET its author ${id} after POST: ${shown.status}`)
        const listed = await t.send(client, 'GET', `/api/v1/authors?filter[name]=${encodeURIComponent(name)}`)
        if (listed.json?.data?.length !== 1) failures.push(`client ${client}: its author not in the list after POST`)
        const renamed = `${name}, renamed`
        const patched = await t.send(client, 'PATCH', `/api/v1/authors/${id}`, {
          data: { type: 'authors', id, attributes: { name: renamed } },
        })
        if (patched.status !== 200) failures.push(`client ${client}: PATCH ${patched.status}`)
        const again = await t.send(client, 'GET', `/api/v1/authors/${id}`)
        if (again.json?.data?.attributes?.name !== renamed) failures.push(`client ${client}: old name after PATCH`)
        const deleted = await t.send(client, 'DELETE', `/api/v1/authors/${id}`)
        if (deleted.status !== 204) failures.push(`client ${client}: DELETE ${deleted.status}`)
        const gone = await t.send(client, 'GET', `/api/v1/authors/${id}`)
        if (gone.status !== 404) failures.push(`client ${client}: GET after DELETE ${gone.status}`)
      }
    }
    const reader = async (client: number) => {
      for (let round = 0; round < 30; round++) {
        const page = await t.send(client, 'GET', '/api/v1/authors?page[size]=5')
        if (page.status !== 200) failures.push(`reader ${client}: ${page.status}`)
      }
    }
    const writers = Array.from({ length: CLIENTS / 2 }, (_, i) => writer(i))
    const readers = Array.from({ length: CLIENTS / 2 }, (_, i) => reader(CLIENTS / 2 + i))
    await Promise.all([...writers, ...readers])
    expect(failures).toEqual([])
    // The readers, who wrote nothing, were answered by the replica.
    expect((await replicaReads(t)) - before).toBeGreaterThanOrEqual(CLIENTS / 2)
  })

  it('with replay paused, still shows a writer its write (a search page too) while the others read the replica as it was', async () => {
    const t = await replicatedApp(60_000)
    const existing = await t.send(1, 'POST', '/api/v1/authors', author('Before the pause'))
    await settled(t)
    await pauseReplay()
    try {
      const created = await t.send(1, 'POST', '/api/v1/authors', author('During the pause'))
      expect(created.status).toBe(201)
      const id = created.json.data.id
      // The writer: from the primary, at once and every time.
      for (let i = 0; i < 5; i++) {
        expect((await t.send(1, 'GET', `/api/v1/authors/${id}`)).status).toBe(200)
        const all = await t.send(1, 'GET', '/api/v1/authors')
        expect(all.json.data.map((a: { id: string }) => a.id)).toEqual([existing.json.data.id, id])
      }
      // A client whose one write is an atomic batch reads it back at once too.
      const batch = await t.send(
        15,
        'POST',
        '/api/v1/operations',
        {
          'atomic:operations': [{ op: 'add', data: { type: 'authors', lid: 'a', attributes: { name: 'Atomic' } } }],
        },
        { 'content-type': ATOMIC, accept: ATOMIC },
      )
      expect(batch.status).toBe(200)
      const atomicId = batch.json['atomic:results'][0].data.id
      expect((await t.send(15, 'GET', `/api/v1/authors/${atomicId}`)).status).toBe(200)
      // Another client: answered, by the replica, which has not replayed the write (within REPLICA_MAX_LAG).
      const before = await replicaReads(t)
      const other = await t.send(2, 'GET', `/api/v1/authors/${id}`)
      expect(other.status).toBe(404)
      const list = await t.send(2, 'GET', '/api/v1/authors')
      expect(list.status).toBe(200)
      expect(list.json.data.map((a: { id: string }) => a.id)).toEqual([existing.json.data.id])
      // A search page (several statements in one snapshot): the writer's from the primary, the other's from the replica.
      const searched = async (client: number) => {
        const answer = await t.send(client, 'GET', '/api/v1/authors?filter[search]=pause&page[size]=10')
        return { ids: answer.json.data.map((a: { id: string }) => a.id), total: answer.json.meta.total }
      }
      expect(await searched(1)).toEqual({ ids: [existing.json.data.id, id], total: 2 })
      expect(await searched(2)).toEqual({ ids: [existing.json.data.id], total: 1 })
      expect(await replicaReads(t)).toBeGreaterThan(before)
      expect((await ready(t)).replica.state).toBe('streaming')
    } finally {
      await resumeReplay()
    }
    await settled(t)
    expect((await t.send(2, 'GET', '/api/v1/authors')).json.data).toHaveLength(3)
  })

  it('keeps a streamed list and its weak ETag on one node: the writer revalidates past its write, others get 304 from the replica', async () => {
    const t = await replicatedApp(60_000)
    // Enough books for a list past 64 KB, streamed and tagged by the store's version.
    const importer = t.store.openImport({ dryRun: false })
    await importer.add(
      Array.from({ length: 600 }, (_, i) => ({ title: `Streamed ${i}`, author: 'Many', collection: null })),
    )
    await importer.close()
    await settled(t)
    const first = await t.send(3, 'GET', '/api/v1/books')
    expect(first.status).toBe(200)
    const tag = first.headers.get('etag') as string
    expect(tag).toStartWith('W/')
    const authorId = (await t.send(3, 'GET', '/api/v1/authors')).json.data[0].id
    await pauseReplay()
    try {
      const created = await t.send(3, 'POST', '/api/v1/books', {
        data: {
          type: 'books',
          attributes: { name: 'Written while the replica waits' },
          relationships: { author: { data: { type: 'authors', id: authorId } } },
        },
      })
      expect(created.status).toBe(201)
      // The writer: not a 304 from the replica, whose version has not moved, but the list with its book.
      const mine = await t.send(3, 'GET', '/api/v1/books', undefined, { 'if-none-match': tag })
      expect(mine.status).toBe(200)
      expect(mine.json.data).toHaveLength(601)
      expect(mine.headers.get('etag')).not.toBe(tag)
      // Another client with the same tag: the replica's version and list agree, so 304.
      const other = await t.send(4, 'GET', '/api/v1/books', undefined, { 'if-none-match': tag })
      expect(other.status).toBe(304)
      const whole = await t.send(4, 'GET', '/api/v1/books')
      expect(whole.headers.get('etag')).toBe(tag)
      expect(whole.json.data).toHaveLength(600)
    } finally {
      await resumeReplay()
    }
  })

  it('skips a replica more than REPLICA_MAX_LAG behind, so every client reads the primary, and uses it again once caught up', async () => {
    const t = await replicatedApp(1000)
    await pauseReplay()
    try {
      const created = await t.send(5, 'POST', '/api/v1/authors', author('Past the lag'))
      const id = created.json.data.id
      const lagging = await waitFor(t, (replica) => replica.state === 'lagging')
      expect(lagging.lag_seconds).toBeGreaterThan(0.5)
      // To the millisecond, not 1.6018027959999999.
      expect(String(lagging.lag_seconds)).toMatch(/^\d+(\.\d{1,3})?$/)
      expect((await ready(t)).status).toBe(200)
      const samples = await metrics(t)
      expect(sampleValue(samples, 'catalogue_replica_state', { replica: lagging.replica, state: 'lagging' })).toBe(1)
      expect(sampleValue(samples, 'catalogue_replica_state', { replica: lagging.replica, state: 'streaming' })).toBe(0)
      // A client that never wrote reads the primary, and finds the new author.
      const before = await replicaReads(t)
      expect((await t.send(6, 'GET', `/api/v1/authors/${id}`)).status).toBe(200)
      expect(await replicaReads(t)).toBe(before)
    } finally {
      await resumeReplay()
    }
    await waitFor(t, (replica) => replica.state === 'streaming')
    const before = await replicaReads(t)
    expect((await t.send(6, 'GET', '/api/v1/authors')).status).toBe(200)
    expect(await replicaReads(t)).toBeGreaterThan(before)
  })

  it('goes on reading while the replica is stopped (no 5xx, /ready 200, the metrics say down) and reads it again once started', async () => {
    const t = await replicatedApp(60_000)
    await t.send(7, 'POST', '/api/v1/authors', author('Survives the replica'))
    await settled(t)
    let reading = true
    const statuses: number[] = []
    const readers = Array.from({ length: 8 }, async (_, i) => {
      while (reading) statuses.push((await t.send(8 + i, 'GET', '/api/v1/authors')).status)
    })
    await Bun.sleep(200)
    clusters.stopReplica()
    await Bun.sleep(500)
    reading = false
    await Promise.all(readers)
    expect(statuses.length).toBeGreaterThan(16)
    expect(statuses.filter((status) => status !== 200)).toEqual([])
    const shown = await ready(t)
    expect(shown.status).toBe(200)
    expect(shown.replica.state).toBe('down')
    const samples = await metrics(t)
    expect(sampleValue(samples, 'catalogue_replica_state', { replica: shown.replica.replica, state: 'down' })).toBe(1)
    const before = await replicaReads(t)
    expect((await t.send(9, 'GET', '/api/v1/authors')).json.data).toHaveLength(1)
    expect(await replicaReads(t)).toBe(before)

    clusters.startReplica()
    await waitFor(t, (replica) => replica.state === 'streaming')
    expect((await t.send(9, 'GET', '/api/v1/authors')).json.data).toHaveLength(1)
    expect(await replicaReads(t)).toBeGreaterThan(before)
  })

  it('answers the reads in flight on a replica that stops answering (frozen) from the primary, within about a second', async () => {
    const t = await replicatedApp(60_000)
    await t.send(10, 'POST', '/api/v1/authors', author('Outlives a frozen replica'))
    await settled(t)
    let reading = true
    const answers: { status: number; ms: number }[] = []
    const readers = Array.from({ length: 4 }, async (_, i) => {
      while (reading) {
        const start = performance.now()
        const { status } = await t.send(11 + i, 'GET', '/api/v1/authors')
        answers.push({ status, ms: performance.now() - start })
      }
    })
    await Bun.sleep(200)
    clusters.freezeReplica()
    try {
      await Bun.sleep(2500)
      reading = false
      await Promise.all(readers)
      expect(answers.filter((answer) => answer.status !== 200)).toEqual([])
      // The poll gives up on it after a second; a read waiting on it is then read on the primary.
      expect(Math.max(...answers.map((answer) => answer.ms))).toBeLessThan(2000)
      expect((await ready(t)).replica.state).toBe('down')
      const samples = await metrics(t)
      expect(
        sampleValue(samples, 'catalogue_replica_fallbacks_total', { replica: (await ready(t)).replica.replica }),
      ).toBeGreaterThan(0)
    } finally {
      clusters.thawReplica()
    }
    await waitFor(t, (replica) => replica.state === 'streaming')
  })

  it('runs as the service does from DATABASE_REPLICA_URL: it names the replica when it starts, reads from it, and logs when it goes down and comes back', async () => {
    const name = await replicatedDatabase()
    const service = await startService({
      DATABASE_URL: clusters.primaryUrl(name),
      DATABASE_REPLICA_URL: clusters.replicaUrl(name),
      REPLICA_MAX_LAG: '10',
    })
    const replica = clusters.replicaUrl(name).replace('postgres://postgres@', '')
    const listening = await service.child.waitForLog((line) => line.msg === 'listening')
    expect(listening.replicas).toBe(clusters.replicaUrl(name))
    await service.child.waitForLog((line) => line.msg === 'read replica streaming' && line.replica === replica)
    const origin = service.api.replace('/api/v1', '')
    const created = await fetch(`${service.api}/authors`, {
      method: 'POST',
      headers: { accept: JSON_API, 'content-type': JSON_API },
      body: JSON.stringify(author('Through the service')),
    })
    expect(created.status).toBe(201)
    // The migrations and the write replayed, then a read answered by the replica.
    await replayed(clusters.primaryAdminUrl, clusters.replicaAdminUrl)
    await Bun.sleep(3 * POLL_MS)
    expect((await fetch(`${service.api}/authors`, { headers: { accept: JSON_API } })).status).toBe(200)
    const metricsText = await (await fetch(`${origin}/metrics`)).text()
    expect(sampleValue(parseSamples(metricsText), 'catalogue_database_reads_total', { node: replica })).toBeGreaterThan(
      0,
    )

    clusters.stopReplica()
    const down = await service.child.waitForLog((line) => line.msg === 'read replica down')
    expect(down).toMatchObject({ level: 'warn', replica, was: 'streaming' })
    const shown = await fetch(`${origin}/ready`)
    expect(shown.status).toBe(200)
    expect(((await shown.json()) as { replicas: ShownReplica[] }).replicas[0]?.state).toBe('down')
    clusters.startReplica()
    await service.child.waitForLog(
      (line) => line.msg === 'read replica streaming' && line.was === 'down' && line.level === 'info',
      15_000,
    )
  })

  it('refuses a replica URL that names another database of the standby: foreign in /ready and the metrics, never read, logged once with both databases', async () => {
    const main = await replicatedDatabase()
    const other = await replicatedDatabase()
    // Each a catalogue of its own books: whichever answers a read shows itself.
    for (const [name, title] of [
      [main, 'Main'],
      [other, 'Other'],
    ] as const) {
      const store = await PostgresStore.open(clusters.primaryUrl(name), resources)
      const importer = store.openImport({ dryRun: false })
      await importer.add(
        Array.from({ length: 3 }, (_, i) => ({ title: `${title} ${i}`, author: title, collection: null })),
      )
      await importer.close()
      await store.close()
    }
    await replayed(clusters.primaryAdminUrl, clusters.replicaAdminUrl)
    const service = await startService({
      DATABASE_URL: clusters.primaryUrl(main),
      DATABASE_REPLICA_URL: clusters.replicaUrl(other),
    })
    const replica = clusters.replicaUrl(other).replace('postgres://postgres@', '')
    const foreign = await service.child.waitForLog((line) => line.msg === 'read replica foreign')
    expect(foreign).toMatchObject({ level: 'warn', replica, was: 'starting' })
    expect(String(foreign.database)).toMatch(new RegExp(`^${other} \\(oid \\d+\\) in cluster \\d+$`))
    expect(String(foreign.expected_database)).toMatch(new RegExp(`^${main} \\(oid \\d+\\) in cluster \\d+$`))
    // Logged before the service listens: at start.
    const order = service.child.logs.map((line) => line.msg)
    expect(order.indexOf('read replica foreign')).toBeLessThan(order.indexOf('listening'))

    const origin = service.api.replace('/api/v1', '')
    for (let i = 0; i < 5; i++) {
      const books = await fetch(`${service.api}/books?sort=name`, { headers: { accept: JSON_API } })
      expect(books.status).toBe(200)
      const names = ((await books.json()) as { data: { attributes: { name: string } }[] }).data.map(
        (book) => book.attributes.name,
      )
      expect(names).toEqual(['Main 0', 'Main 1', 'Main 2'])
    }
    const shown = await fetch(`${origin}/ready`)
    expect(shown.status).toBe(200)
    expect(((await shown.json()) as { replicas: ShownReplica[] }).replicas).toEqual([
      { replica, state: 'foreign', lag_seconds: null, reads: 0 },
    ])
    const samples = parseSamples(await (await fetch(`${origin}/metrics`)).text())
    expect(sampleValue(samples, 'catalogue_replica_state', { replica, state: 'foreign' })).toBe(1)
    expect(sampleValue(samples, 'catalogue_replica_state', { replica, state: 'streaming' })).toBe(0)
    expect(sampleValue(samples, 'catalogue_database_reads_total', { node: replica })).toBe(0)
    // Polled every 100 ms since, and said once.
    await Bun.sleep(5 * POLL_MS)
    expect(service.child.logs.filter((line) => line.msg.startsWith('read replica'))).toHaveLength(1)
  })
})
