/**
 * What a crowd of change streams catching up costs everyone else (issue 33, point 2):
 * `bun bench/standalone/stream-crowd.ts [STREAMS] [RUNS]` seeds a SQLite catalogue of 10,120
 * changes (bench/data/seed.ts), then RUNS times (3 unless given) starts the service of this
 * checkout (src/cli.ts: copy the script into another checkout to measure that build) and opens
 * STREAMS (1,000 unless given) streams at once, each at its own position 4,000 to 6,000 changes
 * behind, from one client (another process, so that what it reads is not the service's work),
 * each read until it has every change after its position. Meanwhile `GET /api/v1/books/1` is sent
 * every 20 ms on a clock (a request held up counts with the whole of its wait). Prints per run the
 * streams complete, the time they took, /books/1's latencies and the service's peak RSS.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SEED, seed } from '../data/seed'
import { probeOnClock } from '../harness/clock-probe'
import { memoryOf, resetPeak } from '../harness/process-memory'
import { startServer, stopServer, waitUntilReady } from '../harness/servers'

const EVENT_STREAM = 'text/event-stream'

if (Bun.argv[2] === '--clients') {
  // The client process: `--clients ORIGIN POSITIONS_JSON`, each position with the events it must get.
  const [origin = '', plan = '[]'] = Bun.argv.slice(3)
  const wanted = JSON.parse(plan) as { after: string; events: number }[]
  const started = performance.now()
  const results = await Promise.all(wanted.map(({ after, events }) => readStream(origin, after, events)))
  const complete = results.filter(Boolean).length
  console.log(JSON.stringify({ complete, failed: wanted.length - complete, ms: performance.now() - started }))
  process.exit(0)
}

/** Reads a stream from `after` until `events` events came (true), or it ended or stalled 30 s (false). */
async function readStream(origin: string, after: string, events: number): Promise<boolean> {
  try {
    const response = await fetch(`${origin}/api/v1/changes?page[after]=${after}`, { headers: { accept: EVENT_STREAM } })
    if (response.status !== 200 || !response.body) return false
    const reader = response.body.getReader()
    const decoder = new TextDecoder()
    let count = 0
    let rest = ''
    while (count < events) {
      const read = await Promise.race([reader.read(), Bun.sleep(30_000).then(() => null)])
      if (!read || read.done) return false
      const text = rest + decoder.decode(read.value, { stream: true })
      const end = text.lastIndexOf('\n')
      // Whole lines only: an event's lines may come in two pieces.
      count += text.slice(0, end + 1).match(/^event: change$/gm)?.length ?? 0
      rest = text.slice(end + 1)
    }
    // Not awaited: on a quiet stream the cancel of a fetch body can wait for the next bytes.
    void reader.cancel().catch(() => {})
    return true
  } catch {
    return false
  }
}

const [streamsArg = '1000', runsArg = '3'] = Bun.argv.slice(2)
const STREAMS = Number(streamsArg)
const RUNS = Number(runsArg)

const quantile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? Number.NaN

/** Every change id of the feed, oldest first, from its JSON pages. */
async function feedIds(origin: string): Promise<string[]> {
  const ids: string[] = []
  let after = '0'
  for (;;) {
    const page = (await (await fetch(`${origin}/api/v1/changes?page[after]=${after}&page[size]=100`)).json()) as {
      data: { id: string }[]
    }
    if (page.data.length === 0) return ids
    ids.push(...page.data.map((change) => change.id))
    after = ids.at(-1) ?? after
  }
}

const dir = mkdtempSync(join(tmpdir(), 'stream-crowd-'))
const dbPath = join(dir, 'catalogue.db')
await seed(dbPath, SEED)
try {
  for (let run = 1; run <= RUNS; run++) {
    const server = startServer('service', 'src/cli.ts', {
      DATABASE_URL: `sqlite://${dbPath}`,
      LOG_LEVEL: 'warn',
      MAX_CHANGE_STREAMS: String(STREAMS),
      MAX_CHANGE_STREAMS_PER_CLIENT: String(STREAMS),
    })
    try {
      await waitUntilReady(server, '/health')
      const ids = await feedIds(server.origin)
      const plan = Array.from({ length: STREAMS }, (_, i) => {
        const behind = 4000 + ((i * 2003) % 2001)
        return { after: ids[ids.length - 1 - behind] ?? '0', events: behind }
      })
      const pid = server.process.pid
      const reset = resetPeak(pid)
      const idle = memoryOf(pid).rssKb
      const clients = Bun.spawn(['bun', import.meta.path, '--clients', server.origin, JSON.stringify(plan)], {
        stdout: 'pipe',
        stderr: 'inherit',
      })
      const outcome = new Response(clients.stdout).text()
      let peak = idle
      const sampler = setInterval(() => {
        peak = Math.max(peak, memoryOf(pid).rssKb)
      }, 10)
      const latencies = await probeOnClock(server.origin, '/api/v1/books/1', outcome)
      clearInterval(sampler)
      if (reset) peak = Math.max(peak, memoryOf(pid).hwmKb)
      const { complete, failed, ms } = JSON.parse(await outcome) as { complete: number; failed: number; ms: number }
      const at = (q: number) => quantile(latencies, q).toFixed(1)
      console.log(
        `run ${run}: ${complete} of ${STREAMS} streams complete (${failed} not) in ${(ms / 1000).toFixed(1)} s; ` +
          `GET /books/1 p50 ${at(0.5)} p90 ${at(0.9)} p99 ${at(0.99)} max ${at(1)} ms (${latencies.length}); ` +
          `RSS ${Math.round(idle / 1024)} -> ${Math.round(peak / 1024)} MiB`,
      )
    } finally {
      await stopServer(server)
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
