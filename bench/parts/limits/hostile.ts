/**
 * `bun run bench -- hostile`: the most expensive requests the limits allow, at 100,000 books.
 * Each runs alone on a fresh service process (time, CPU of the whole process, peak RSS over idle);
 * then 8 of the slowest run at once, over and over, while a probe measures `GET one book`.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DEFAULT_MAX_OPERATIONS } from '../../../src/http/app'
import { DEFAULT_LIMITS } from '../../../src/jsonapi/limits'
import { LARGE, seed } from '../../data/seed'
import { countBytes, memoryOf, resetPeak, startReadWorkers } from '../../harness/process-memory'
import {
  type RunningServer,
  startServer,
  stopServer,
  UNCAPPED_LONG_ANSWERS,
  waitUntilReady,
} from '../../harness/servers'

const JSON_API = 'application/vnd.api+json'
const ATOMIC = `${JSON_API};ext="https://jsonapi.org/ext/atomic"`
const STALL_SECONDS = Number(process.env.BENCH_SECONDS) > 0 ? Number(process.env.BENCH_SECONDS) : 10

interface Hostile {
  readonly name: string
  readonly method: 'GET' | 'POST' | 'PATCH'
  readonly path: string
  readonly body?: string
  readonly headers?: Record<string, string>
}

/** `books.author.books...` as deep as the limit allows. */
function deepestInclude(depth: number): string {
  const names = ['books', 'author']
  return Array.from({ length: depth }, (_, i) => names[i % 2]).join('.')
}

function hostileRequests(): Hostile[] {
  const { maxSearchWords: searchWords, maxIncludeDepth: includeDepth, maxFilterIds: filterIds } = DEFAULT_LIMITS
  const operations = DEFAULT_MAX_OPERATIONS
  // "of" is in every title of the large set: each word matches all 100,000 books.
  const everyWord = Array.from({ length: searchWords }, () => 'of').join(' ')
  const ids = Array.from({ length: filterIds }, (_, i) => i + 1).join(',')
  const renames = Array.from({ length: operations }, (_, i) => ({
    op: 'update',
    data: { type: 'book_collections', id: '1', attributes: { name: `Collection renamed ${i}` } },
  }))
  const unknown: Record<string, string> = {}
  // About 1 MB of `"x12345":"y",`: 60,000 or so unknown attributes.
  for (let i = 0; i < 75_000; i++) unknown[`x${i}`] = 'y'
  return [
    {
      name: `search of ${searchWords} words each matching every book, no page`,
      method: 'GET',
      path: `/api/v1/books?filter[search]=${encodeURIComponent(everyWord)}`,
    },
    { name: 'search matching every book, ranked, no page', method: 'GET', path: '/api/v1/books?filter[search]=of' },
    {
      name: 'search matching every book, ranked, page 1 of 20',
      method: 'GET',
      path: '/api/v1/books?filter[search]=of&page[size]=20',
    },
    {
      name: `/authors?include=${deepestInclude(includeDepth)} (no page)`,
      method: 'GET',
      path: `/api/v1/authors?include=${deepestInclude(includeDepth)}`,
    },
    { name: '/authors?include=books (no page)', method: 'GET', path: '/api/v1/authors?include=books' },
    {
      name: '/books?include=author,book_collection (no page)',
      method: 'GET',
      path: '/api/v1/books?include=author,book_collection',
    },
    { name: '/books?sort=-name (no page)', method: 'GET', path: '/api/v1/books?sort=-name' },
    { name: '/books (no page)', method: 'GET', path: '/api/v1/books' },
    {
      name: 'offset page 5,000 of 20 by -name',
      method: 'GET',
      path: '/api/v1/books?sort=-name&page[number]=5000&page[size]=20',
    },
    {
      name: `filter[author] of ${filterIds} ids (no page)`,
      method: 'GET',
      path: `/api/v1/books?filter[author]=${ids}`,
    },
    { name: 'GET one author with their 1,000 books', method: 'GET', path: '/api/v1/authors/1' },
    {
      name: `atomic: rename a 5,000-book collection ${operations} times`,
      method: 'POST',
      path: '/api/v1/operations',
      body: JSON.stringify({ 'atomic:operations': renames }),
      headers: { 'content-type': ATOMIC, accept: ATOMIC },
    },
    {
      name: '1 MB body of unknown attributes',
      method: 'POST',
      path: '/api/v1/authors',
      body: JSON.stringify({ data: { type: 'authors', attributes: unknown } }),
      headers: { 'content-type': JSON_API },
    },
  ]
}

function cpuMs(pid: number): number {
  // utime and stime, fields 14 and 15 of /proc/<pid>/stat, in clock ticks (100 a second): every thread of the process.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return (Number(fields[11]) + Number(fields[12])) * 10
}

async function send(origin: string, request: Hostile): Promise<{ status: number; bytes: number }> {
  const response = await fetch(origin + request.path, {
    method: request.method,
    headers: { accept: JSON_API, 'accept-encoding': 'identity', ...request.headers },
    body: request.body,
  })
  return { status: response.status, bytes: await countBytes(response) }
}

function start(path: string, servers: RunningServer[]): RunningServer {
  const server = startServer('service', 'src/cli.ts', {
    HOST: '127.0.0.1',
    DATABASE_URL: `sqlite://${path}`,
    LOG_LEVEL: 'warn',
    // Its 8 heavy lists at once come from one client.
    ...UNCAPPED_LONG_ANSWERS,
  })
  servers.push(server)
  return server
}

interface Measured {
  readonly name: string
  readonly status: number
  readonly bytes: number
  readonly ms: number
  readonly cpuMs: number
  readonly peakMb: number
}

async function measureAlone(path: string, request: Hostile, servers: RunningServer[]): Promise<Measured> {
  const server = start(path, servers)
  try {
    const pid = server.process.pid
    await waitUntilReady(server, '/api/v1/books/1')
    await startReadWorkers(server.origin)
    const idle = memoryOf(pid).rssKb
    resetPeak(pid)
    const cpuBefore = cpuMs(pid)
    const sent = performance.now()
    const { status, bytes } = await send(server.origin, request)
    const ms = performance.now() - sent
    const cpu = cpuMs(pid) - cpuBefore
    const peakMb = (memoryOf(pid).hwmKb - idle) / 1024
    return { name: request.name, status, bytes, ms, cpuMs: cpu, peakMb }
  } finally {
    await stopServer(server)
  }
}

/** `GET one book` over and over, one at a time, while `load` requests loop 8 at once. */
async function stall(path: string, load: readonly Hostile[], servers: RunningServer[]) {
  const server = start(path, servers)
  try {
    await waitUntilReady(server, '/api/v1/books/1')
    const probe = async (ms: number) => {
      const latencies: number[] = []
      const until = performance.now() + ms
      while (performance.now() < until) {
        const sent = performance.now()
        await send(server.origin, { name: 'probe', method: 'GET', path: '/api/v1/books/2' })
        latencies.push(performance.now() - sent)
        await Bun.sleep(5)
      }
      return latencies.sort((a, b) => a - b)
    }
    const quiet = await probe(2000)
    // Eight connections, two per request, from another process (see hostile-load.ts).
    const loader = Bun.spawn(
      [
        'bun',
        join(import.meta.dir, 'hostile-load.ts'),
        server.origin,
        String(STALL_SECONDS),
        ...load.map((r) => r.path),
      ],
      { stdout: 'pipe', stderr: 'inherit' },
    )
    await Bun.sleep(300)
    const busy = await probe((STALL_SECONDS - 0.6) * 1000)
    const heavyDone = Number((await new Response(loader.stdout).text()).trim())
    await loader.exited
    const at = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0
    return {
      quiet: { p50: at(quiet, 0.5), p99: at(quiet, 0.99) },
      busy: { p50: at(busy, 0.5), p99: at(busy, 0.99), max: busy.at(-1) ?? 0, count: busy.length },
      heavyDone,
    }
  } finally {
    await stopServer(server)
  }
}

export async function runHostile(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'catalogue-hostile-'))
  const servers: RunningServer[] = []
  try {
    const path = join(dir, 'large.db')
    const seeded = performance.now()
    await seed(path, LARGE)
    process.stderr.write(`seeded ${LARGE.books} books in ${Math.round(performance.now() - seeded)} ms\n`)
    const requests = hostileRequests()
    const rows: Measured[] = []
    // BENCH_ONLY=<regex>: measure only the requests whose names match, and skip the stall test.
    const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : null
    for (const request of requests) {
      if (only && !only.test(request.name)) continue
      const measured = await measureAlone(path, request, servers)
      process.stderr.write(`${measured.name}: ${measured.status} in ${Math.round(measured.ms)} ms\n`)
      rows.push(measured)
    }
    if (only) {
      for (const r of rows) console.log(`${r.name}: ${Math.round(r.cpuMs)} ms CPU, +${r.peakMb.toFixed(1)} MiB`)
      return 0
    }
    const worst = requests.filter((r) => r.method === 'GET' && /no page/.test(r.name)).slice(0, 4)
    const stalled = await stall(path, worst, servers)
    const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1)
    const report = [
      `## Hostile requests at ${LARGE.books.toLocaleString('en-US')} books`,
      '',
      `Bun ${Bun.version}; each request alone on a fresh service process (read workers started first); CPU is user + system of every thread of the process; peak is VmHWM over the idle VmRSS.`,
      '',
      '| request | status | body MiB | time ms | CPU ms | peak over idle MiB |',
      '|---|--:|--:|--:|--:|--:|',
      ...rows.map(
        (r) =>
          `| ${r.name} | ${r.status} | ${mb(r.bytes)} | ${Math.round(r.ms)} | ${Math.round(r.cpuMs)} | ${r.peakMb.toFixed(1)} |`,
      ),
      '',
      `### GET one book while 8 of the slowest run at once (${STALL_SECONDS} s)`,
      '',
      `Load, 2 connections each, from a separate process: ${worst.map((r) => `\`${r.path.replace('/api/v1', '')}\``).join(', ')}.`,
      '',
      '| | p50 ms | p99 ms | max ms | probes |',
      '|---|--:|--:|--:|--:|',
      `| quiet | ${stalled.quiet.p50.toFixed(2)} | ${stalled.quiet.p99.toFixed(2)} | | |`,
      `| under load | ${stalled.busy.p50.toFixed(2)} | ${stalled.busy.p99.toFixed(2)} | ${stalled.busy.max.toFixed(1)} | ${stalled.busy.count} |`,
      '',
      `Heavy requests completed meanwhile: ${stalled.heavyDone}.`,
      '',
    ].join('\n')
    console.log(report)
    writeFileSync(join(import.meta.dir, '..', '..', 'results', 'hostile.md'), report)
    return stalled.busy.p99 < 50 ? 0 : 1
  } finally {
    await Promise.all(servers.map(stopServer))
    rmSync(dir, { recursive: true, force: true })
  }
}
