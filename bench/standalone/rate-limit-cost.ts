/**
 * What RATE_LIMIT costs a request, with one process and with `--workers 2`, where the supervisor
 * counts every worker's requests (src/http/access/shared-rate-limit.ts):
 *
 *   bun bench/standalone/rate-limit-cost.ts [SECONDS] [ROUNDS]     (5 s a run, 3 rounds by default)
 *
 * Starts the service of this checkout (src/cli.ts) over a new SQLite file with one author, four
 * ways (1 or 2 processes, RATE_LIMIT off or at 1,000,000 so that nothing is refused), and loads
 * each with GET /api/v1/authors/1 from bench/harness/load.ts at 16 connections: in each round, the
 * limit off and on side by side, at the same time, one process and then two workers. Prints, for each, the CPU every process of the service used (the
 * supervisor's included) per request, and the requests a second, as median (min-max) of the
 * rounds, then what RATE_LIMIT adds, from each round's pair. LOG_LEVEL=warn: the request lines
 * would cost more than what is measured. On a shared machine the figures move from run to run by
 * more than what is measured: take many rounds, and read the differences.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { LoadPlan, LoadRound } from '../harness/load'
import { cpuSeconds } from '../harness/process-tree'
import { type RunningServer, startServer, stopServer, waitUntilReady } from '../harness/servers'
import { median } from '../harness/statistics'

const seconds = Number(Bun.argv[2] ?? 5)
const rounds = Number(Bun.argv[3] ?? 3)
const ways = [
  { name: '1 process, RATE_LIMIT off', workers: 1, rateLimit: 0 },
  { name: '1 process, RATE_LIMIT on', workers: 1, rateLimit: 1_000_000 },
  { name: '2 workers, RATE_LIMIT off', workers: 2, rateLimit: 0 },
  { name: '2 workers, RATE_LIMIT on', workers: 2, rateLimit: 1_000_000 },
] as const

const dir = mkdtempSync(join(tmpdir(), 'catalogue-rate-cost-'))
process.on('exit', () => rmSync(dir, { recursive: true, force: true }))

async function start(way: (typeof ways)[number], file: string): Promise<RunningServer> {
  const server = startServer(way.name, 'src/cli.ts', {
    HOST: '127.0.0.1',
    DATABASE_URL: `sqlite://${file}`,
    LOG_LEVEL: 'warn',
    WORKERS: String(way.workers),
    RATE_LIMIT: String(way.rateLimit),
  })
  await waitUntilReady(server, '/health')
  return server
}

/** One run of the load against `server`: the CPU of its processes per request (µs), and requests a second. */
async function measure(server: RunningServer): Promise<{ cpuUs: number; perSecond: number }> {
  const plan: LoadPlan = {
    origin: server.origin,
    method: 'GET',
    path: '/api/v1/authors/1',
    randomMax: 1,
    expectStatus: 200,
    concurrency: 16,
    warmupMs: 1000,
    durationMs: seconds * 1000,
  }
  const pid = server.process.pid
  const before = cpuSeconds(pid) ?? 0
  const load = Bun.spawn(['bun', join(import.meta.dir, '..', 'harness', 'load.ts'), JSON.stringify(plan)], {
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const round = JSON.parse(await new Response(load.stdout).text()) as LoadRound
  const used = (cpuSeconds(pid) ?? 0) - before
  if (round.errors > 0) throw new Error(`${server.name}: ${round.errors} errors, first ${round.firstError}`)
  return { cpuUs: (used / round.answered) * 1e6, perSecond: round.requests / round.seconds }
}

/** Starts `way` over a new file with one author. */
async function ready(way: (typeof ways)[number], round: number): Promise<RunningServer> {
  const server = await start(way, join(dir, `${round}-${way.workers}-${way.rateLimit}.db`))
  const created = await fetch(`${server.origin}/api/v1/authors`, {
    method: 'POST',
    headers: { 'content-type': 'application/vnd.api+json', accept: 'application/vnd.api+json' },
    body: JSON.stringify({ data: { type: 'authors', attributes: { name: 'Ada Quill' } } }),
  })
  if (created.status !== 201) throw new Error(`${way.name}: POST answered ${created.status}`)
  return server
}

const results = new Map<string, { cpuUs: number[]; perSecond: number[] }>(
  ways.map((way) => [way.name, { cpuUs: [], perSecond: [] }]),
)
for (let round = 1; round <= rounds; round++) {
  for (const processes of [1, 2]) {
    // The limit off and on at once, each under its own load: whatever else the machine does then
    // weighs on both alike, and their difference is what the limit costs.
    const pair = ways.filter((way) => way.workers === processes)
    const servers: RunningServer[] = []
    try {
      for (const way of pair) servers.push(await ready(way, round))
      const measured = await Promise.all(servers.map(measure))
      pair.forEach((way, i) => {
        const { cpuUs, perSecond } = measured[i] as { cpuUs: number; perSecond: number }
        results.get(way.name)?.cpuUs.push(cpuUs)
        results.get(way.name)?.perSecond.push(perSecond)
        console.error(`round ${round}, ${way.name}: ${cpuUs.toFixed(1)} µs a request, ${perSecond.toFixed(0)}/s`)
      })
    } finally {
      for (const server of servers) await stopServer(server)
    }
  }
}

const spread = (values: readonly number[], digits: number) =>
  `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)})`
console.log(`| way | CPU µs a request | requests a second |\n|---|---|---|`)
for (const [name, { cpuUs, perSecond }] of results) {
  console.log(`| ${name} | ${spread(cpuUs, 1)} | ${spread(perSecond, 0)} |`)
}
for (const processes of ['1 process', '2 workers']) {
  const on = results.get(`${processes}, RATE_LIMIT on`)?.cpuUs ?? []
  const off = results.get(`${processes}, RATE_LIMIT off`)?.cpuUs ?? []
  console.log(
    `${processes}: RATE_LIMIT on costs ${spread(
      on.map((us, i) => us - (off[i] ?? 0)),
      1,
    )} µs a request more`,
  )
}
