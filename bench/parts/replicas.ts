/**
 * Reads through a read replica (DATABASE_REPLICA_URL, docs/postgres.md), part of `bun run bench`
 * with PostgreSQL and on its own as `bun run bench -- replicas`: a primary and a hot standby of it,
 * made for the run (test/support/postgres-replication.ts: initdb, pg_basebackup -R, each on a free
 * port, removed after), 10,000 books seeded on the primary, then two services on that database
 * taking turns under the same load: one reading the primary alone, one with the standby as its
 * replica. GET one book and a page of 20 at 32 connections; the bench checks from /metrics that
 * the second one's reads were answered by the replica.
 */
import { SQL } from 'bun'
import {
  holdsReplicationPrograms,
  type ReplicatedClusters,
  replayed,
  startReplicatedClusters,
} from '../../test/support/postgres-replication'
import { postgresBinaries } from '../../test/support/postgres-server'
import { SEED } from '../data/seed'
import { seedPostgres } from '../data/seed-postgres'
import { MEASURE_MS, measuredSeconds, pinning, runScenario, warmUp } from '../harness/measure'
import { getBook, pageOfBooks } from '../harness/requests'
import { type Scenario, type ScenarioResult, WORKERS_CONCURRENCY } from '../harness/scenario'
import { type RunningServer, startServer, stopServer, UNCAPPED_LONG_ANSWERS, waitUntilReady } from '../harness/servers'
import { cpu, markdownTable, rate } from '../harness/tables'

const scenarios: readonly Scenario[] = [
  { name: 'GET one book', concurrency: WORKERS_CONCURRENCY, withReference: true, plan: getBook(SEED) },
  {
    name: 'page of 20 (one of the first 50)',
    concurrency: WORKERS_CONCURRENCY,
    withReference: true,
    plan: { method: 'GET', path: pageOfBooks('{n}'), randomMax: 50, expectStatus: 200 },
  },
]

export interface ReplicaReadsResult {
  /** `service`: the primary alone; `reference`: with the replica. */
  readonly results: readonly ScenarioResult[]
  /** The raw reference (bench/references/raw-postgres.ts): `service` on the primary, `reference` on the standby. */
  readonly raw: readonly ScenarioResult[]
  /** Of the replica service's store reads, the share the replica answered. */
  readonly replicaShare: number
  readonly loggedLines: number
}

/** The store reads each node answered, from a service's /metrics. */
async function readsByNode(server: RunningServer): Promise<Map<string, number>> {
  const text = await (await fetch(`${server.origin}/metrics`)).text()
  const reads = new Map<string, number>()
  for (const [, node, value] of text.matchAll(/^catalogue_database_reads_total\{node="([^"]+)"\} (\S+)$/gm)) {
    reads.set(node as string, Number(value))
  }
  return reads
}

/** A CHECKPOINT on the primary, replayed, then one on the standby (a restartpoint). */
async function settle(clusters: ReplicatedClusters): Promise<void> {
  for (const url of [clusters.primaryAdminUrl, clusters.replicaAdminUrl]) {
    const sql = new SQL(url, { max: 1 })
    await sql`CHECKPOINT`
    await sql.close()
    await replayed(clusters.primaryAdminUrl, clusters.replicaAdminUrl, 120_000)
  }
}

/** Null where PostgreSQL's programs (initdb, pg_ctl, pg_basebackup) are not installed: nothing to measure. */
export async function runReplicaReads(
  measureMs: number,
  track: (server: RunningServer) => void,
): Promise<ReplicaReadsResult | null> {
  const bin = postgresBinaries()
  if (bin === null || !holdsReplicationPrograms(bin)) return null
  let clusters: ReplicatedClusters | undefined
  const started: RunningServer[] = []
  try {
    clusters = await startReplicatedClusters(bin)
    const admin = new SQL(clusters.primaryAdminUrl, { max: 1 })
    await admin`CREATE DATABASE bench`
    await admin.close()
    const seeding = performance.now()
    await seedPostgres(clusters.primaryUrl('bench'), SEED)
    await replayed(clusters.primaryAdminUrl, clusters.replicaAdminUrl, 120_000)
    // A checkpoint on the primary, then a restartpoint on the standby: until its next restartpoint
    // a standby cannot keep the hint bits of rows it has just replayed, and checks each row's commit
    // in the commit log on every read (a count of 10,000 books: 3.1 ms against 0.8 ms). A standby
    // that has run a while (checkpoint_timeout) has; so has this one now.
    await settle(clusters)
    process.stderr.write(
      `seeded ${SEED.books} books on a primary and its replica in ${Math.round(performance.now() - seeding)} ms\n`,
    )
    const serviceEnv = { HOST: '127.0.0.1', LOG_LEVEL: 'info', ...UNCAPPED_LONG_ANSWERS }
    const primaryOnly = startServer(
      'primary',
      'src/cli.ts',
      { ...serviceEnv, DATABASE_URL: clusters.primaryUrl('bench') },
      pinning.server,
    )
    started.push(primaryOnly)
    track(primaryOnly)
    const withReplica = startServer(
      'replica',
      'src/cli.ts',
      { ...serviceEnv, DATABASE_URL: clusters.primaryUrl('bench'), DATABASE_REPLICA_URL: clusters.replicaUrl('bench') },
      pinning.server,
    )
    started.push(withReplica)
    track(withReplica)
    await Promise.all([waitUntilReady(primaryOnly, '/api/v1/books/1'), waitUntilReady(withReplica, '/api/v1/books/1')])
    for (const path of ['/api/v1/books/1', `/api/v1/books/${SEED.books}`, pageOfBooks(1), pageOfBooks(50)]) {
      const [a, b] = await Promise.all(
        [primaryOnly, withReplica].map(async (server) => (await fetch(server.origin + path)).text()),
      )
      if (a !== b) throw new Error(`GET ${path}: the service answers otherwise through the replica`)
    }
    process.stderr.write('replicas: both services answer alike; measuring\n')
    await warmUp(primaryOnly)
    await warmUp(withReplica)
    const before = await readsByNode(withReplica)
    const results: ScenarioResult[] = []
    for (const scenario of scenarios) results.push(await runScenario(scenario, primaryOnly, withReplica, measureMs))
    const after = await readsByNode(withReplica)
    await Promise.all(started.splice(0).map(stopServer))
    // The same requests answered by the raw reference on each node: what the standby itself gives.
    const rawOn = (name: string, url: string) => {
      const server = startServer(
        name,
        'bench/references/raw-postgres.ts',
        { REFERENCE_DATABASE_URL: url },
        pinning.server,
      )
      started.push(server)
      track(server)
      return server
    }
    const rawPrimary = rawOn('raw on primary', clusters.primaryUrl('bench'))
    const rawStandby = rawOn('raw on standby', clusters.replicaUrl('bench'))
    await Promise.all([waitUntilReady(rawPrimary, '/api/v1/books/1'), waitUntilReady(rawStandby, '/api/v1/books/1')])
    await warmUp(rawPrimary)
    await warmUp(rawStandby)
    const raw: ScenarioResult[] = []
    for (const scenario of scenarios) raw.push(await runScenario(scenario, rawPrimary, rawStandby, measureMs))
    let replicaReads = 0
    let allReads = 0
    for (const [node, value] of after) {
      const delta = value - (before.get(node) ?? 0)
      allReads += delta
      if (node !== 'primary') replicaReads += delta
    }
    return {
      results,
      raw,
      replicaShare: allReads === 0 ? 0 : replicaReads / allReads,
      loggedLines: primaryOnly.loggedLines() + withReplica.loggedLines(),
    }
  } finally {
    await Promise.all(started.map(stopServer))
    clusters?.remove()
  }
}

/** The section of the report: each scenario on the primary alone and through the replica. */
export function replicaSection(result: ReplicaReadsResult | null, measureMs: number): string {
  const title = `### Reads through a replica at ${SEED.books.toLocaleString('en-US')} books (${measuredSeconds(measureMs)} s per scenario and service)`
  if (result === null) {
    return `${title}\n\nNot measured: PostgreSQL's initdb, pg_ctl and pg_basebackup are not installed here.`
  }
  const rows = result.results.map((r, i) => {
    const replica = r.reference
    const raw = result.raw[i]
    const rawRatio = raw?.reference ? (raw.reference.perSecond / raw.service.perSecond).toFixed(2) : '—'
    return [
      `${r.name} (c=${r.concurrency})`,
      rate(r.service.perSecond),
      replica ? rate(replica.perSecond) : '—',
      replica ? (replica.perSecond / r.service.perSecond).toFixed(2) : '—',
      r.service.p99Ms.toFixed(2),
      replica ? replica.p99Ms.toFixed(2) : '—',
      `${cpu(r.serviceCpuUs)} / ${cpu(r.referenceCpuUs)}`,
      raw ? `${rate(raw.service.perSecond)} / ${rate(raw.reference?.perSecond ?? 0)} (${rawRatio})` : '—',
    ]
  })
  return [
    title,
    '',
    `A primary and a hot standby of it on this machine (PostgreSQL's processes unpinned), the service pinned to core 0 as above: once with \`DATABASE_URL\` alone, once with the standby as \`DATABASE_REPLICA_URL\`, taking turns on the same database, after a checkpoint on the primary and a restartpoint on the standby (before its first restartpoint, a standby checks the commit of each row it has just replayed on every read: see docs/postgres.md). The replica answered ${(result.replicaShare * 100).toFixed(1)} % of the second one's store reads (its /metrics). On one machine a replica adds no capacity: this measures what routing reads costs, not what a replica on its own machine gives. The last column runs bench/references/raw-postgres.ts (Bun.serve and Bun's SQL client, no routing) on the primary and on the standby under the same load: what the standby itself gives, beside what the service gives through it.`,
    '',
    markdownTable(
      [
        'scenario',
        'primary only req/s',
        'through the replica req/s',
        'ratio (replica/primary)',
        'primary only p99 (ms)',
        'through the replica p99 (ms)',
        'service CPU µs/req (primary only / through the replica)',
        'raw reference req/s, on the primary / on the standby (ratio)',
      ],
      rows,
    ),
  ].join('\n')
}

/** `bun run bench -- replicas`: this part alone, its section printed (bench/results/full.md is left as it is). */
export async function replicaBench(): Promise<number> {
  const servers: RunningServer[] = []
  const result = await runReplicaReads(MEASURE_MS, (server) => servers.push(server))
  console.log(`\n${replicaSection(result, MEASURE_MS)}`)
  const failed = result?.results.some((r) => r.service.errors > 0 || (r.reference?.errors ?? 0) > 0)
  return failed ? 1 : 0
}
