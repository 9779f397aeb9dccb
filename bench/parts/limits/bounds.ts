/**
 * `bun run bench -- bounds`: what many clients at once, and the largest bodies the limits let
 * through, cost the service (issue 22, points 9 to 11), on a catalogue of 20,000 books. Each case
 * runs BENCH_RUNS times (3 by default) on a fresh service process; the table gives the median
 * and each run. The clients run in another process (bench/parts/limits/bounds-load.ts), so that what they
 * buffer is not counted as the service's memory.
 *
 * - 100 clients at once read the whole book list, without and with `include`; 200 clients send
 *   the same request and never read the answer. Peak RSS of the service over its idle RSS (read
 *   workers started), and a single `GET /books/1` (and, beside the stalled clients, a list of 900
 *   books) sent over and over meanwhile.
 * - 40 requests at once for `/docs/scalar.js` (`Accept-Encoding: gzip, br`) on a fresh process (from
 *   the source, and the compiled executable), as soon as it has logged `listening`; `/health` polled
 *   every 10 ms from a third process meanwhile.
 * - An atomic request of 100 to-many replacements of 350 ids each (about 1 MB), and a 1 MB body
 *   of about 110,000 unknown attributes, and the largest of each the limits let through
 *   (MAX_ATOMIC_IDS, MAX_BODY_MEMBERS): the request's time, its main-thread CPU, and a
 *   `GET /books/1` sent beside it.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DEFAULT_MAX_BODY_BYTES } from '../../../src/http/app'
import { SEED, seed } from '../../data/seed'
import { compiledExecutable } from '../../harness/executable'
import { memoryOf, rssSampler, startReadWorkers } from '../../harness/process-memory'
import { type RunningServer, startServer, stopServer, waitUntilListening, waitUntilReady } from '../../harness/servers'

const BOOKS = 20_000
const RUNS = Number(process.env.BENCH_RUNS) > 0 ? Number(process.env.BENCH_RUNS) : 3
const STALL_SECONDS = 8
const JSON_API = 'application/vnd.api+json'
const ATOMIC = `${JSON_API};ext="https://jsonapi.org/ext/atomic"`
/**
 * The defaults of MAX_ATOMIC_IDS and MAX_BODY_MEMBERS, written out rather than imported, so that
 * the bench runs the same requests on code from before those limits.
 */
const ATOMIC_IDS = 3000
const BODY_MEMBERS = 20_000

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN
}
const quantile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? Number.NaN

/** User + system CPU milliseconds of the process's main thread (its task whose id is the pid). */
function mainThreadCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/** User + system CPU milliseconds of every thread of the process. */
function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/** GET `path` one at a time (5 ms apart) until `until` settles: the latencies, sorted, and the statuses. */
async function probe(origin: string, path: string, until: Promise<unknown>) {
  let done = false
  void until.finally(() => {
    done = true
  })
  const latencies: number[] = []
  const statuses = new Set<number>()
  while (!done) {
    const sent = performance.now()
    const response = await fetch(origin + path, { headers: { accept: JSON_API } })
    await response.arrayBuffer()
    latencies.push(performance.now() - sent)
    statuses.add(response.status)
    await Bun.sleep(5)
  }
  return { sorted: latencies.sort((a, b) => a - b), statuses: [...statuses] }
}

/** Runs bench/parts/limits/bounds-load.ts with `args` and parses the JSON line it prints. */
async function clients<T>(args: readonly string[]): Promise<T> {
  const child = Bun.spawn(['bun', join(import.meta.dir, 'bounds-load.ts'), ...args], {
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const text = await new Response(child.stdout).text()
  await child.exited
  return JSON.parse(text.trim()) as T
}

let servers: RunningServer[] = []

async function fresh(path: string, workers: boolean): Promise<RunningServer> {
  const server = startServer('service', 'src/cli.ts', {
    HOST: '127.0.0.1',
    DATABASE_URL: `sqlite://${path}`,
    LOG_LEVEL: 'warn',
  })
  servers.push(server)
  await waitUntilReady(server, '/health')
  if (workers) await startReadWorkers(server.origin)
  await Bun.sleep(300)
  return server
}

async function stop(server: RunningServer): Promise<void> {
  await stopServer(server)
  servers = servers.filter((s) => s !== server)
}

interface Row {
  readonly name: string
  /** Column name -> one value per run. */
  readonly values: Record<string, number[]>
  readonly notes: Set<string>
}

function row(name: string): Row {
  return { name, values: {}, notes: new Set() }
}

function add(target: Row, column: string, value: number): void {
  target.values[column] ??= []
  target.values[column].push(value)
}

type ReadOutcome = { statuses: Record<string, number>; bytes: number; ms: number }

/** `count` clients read `path` to the end at once; RSS and `GET /books/1` watched meanwhile. */
async function concurrentLists(db: string, target: Row, count: number, path: string): Promise<void> {
  const server = await fresh(db, true)
  try {
    const pid = server.process.pid
    const idle = memoryOf(pid).rssKb
    const sampler = rssSampler(pid)
    const load = clients<ReadOutcome>(['read', server.origin, String(count), path])
    const single = await probe(server.origin, '/api/v1/books/1', load)
    const outcome = await load
    add(target, 'peak RSS over idle MiB', (sampler.stop() - idle) / 1024)
    add(target, 'all read s', outcome.ms / 1000)
    add(target, '200s', outcome.statuses['200'] ?? 0)
    add(target, '503s', outcome.statuses['503'] ?? 0)
    add(target, 'GET /books/1 p50 ms', quantile(single.sorted, 0.5))
    add(target, 'GET /books/1 max ms', single.sorted.at(-1) ?? Number.NaN)
    for (const status of Object.keys(outcome.statuses))
      if (status !== '200' && status !== '503') target.notes.add(status)
  } finally {
    await stop(server)
  }
}

/** `count` connections ask for `path` and never read; RSS, `GET /books/1` and a list of 900 books watched. */
async function stalledLists(db: string, target: Row, count: number, path: string): Promise<void> {
  const server = await fresh(db, true)
  try {
    const pid = server.process.pid
    const idle = memoryOf(pid).rssKb
    const sampler = rssSampler(pid)
    const load = clients<{ connected: number }>(['stall', server.origin, String(count), path, String(STALL_SECONDS)])
    await Bun.sleep(1000)
    const [single, list] = await Promise.all([
      probe(server.origin, '/api/v1/books/1', load),
      probe(server.origin, '/api/v1/book_collections/1/books', load),
    ])
    await load
    add(target, 'peak RSS over idle MiB', (sampler.stop() - idle) / 1024)
    add(target, 'GET /books/1 p50 ms', quantile(single.sorted, 0.5))
    add(target, 'GET /books/1 max ms', single.sorted.at(-1) ?? Number.NaN)
    add(target, 'list of 900 max ms', list.sorted.at(-1) ?? Number.NaN)
    for (const status of list.statuses) if (status !== 200) target.notes.add(`list of 900: ${status}`)
  } finally {
    await stop(server)
  }
}

/** How long `/health` is polled before the burst, so that the poller's own first requests are behind it. */
const POLL_LEAD_MS = 300

/**
 * `count` requests for the viewer's script at once (`Accept-Encoding: gzip, br`, as browsers send)
 * on a fresh process of `command`, once it has logged `listening`; `/health` polled every 10 ms
 * from a third process meanwhile, as a monitor would: its worst latency is what the burst held it up.
 */
async function scalarBurst(db: string, target: Row, count: number, command: readonly string[]): Promise<void> {
  const server = startServer('service', command, { HOST: '127.0.0.1', DATABASE_URL: `sqlite://${db}` })
  servers.push(server)
  try {
    await waitUntilListening(server)
    const poller = Bun.spawn(['bun', join(import.meta.dir, 'bounds-load.ts'), 'poll', server.origin, '/health'], {
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'inherit',
    })
    await Bun.sleep(POLL_LEAD_MS)
    const pid = server.process.pid
    const cpu = processCpuMs(pid)
    const outcome = await clients<ReadOutcome>(['read', server.origin, String(count), '/docs/scalar.js', 'gzip, br'])
    const burstCpu = processCpuMs(pid) - cpu
    await Bun.sleep(100)
    poller.stdin.end()
    const health = JSON.parse((await new Response(poller.stdout).text()).trim()) as { latencies: number[] }
    const sorted = health.latencies.sort((a, b) => a - b)
    add(target, 'all read s', outcome.ms / 1000)
    add(target, 'CPU ms', burstCpu)
    add(target, '/health p50 ms', quantile(sorted, 0.5))
    add(target, '/health max ms', sorted.at(-1) ?? Number.NaN)
    if ((outcome.statuses['200'] ?? 0) !== count) target.notes.add(JSON.stringify(outcome.statuses))
  } finally {
    await stop(server)
  }
}

/**
 * `count` operations each replacing a collection's books with `each` of them (`update`), or adding
 * them to it (`add`): 100 × 350 is about 1 MB. A replacement also clears the books the collection
 * held, a cost of the data rather than of the request: the largest request the limits allow adds.
 */
function atomicBody(count: number, each: number, op: 'update' | 'add'): string {
  const operations = Array.from({ length: count }, (_, i) => ({
    op,
    ref: { type: 'book_collections', id: String((i % 20) + 1), relationship: 'books' },
    // Ids of at most 4 digits, so that the whole body stays within the 1 MiB limit.
    data: Array.from({ length: each }, (_, k) => ({ type: 'books', id: String(((i * each + k) % 9999) + 1) })),
  }))
  return JSON.stringify({ 'atomic:operations': operations })
}

/** An author with `count` unknown attributes (`"k1a":0`), or as many as fit in the body limit. */
function unknownAttributesBody(count = Number.POSITIVE_INFINITY): string {
  const head = '{"data":{"type":"authors","attributes":{"name":"Unknown Keys"'
  const parts = [head]
  let size = head.length + 3
  for (let i = 0; i < count; i++) {
    const member = `,"k${i.toString(36)}":0`
    if (size + member.length > DEFAULT_MAX_BODY_BYTES) break
    parts.push(member)
    size += member.length
  }
  parts.push('}}}')
  return parts.join('')
}

/** One write, timed, with its main thread's CPU, while `GET /books/1` is sent beside it. */
async function writeBeside(
  server: RunningServer,
  target: Row,
  path: string,
  body: string,
  contentType: string,
): Promise<void> {
  const pid = server.process.pid
  const cpu = mainThreadCpuMs(pid)
  const sent = performance.now()
  const write = fetch(server.origin + path, {
    method: 'POST',
    headers: { 'content-type': contentType, accept: contentType },
    body,
  }).then(async (response) => {
    await response.arrayBuffer()
    return { status: response.status, ms: performance.now() - sent }
  })
  await Bun.sleep(2)
  const single = await probe(server.origin, '/api/v1/books/1', write)
  const { status, ms } = await write
  add(target, 'request ms', ms)
  add(target, 'main-thread CPU ms', mainThreadCpuMs(pid) - cpu)
  add(target, 'GET /books/1 max ms', single.sorted.at(-1) ?? Number.NaN)
  target.notes.add(`status ${status}`)
}

function table(title: string, rows: readonly Row[]): string {
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r.values)))]
  const cell = (values: number[] | undefined) => {
    if (!values || values.length === 0) return ''
    const shown = (v: number) => (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(1))
    return `**${shown(median(values))}** (${values.map(shown).join(', ')})`
  }
  return [
    `### ${title}`,
    '',
    `| case | ${columns.join(' | ')} | notes |`,
    `|---|${columns.map(() => '--:').join('|')}|---|`,
    ...rows.map(
      (r) => `| ${r.name} | ${columns.map((c) => cell(r.values[c])).join(' | ')} | ${[...r.notes].join('; ')} |`,
    ),
    '',
  ].join('\n')
}

export async function runBounds(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'catalogue-bounds-'))
  try {
    const db = join(dir, 'books.db')
    await seed(db, { ...SEED, books: BOOKS })
    process.stderr.write(`seeded ${BOOKS} books\n`)
    const lists = row('100 clients read `/books` (no page)')
    const included = row('100 clients read `/books?include=author,book_collection`')
    const stalled = row('200 clients send `/books` and never read')
    const scalar = row('40 × `/docs/scalar.js` (gzip, br), fresh `bun src/cli.ts`')
    const scalarCompiled = row('40 × `/docs/scalar.js` (gzip, br), fresh compiled executable')
    const atomic = row('atomic: 100 to-many replacements × 350 ids (1 MB)')
    const atomicAllowed = row(`atomic: 100 to-many adds × ${ATOMIC_IDS / 100} ids (${ATOMIC_IDS}, MAX_ATOMIC_IDS)`)
    const unknown = row('POST /authors, 1 MB of unknown attributes')
    const unknownAllowed = row(`POST /authors, ${BODY_MEMBERS - 4} unknown attributes (MAX_BODY_MEMBERS)`)
    // BENCH_ONLY=<regex>: only the cases whose names match (lists, include, never read, scalar, atomic, unknown).
    const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : null
    const chosen = (target: Row) => !only || only.test(target.name)
    for (let run = 1; run <= RUNS; run++) {
      process.stderr.write(`run ${run}/${RUNS}\n`)
      if (chosen(lists)) await concurrentLists(db, lists, 100, '/api/v1/books')
      if (chosen(included)) await concurrentLists(db, included, 100, '/api/v1/books?include=author,book_collection')
      if (chosen(stalled)) await stalledLists(db, stalled, 200, '/api/v1/books')
      if (chosen(scalar)) await scalarBurst(db, scalar, 40, ['bun', 'src/cli.ts'])
      if (chosen(scalarCompiled)) await scalarBurst(db, scalarCompiled, 40, [compiledExecutable()])
    }
    const server = await fresh(db, true)
    try {
      const bodies: [Row, string, string, string][] = [
        [atomic, '/api/v1/operations', atomicBody(100, 350, 'update'), ATOMIC],
        [atomicAllowed, '/api/v1/operations', atomicBody(100, ATOMIC_IDS / 100, 'add'), ATOMIC],
        [unknown, '/api/v1/authors', unknownAttributesBody(), JSON_API],
        [unknownAllowed, '/api/v1/authors', unknownAttributesBody(BODY_MEMBERS - 4), JSON_API],
      ]
      for (let run = 1; run <= RUNS; run++) {
        for (const [target, path, body, type] of bodies) {
          if (chosen(target)) await writeBeside(server, target, path, body, type)
        }
      }
    } finally {
      await stop(server)
    }
    const report = [
      `## Bounds at ${BOOKS.toLocaleString('en-US')} books`,
      '',
      `Bun ${Bun.version}, ${navigator.hardwareConcurrency} cores; median in bold, then each of ${RUNS} runs. Memory is the service process's peak RSS (VmRSS sampled every 10 ms, and VmHWM) over its idle RSS with the read workers started; the clients run in another process.`,
      '',
      table('Many clients at once', [lists, included, stalled].filter(chosen)),
      table('The viewer script', [scalar, scalarCompiled].filter(chosen)),
      table(
        'Large writes (one process, each write run in turn)',
        [atomic, atomicAllowed, unknown, unknownAllowed].filter(chosen),
      ),
    ].join('\n')
    console.log(report)
    if (!only) writeFileSync(join(import.meta.dir, '..', '..', 'results', 'bounds.md'), report)
    return 0
  } finally {
    await Promise.all(servers.map(stopServer))
    rmSync(dir, { recursive: true, force: true })
  }
}
