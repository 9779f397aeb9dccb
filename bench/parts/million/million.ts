/**
 * Issue 24's bench: a million books. On the kept data sets of bench/parts/million/data.ts (10,000, 100,000
 * and 1,000,000 books, SQLite and PostgreSQL), the real service (`bun src/cli.ts serve`,
 * LOG_LEVEL=warn, pinned to core 0) answers one request at a time: ranked and sorted searches,
 * first page of 20, a plain numbered page, a filtered page and one record, each a few times after
 * a warm-up; then `catalogue import` of each size into a scratch database, timed with its peak RSS.
 * Part of `bun run bench` and on its own as `bun run bench -- million [--sizes 10k,100k,1m]
 * [--backends sqlite,postgres] [--quick]`; the section and its targets are in bench/parts/million/report.ts.
 */
import { pinning } from '../../harness/measure'
import { type RunningServer, startServer, stopServer } from '../../harness/servers'
import { median } from '../../harness/statistics'
import { type CaseTiming, MILLION_CASES, MILLION_SAMPLES, type MillionCell, type MillionResult } from './cases'
import {
  BACKEND_NAMES,
  type KeptSet,
  keptSet,
  MILLION_SIZES,
  type MillionBackend,
  type MillionSize,
  makeSet,
  scratchImport,
} from './data'
import { millionSection } from './report'

type Track = (server: RunningServer) => void

const say = (line: string) => process.stderr.write(`million: ${line}\n`)

/** One request, timed to its last body byte; status 0 where the connection failed (the service closed it, say). */
async function timeOnce(origin: string, path: string): Promise<{ ms: number; status: number; body: ArrayBuffer }> {
  const started = performance.now()
  try {
    const response = await fetch(origin + path, {
      headers: { accept: 'application/vnd.api+json', 'accept-encoding': 'identity' },
    })
    const body = await response.arrayBuffer()
    return { ms: performance.now() - started, status: response.status, body }
  } catch {
    return { ms: performance.now() - started, status: 0, body: new ArrayBuffer(0) }
  }
}

async function timeCase(origin: string, path: string): Promise<CaseTiming> {
  const warm = await timeOnce(origin, path)
  let total: number | undefined
  try {
    total = (JSON.parse(new TextDecoder().decode(warm.body)) as { meta?: { total?: number } }).meta?.total
  } catch {
    total = undefined
  }
  let status = warm.status
  const samples: number[] = []
  let spent = 0
  while (
    samples.length < MILLION_SAMPLES.max &&
    (samples.length < MILLION_SAMPLES.min || spent < MILLION_SAMPLES.budgetMs)
  ) {
    const run = await timeOnce(origin, path)
    if (status === 200 && run.status !== 200) status = run.status
    samples.push(run.ms)
    spent += run.ms
  }
  return {
    samplesMs: samples,
    medianMs: median(samples),
    minMs: Math.min(...samples),
    maxMs: Math.max(...samples),
    status,
    ...(total === undefined ? {} : { total }),
  }
}

/** The service on a set, once it answers one record; undefined if it exits or does not within two minutes. */
async function startService(set: KeptSet, track: Track): Promise<RunningServer | undefined> {
  const env = { HOST: '127.0.0.1', LOG_LEVEL: 'warn', DATABASE_URL: set.databaseUrl }
  const server = startServer('service', 'src/cli.ts', env, pinning.server, ['serve'])
  track(server)
  const deadline = performance.now() + 120_000
  while (performance.now() < deadline && server.process.exitCode === null) {
    try {
      const response = await fetch(`${server.origin}/api/v1/books/1`)
      await response.arrayBuffer()
      if (response.status === 200) return server
    } catch {
      // Not listening yet.
    }
    await Bun.sleep(100)
  }
  await stopServer(server)
  return undefined
}

/** Every case on one set, the service started for it and stopped after. */
async function measureSet(set: KeptSet, track: Track): Promise<{ set: KeptSet; timings: Map<string, CaseTiming> }> {
  let server = await startService(set, track)
  if (server === undefined) {
    // The kept set opened for `catalogue migrate` but not for the service: make it again, once.
    set = await makeSet(set.backend, set.size, 'the service would not start on it')
    server = await startService(set, track)
    if (server === undefined) throw new Error(`the service does not start on ${set.where}`)
  }
  const timings = new Map<string, CaseTiming>()
  try {
    for (const c of MILLION_CASES) timings.set(c.key, await timeCase(server.origin, c.path))
  } finally {
    await stopServer(server)
  }
  return { set, timings }
}

/** `track` gets each service as it starts, and `dir` holds the scratch imports: the caller's to stop and remove on Ctrl-C. */
export async function runMillion(
  backends: readonly MillionBackend[],
  sizes: readonly MillionSize[],
  dir: string,
  track: Track,
): Promise<MillionResult> {
  const started = performance.now()
  const cells: MillionCell[] = []
  for (const backend of backends) {
    for (const size of sizes) {
      const kept = await keptSet(backend, size)
      say(`measuring ${BACKEND_NAMES[backend]} at ${size.books.toLocaleString('en-US')} books`)
      const { set, timings } = await measureSet(kept, track)
      let importRun = set.made
      if (importRun === undefined) {
        say(`catalogue import of ${size.books.toLocaleString('en-US')} books into a scratch database`)
        importRun = await scratchImport(backend, size, dir)
      }
      say(`  import: ${importRun.seconds.toFixed(1)} s`)
      cells.push({ backend, size, set, timings, importRun, importMadeSet: set.made !== undefined })
    }
  }
  return { backends, sizes, cells, seconds: (performance.now() - started) / 1000 }
}

/** `--sizes` and `--backends` (BENCH_SIZES, BENCH_BACKENDS) of `bun run bench -- million`, or why not. */
export function millionChoice(
  argv: readonly string[],
  env: Record<string, string | undefined>,
): { backends: MillionBackend[]; sizes: MillionSize[] } | string {
  const value = (flag: string, variable: string) => {
    const i = argv.indexOf(flag)
    return i === -1 ? env[variable] : argv[i + 1]
  }
  const known = new Set(['--sizes', '--backends', '--quick'])
  for (const [i, arg] of argv.entries()) {
    if (!known.has(arg) && argv[i - 1] !== '--sizes' && argv[i - 1] !== '--backends') {
      return `unknown option "${arg}" of million (--sizes 10k,100k,1m, --backends sqlite,postgres, --quick)`
    }
  }
  const sizeNames = (value('--sizes', 'BENCH_SIZES') ?? '10k,100k,1m').toLowerCase().split(',')
  const sizes = MILLION_SIZES.filter((size) => sizeNames.includes(size.label))
  if (sizes.length !== sizeNames.length) return `--sizes takes 10k, 100k and 1m (got ${sizeNames.join(',')})`
  const backendNames = (value('--backends', 'BENCH_BACKENDS') ?? 'sqlite,postgres').split(',')
  const backends = (['sqlite', 'postgres'] as const).filter((b) => backendNames.includes(b))
  if (backends.length !== backendNames.length)
    return `--backends takes sqlite and postgres (got ${backendNames.join(',')})`
  return { backends, sizes }
}

/** `bun run bench -- million`: this part alone, its section printed (bench/results/full.md is left as it is). */
export async function millionBench(argv: readonly string[], dir: string, track: Track): Promise<number> {
  const choice = millionChoice(argv, process.env)
  if (typeof choice === 'string') {
    console.error(`bench: ${choice}`)
    return 2
  }
  const result = await runMillion(choice.backends, choice.sizes, dir, track)
  console.log(`\n${millionSection(result)}`)
  return 0
}
