/**
 * What long pages of the change feed cost the service (issue 33, point 4):
 * `bun bench/standalone/feed-page-memory.ts [RUNS] [CLIENTS]` seeds a SQLite catalogue of 100,000
 * changes (100 authors, 20 collections, 99,880 books, created through the store), then RUNS times
 * (3 unless given) starts the service of this checkout (src/cli.ts, so copy the script into
 * another checkout to measure that build) with MAX_PAGE_SIZE=100000, reads the page once to warm
 * it, and has CLIENTS (10 unless given) clients, each from its own address, read
 * `/api/v1/changes?page[size]=100000&include=resource` to its end at once, in another process
 * (bench/parts/limits/bounds-load.ts) so that what they buffer is not the service's memory.
 * `PAGE_SIZE` asks for smaller pages of the same catalogue. Meanwhile `GET /api/v1/books/1` is
 * sent every 20 ms. Prints the service's idle and peak RSS (VmRSS sampled every 10 ms, and VmHWM),
 * the statuses, and /books/1's latencies: the median of the runs, then each run.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { seed } from '../data/seed'
import { probeOnClock } from '../harness/clock-probe'
import { memoryOf, rssSampler, startReadWorkers } from '../harness/process-memory'
import { type RunningServer, startServer, stopServer, waitUntilReady } from '../harness/servers'

const [runsArg = '3', clientsArg = '10'] = Bun.argv.slice(2)
const RUNS = Number(runsArg)
const CLIENTS = Number(clientsArg)
const SIZE = 100_000
const PAGE = `/api/v1/changes?page[size]=${process.env.PAGE_SIZE ?? SIZE}&include=resource`
const JSON_API = 'application/vnd.api+json'

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN
}
const quantile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? Number.NaN

/** The clients, in a process of their own: `{"statuses":{...},"bytes":n,"ms":n}`. */
async function readAtOnce(origin: string): Promise<{ statuses: Record<string, number>; bytes: number; ms: number }> {
  const load = join(import.meta.dir, '..', 'parts', 'limits', 'bounds-load.ts')
  const child = Bun.spawn(['bun', load, 'read', origin, String(CLIENTS), PAGE], { stdout: 'pipe', stderr: 'inherit' })
  const text = await new Response(child.stdout).text()
  await child.exited
  return JSON.parse(text.trim())
}

interface Run {
  idleMiB: number
  peakMiB: number
  statuses: Record<string, number>
  readSeconds: number
  p50: number
  p90: number
  max: number
}

async function once(db: string): Promise<Run> {
  const server: RunningServer = startServer('service', 'src/cli.ts', {
    HOST: '127.0.0.1',
    DATABASE_URL: `sqlite://${db}`,
    LOG_LEVEL: 'warn',
    MAX_PAGE_SIZE: String(SIZE),
  })
  try {
    await waitUntilReady(server, '/health')
    await startReadWorkers(server.origin)
    // Once, so that the database is in the page cache and the code compiled: idle.
    await (await fetch(server.origin + PAGE, { headers: { accept: JSON_API } })).arrayBuffer()
    await Bun.sleep(1000)
    const pid = server.process.pid
    const idle = memoryOf(pid).rssKb
    const sampler = rssSampler(pid)
    const load = readAtOnce(server.origin)
    const single = await probeOnClock(server.origin, '/api/v1/books/1', load)
    const outcome = await load
    const peak = sampler.stop()
    return {
      idleMiB: idle / 1024,
      peakMiB: peak / 1024,
      statuses: outcome.statuses,
      readSeconds: outcome.ms / 1000,
      p50: quantile(single, 0.5),
      p90: quantile(single, 0.9),
      max: single.at(-1) ?? Number.NaN,
    }
  } finally {
    await stopServer(server)
  }
}

const dir = mkdtempSync(join(tmpdir(), 'catalogue-feed-pages-'))
try {
  const db = join(dir, 'feed.db')
  const set = {
    authors: 100,
    collections: 20,
    books: SIZE - 120,
    authorName: (n: number) => `Author ${n}`,
    bookName: (n: number) => `Book ${n}: a bench title`,
  }
  await seed(db, set)
  process.stderr.write(`seeded ${SIZE} changes\n`)
  const runs: Run[] = []
  for (let run = 1; run <= RUNS; run++) {
    runs.push(await once(db))
    process.stderr.write(`run ${run}/${RUNS}: ${JSON.stringify(runs.at(-1))}\n`)
  }
  const cell = (pick: (run: Run) => number) => {
    const shown = (v: number) => (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(1))
    return `**${shown(median(runs.map(pick)))}** (${runs.map((run) => shown(pick(run))).join(', ')})`
  }
  console.log(
    [
      `${CLIENTS} clients at once read \`${PAGE}\` (MAX_PAGE_SIZE=${SIZE}), Bun ${Bun.version}, ${navigator.hardwareConcurrency} cores; median in bold, then each of ${RUNS} runs`,
      '',
      '| idle RSS MiB | peak RSS MiB | peak over idle MiB | all read s | GET /books/1 p50 ms | p90 ms | max ms | statuses |',
      '|--:|--:|--:|--:|--:|--:|--:|---|',
      `| ${cell((r) => r.idleMiB)} | ${cell((r) => r.peakMiB)} | ${cell((r) => r.peakMiB - r.idleMiB)} | ${cell((r) => r.readSeconds)} | ${cell((r) => r.p50)} | ${cell((r) => r.p90)} | ${cell((r) => r.max)} | ${runs.map((r) => JSON.stringify(r.statuses)).join(' ')} |`,
    ].join('\n'),
  )
} finally {
  rmSync(dir, { recursive: true, force: true })
}
