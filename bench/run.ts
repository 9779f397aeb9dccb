/**
 * `bun run bench`: seeds two temporary databases (10,000 and 100,000 books), measures the memory
 * of a full-list request on fresh service processes, then for each data set starts the service
 * and the reference server in their own processes, loads each over loopback from a third
 * process; then the backend × workers part (bench/matrix.ts): the service on SQLite and on
 * PostgreSQL, one process and `--workers N`, each beside its reference. Prints markdown tables
 * and writes them to bench/results.md. Options (see chosenBench): --backends, --workers, --quick,
 * --matrix-only. `bun run bench -- crash` runs the crash rounds of bench/crash.ts instead.
 */
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { encodeCursor } from '../src/jsonapi/cursor'
import { removeTempDirs, stopChildren } from '../test/support/process'
import { compareAnswers } from './compare'
import { crashBench } from './crash'
import { type DurabilityResult, durabilityTargets, runDurability } from './durability'
import { runHostile } from './hostile'
import {
  MATRIX_SEARCH,
  type MatrixChoice,
  type MatrixResult,
  matrixChoice,
  runMatrix,
  serviceTakesWorkers,
} from './matrix'
import {
  LARGE_MEASURE_MS,
  LOAD_GENERATOR,
  MEASURE_MS,
  pinning,
  QUICK,
  ROUNDS,
  runScenario,
  WARMUP_MS,
  warmUp,
} from './measure'
import { MEMORY_RUNS, type MemoryResult, measureListMemory } from './memory'
import { dropDatabases, postgresAdminUrl } from './postgres-databases'
import {
  cpuTable,
  matrixTable,
  memoryTable,
  referenceNote,
  type ScenarioResult,
  table,
  targets,
  workersTable,
} from './report'
import { getBook, type LargeInputs, largeScenarios, type Scenario, scenarios } from './scenarios'
import { AUTHOR_SURNAME, type DataSet, LARGE, SEARCH_WORD, SEED, seed } from './seed'
import { type RunningServer, type ServerPair, startPair, stopPair, stopServer } from './servers'

const CURSOR_PAGES_IN = 5
const DEEP_PAGE = { number: 2000, size: 20 }

const count = (n: number) => n.toLocaleString('en-US')

const loadGeneratorNote =
  LOAD_GENERATOR === 'wrk'
    ? 'wrk (one thread, bench/wrk-plan.lua), a fresh process per round, over c keep-alive connections to 127.0.0.1'
    : 'bench/load.ts, a separate Bun process per round, Bun fetch over c keep-alive connections to 127.0.0.1'

function describeRun(loggedLines: number, seconds: number): string {
  const cores = cpus()
  const data = (set: DataSet) =>
    `${set.authors} authors, ${set.collections} book collections, ${count(set.books)} books (${count(set.books / set.authors)} an author)`
  return [
    `Bun ${Bun.version}, ${cores.length} CPU cores (${cores[0]?.model.trim() ?? 'unknown'}), ${new Date().toISOString().slice(0, 10)}; the whole run took ${Math.round(seconds)} s.`,
    '',
    `- Data: two sets, each seeded through SqliteStore (writes in chunks of 1,000 that share a group commit) into a temporary SQLite file (WAL, synchronous=FULL, foreign_keys=ON): ${data(SEED)}, titled "Book <n>: a bench title"; and ${data(LARGE)}, titled "<word> of <word>" from 400 words (a word is in about 500 titles), every tenth author with a searchable name.`,
    `- Service: \`bun src/cli.ts\` with LOG_LEVEL=info, so it writes one JSON log line per request, as operators run it; its stdout goes to a file the bench counts and removes (${count(loggedLines)} lines this run).`,
    '- Reference: bench/reference.ts, plain Bun.serve + prepared bun:sqlite statements, no framework, no logging, on a copy of the same file with the same pragmas and the same SQL; it has GET one book, POST a book, the unpaginated lists (every book, the books of an author) written whole, offset and cursor pages of books (with full-text search on offset pages) and an author with its books; its answers were checked byte for byte against the service before measuring.',
    `- Load: ${loadGeneratorNote}; measured per scenario and server for ${MEASURE_MS / 1000} s at ${count(SEED.books)} books and ${LARGE_MEASURE_MS / 1000} s at ${count(LARGE.books)} books, in ${ROUNDS} alternating rounds where there is a reference, each after ${WARMUP_MS / 1000} s of warm-up; latency is from sending to the last body byte.`,
    `- Memory: for each data set, ${MEMORY_RUNS} fresh service processes (started before any load, one request each); VmRSS from /proc/<pid>/status once it is up and idle, then VmHWM reset to it (write "5" to /proc/<pid>/clear_refs), one unpaginated GET /api/v1/books whose body the bench reads to the end counting bytes, and VmHWM read as the peak.`,
    `- Placement: ${pinning.note}. The load generator gets one core, so where it shows ~1 core busy it, not the server, limits req/s (see the CPU tables).`,
  ].join('\n')
}

const dir = mkdtempSync(join(tmpdir(), 'catalogue-bench-'))
const servers: RunningServer[] = []

async function cleanUp(): Promise<void> {
  await Promise.all(servers.map(stopServer))
  // The crash rounds' service and folder.
  await stopChildren()
  removeTempDirs()
  await dropDatabases().catch((error: Error) => console.error(`bench: cannot drop its databases: ${error.message}`))
  rmSync(dir, { recursive: true, force: true })
}

// Ctrl-C: stop the servers and remove the files rather than leave them behind.
process.on('SIGINT', () => void cleanUp().finally(() => process.exit(130)))

/** Seeds a set into `<name>.db` and copies it for the reference, the memory runs and the backend × workers part. */
async function seedSet(
  name: string,
  set: DataSet,
): Promise<{ service: string; reference: string; memory: string; pristine: string }> {
  const paths = {
    service: join(dir, `${name}-service.db`),
    reference: join(dir, `${name}-reference.db`),
    memory: join(dir, `${name}-memory.db`),
    pristine: join(dir, `${name}-pristine.db`),
  }
  const started = performance.now()
  await seed(paths.service, set)
  copyFileSync(paths.service, paths.reference)
  copyFileSync(paths.service, paths.memory)
  copyFileSync(paths.service, paths.pristine)
  process.stderr.write(`seeded ${count(set.books)} books in ${Math.round(performance.now() - started)} ms\n`)
  return paths
}

/** The pair of a data set, stopped before the next set's starts, so that it has core 0 to itself. */
async function startSetPair(paths: { service: string; reference: string }, set: DataSet): Promise<ServerPair> {
  const pair = await startPair(paths, pinning.server, (server) => servers.push(server))
  process.stderr.write(`started the service and the reference on ${count(set.books)} books\n`)
  return pair
}

async function getJson(
  server: RunningServer,
  path: string,
): Promise<{ meta?: { total?: number }; links?: Record<string, string> }> {
  const response = await fetch(server.origin + path, { headers: { accept: 'application/vnd.api+json' } })
  if (response.status !== 200) throw new Error(`GET ${path} answered ${response.status}`)
  return (await response.json()) as { meta?: { total?: number }; links?: Record<string, string> }
}

/** The large scenarios' requests, found as a client would: hit counts from meta.total, a cursor from links.next. */
async function largeInputs(service: RunningServer): Promise<LargeInputs> {
  const searches = []
  for (const word of [SEARCH_WORD, AUTHOR_SURNAME]) {
    const path = `/api/v1/books?filter[search]=${word}&page[size]=20`
    searches.push({ path, word, hits: (await getJson(service, path)).meta?.total ?? 0 })
  }
  let path = '/api/v1/books?page[size]=20&page[after]='
  for (let page = 1; page <= CURSOR_PAGES_IN; page++) {
    const next = (await getJson(service, path)).links?.next
    if (next === undefined) throw new Error(`GET ${path} has no links.next`)
    path = next
  }
  return {
    searches,
    cursor: { path, pagesIn: CURSOR_PAGES_IN },
    deepPage: { ...DEEP_PAGE, path: `/api/v1/books?page[number]=${DEEP_PAGE.number}&page[size]=${DEEP_PAGE.size}` },
  }
}

/** Beyond the scenarios' own requests: the edges of the pages (last, past the end, no hits, the end of the cursor). */
function largeComparisons(inputs: LargeInputs): string[] {
  const byId = [{ field: 'id', descending: false }]
  const lastPage = Math.ceil(LARGE.books / DEEP_PAGE.size)
  return [
    ...inputs.searches.map((s) => s.path),
    ...inputs.searches.map((s) => `${s.path}&page[number]=3`),
    '/api/v1/books?filter[search]=zzzzzz&page[size]=20',
    inputs.deepPage.path,
    `/api/v1/books?page[number]=${lastPage}&page[size]=${DEEP_PAGE.size}`,
    `/api/v1/books?page[number]=${lastPage + 1}&page[size]=${DEEP_PAGE.size}`,
    '/api/v1/books?page[size]=20&page[after]=',
    inputs.cursor.path,
    `/api/v1/books?page[size]=20&page[after]=${encodeCursor('books', byId, [LARGE.books - 10])}`,
    `/api/v1/books?page[size]=20&page[after]=${encodeCursor('books', byId, [LARGE.books])}`,
    '/api/v1/authors/1?include=books',
    `/api/v1/authors/${LARGE.authors}`,
    `/api/v1/authors/${LARGE.authors + 1}?include=books`,
  ]
}

async function runAll(
  list: readonly Scenario[],
  pair: { service: RunningServer; reference: RunningServer },
  measureMs: number,
): Promise<ScenarioResult[]> {
  const results: ScenarioResult[] = []
  for (const scenario of list) results.push(await runScenario(scenario, pair.service, pair.reference, measureMs))
  return results
}

/** The backend × workers section of the report. */
function matrixSection(choice: MatrixChoice, matrix: readonly MatrixResult[], measureMs: number): string {
  const workers = choice.workers.join(' and ')
  const cells = matrix.flatMap(({ backend, workers, results }) =>
    results.map((result) => ({ backend, workers, result })),
  )
  return [
    `### Backends and workers at ${count(SEED.books)} books (${measureMs / 1000} s per scenario and server)`,
    '',
    `The service on ${choice.backends.join(' and ')}, at \`--workers\` ${workers}, each beside the reference for its backend (as many processes as the service has workers, sharing the port with SO_REUSEPORT): bench/reference.ts over bun:sqlite, bench/reference-postgres.ts over Bun's SQL client (prepared statements, a pool of 10 as the service's default, one statement per request). Each pair starts on fresh copies of the same ${count(SEED.books)} books (SQLite: the seeded file; PostgreSQL: a database seeded through PostgresStore and its import, then copied with CREATE DATABASE … TEMPLATE on ${shownAdmin()}); the bench checks that the service answers the same on both backends and that each reference answers byte for byte as its service. The page is one of the first 50 (\`page[number]\`, 20 a page), the search \`filter[search]=${MATRIX_SEARCH}\` ranked, first page of 20.`,
    '',
    `Placement: one worker pinned to core 0 as above; several spread over every core, sharing them with the load generator (core 1). PostgreSQL's own processes are not pinned and not in the CPU columns (the server's process tree only).${serviceTakesWorkers ? '' : ' This build of the service has no `--workers` yet: one worker only.'}`,
    '',
    matrixTable(cells),
    ...(choice.workers.includes(1) && choice.workers.includes(2)
      ? ['', '`--workers 2` against one worker, for the same backend and scenario:', '', workersTable(cells)]
      : []),
  ].join('\n')
}

/** The PostgreSQL server as the report names it: host and port, never the user or a password. */
function shownAdmin(): string {
  const url = new URL(postgresAdminUrl)
  url.password = ''
  url.pathname = ''
  return url.host
}

/** The report of a partial run (--durability-only, --matrix-only): its title, the run, its one section. */
function partialReport(title: string, started: number, section: string): string {
  return [`## Benchmark: ${title}`, '', partialRunLine(started), '', section, ''].join('\n')
}

function partialRunLine(started: number): string {
  return `Bun ${Bun.version}, ${cpus().length} CPU cores (${cpus()[0]?.model.trim() ?? 'unknown'}), ${new Date().toISOString().slice(0, 10)}; the whole run took ${Math.round((performance.now() - started) / 1000)} s. Load: ${loadGeneratorNote}; ${ROUNDS} alternating rounds, each after ${WARMUP_MS / 1000} s of warm-up.`
}

/** The writes at each DURABILITY, as a section of the report. */
function durabilitySection(runs: readonly DurabilityResult[], measureMs: number): string {
  const results = runs.flatMap((run) => run.results)
  return [
    `### Writes at each DURABILITY (${measureMs / 1000} s per scenario and server)`,
    '',
    'The service started with `DURABILITY=full`, then `normal`, each beside the reference at the same setting (synchronous=FULL, then NORMAL, in WAL), which commits each write alone; fresh copies of the 10,000 books for each.',
    '',
    table(results),
    '',
    '```',
    durabilityTargets(runs),
    '```',
    '',
    'Server CPU time (user + system) per request, warm-up included:',
    '',
    cpuTable(results),
  ].join('\n')
}

async function main(choice: MatrixChoice, matrixOnly: boolean, durabilityOnly = false): Promise<number> {
  const started = performance.now()
  const small = await seedSet('10k', SEED)
  let report: string
  let all: ScenarioResult[]
  if (durabilityOnly) {
    const runs = await runDurability(small.pristine, dir, MEASURE_MS, (server) => servers.push(server))
    all = runs.flatMap((run) => run.results)
    report = partialReport('writes at each DURABILITY', started, durabilitySection(runs, MEASURE_MS))
  } else if (matrixOnly) {
    const matrix = await runMatrix(choice, small.pristine, dir, LARGE_MEASURE_MS, (server) => servers.push(server))
    all = matrix.flatMap((m) => m.results)
    report = partialReport(
      'the service on each backend and worker count, against references',
      started,
      matrixSection(choice, matrix, LARGE_MEASURE_MS),
    )
  } else {
    const large = await seedSet('100k', LARGE)

    // First, while nothing else runs: one full list per fresh process, for its peak memory.
    const memory: MemoryResult[] | null = await measureListMemory(
      [
        { books: SEED.books, databasePath: small.memory },
        { books: LARGE.books, databasePath: large.memory },
      ],
      (server) => servers.push(server),
    )

    const smallPair = await startSetPair(small, SEED)
    await compareAnswers(smallPair.service, smallPair.reference, SEED, {
      paths: ['/api/v1/books?author_id=1', `/api/v1/books?author_id=${SEED.authors}`, '/api/v1/books'],
      post: true,
    })
    process.stderr.write('the reference answers byte for byte as the service does; measuring\n')
    await warmUp(smallPair.service)
    await warmUp(smallPair.reference)
    const results = await runAll(scenarios, smallPair, MEASURE_MS)
    const smallLines = smallPair.service.loggedLines()
    await stopPair(smallPair)

    const largePair = await startSetPair(large, LARGE)
    const inputs = await largeInputs(largePair.service)
    await compareAnswers(largePair.service, largePair.reference, LARGE, { paths: largeComparisons(inputs) })
    process.stderr.write('the reference answers byte for byte as the service does; measuring\n')
    await warmUp(largePair.service, getBook(LARGE))
    await warmUp(largePair.reference, getBook(LARGE))
    const largeResults = await runAll(largeScenarios(inputs), largePair, LARGE_MEASURE_MS)
    const largeLines = largePair.service.loggedLines()
    await stopPair(largePair)

    const durability = await runDurability(small.pristine, dir, MEASURE_MS, (server) => servers.push(server))
    const matrix = await runMatrix(choice, small.pristine, dir, LARGE_MEASURE_MS, (server) => servers.push(server))
    const matrixLines = matrix.reduce((sum, m) => sum + m.loggedLines, 0)

    all = [...results, ...largeResults, ...durability.flatMap((d) => d.results), ...matrix.flatMap((m) => m.results)]
    report = [
      '## Benchmark: the service against a framework-free reference',
      '',
      describeRun(smallLines + largeLines + matrixLines, (performance.now() - started) / 1000),
      '',
      `### At ${count(SEED.books)} books (${MEASURE_MS / 1000} s per scenario and server)`,
      '',
      table(results),
      '',
      referenceNote(results),
      '',
      '```',
      targets(results),
      '```',
      '',
      'Server CPU time (user + system) per request, warm-up included:',
      '',
      cpuTable(results),
      '',
      `### At ${count(LARGE.books)} books (${LARGE_MEASURE_MS / 1000} s per scenario and server)`,
      '',
      table(largeResults),
      '',
      referenceNote(largeResults),
      'No target covers this table; the cursor replays one fixed cursor, and the search and page scenarios repeat one fixed request.',
      '',
      'Server CPU time (user + system) per request, warm-up included:',
      '',
      cpuTable(largeResults),
      '',
      durabilitySection(durability, MEASURE_MS),
      '',
      matrixSection(choice, matrix, LARGE_MEASURE_MS),
      '',
      '### Memory of one full-list request (`GET /api/v1/books`, streamed)',
      '',
      memory === null
        ? 'Not measured: /proc is not available here.'
        : [
            `Medians of ${MEMORY_RUNS} fresh service processes per data set; growth is peak minus baseline.`,
            '',
            memoryTable(memory),
            ...(memory.some((m) => m.runs.some((r) => !r.peakReset))
              ? ['', 'VmHWM could not be reset here: the peak is the highest VmRSS sampled every 5 ms.']
              : []),
          ].join('\n'),
      '',
    ].join('\n')
  }
  console.log(`\n${report}`)
  // A quick or partial run is for trying the bench out: the published results stay as they were.
  if (!QUICK && !matrixOnly && !durabilityOnly) writeFileSync(join(import.meta.dir, 'results.md'), report)
  const failed = all.filter((r) => r.service.errors > 0 || (r.reference?.errors ?? 0) > 0)
  if (failed.length > 0) {
    console.error(`requests failed in: ${failed.map((r) => `${r.name} c=${r.concurrency}`).join(', ')}`)
    return 1
  }
  return 0
}

/**
 * `bun run bench [options]` runs `main`; `bun run bench -- crash` the crash rounds of
 * bench/crash.ts, and `bun run bench -- hostile` the most expensive requests the limits allow
 * (bench/hostile.ts). Options of `main`:
 *
 * - `--backends sqlite,postgres` (BENCH_BACKENDS): the backends of the backend × workers part;
 * - `--workers 1,2` (BENCH_WORKERS): its worker counts (default 1,2 where the service takes
 *   `--workers`, else 1);
 * - `--load wrk|bun` (BENCH_LOAD): the load generator, wrk where it is installed (bench/load-wrk.ts);
 * - `--quick` (BENCH_QUICK=1): 1 s per scenario instead of 5, results.md left as it is;
 * - `--matrix-only`: only the backend × workers part (seeds 10,000 books; about a minute a pair);
 * - `--durability-only`: only the writes at each DURABILITY, beside the reference at the same setting.
 */
async function chosenBench(): Promise<number> {
  const argv = Bun.argv.slice(2)
  const chosen = argv[0]
  if (chosen === 'crash') return crashBench()
  if (chosen === 'hostile') return runHostile()
  if (chosen !== undefined && !chosen.startsWith('--')) {
    console.error(`bench: no bench "${chosen}"; run it without an argument, or with "crash" or "hostile"`)
    return 2
  }
  const known = new Set(['--backends', '--workers', '--load', '--quick', '--matrix-only', '--durability-only'])
  for (const [i, arg] of argv.entries()) {
    const isValue = argv[i - 1] === '--backends' || argv[i - 1] === '--workers' || argv[i - 1] === '--load'
    if (!isValue && !known.has(arg)) {
      console.error(
        `bench: unknown option "${arg}" (--backends LIST, --workers LIST, --load wrk|bun, --quick, --matrix-only, --durability-only)`,
      )
      return 2
    }
  }
  const choice = matrixChoice(argv, process.env)
  if (typeof choice === 'string') {
    console.error(`bench: ${choice}`)
    return 2
  }
  return main(choice, argv.includes('--matrix-only'), argv.includes('--durability-only'))
}

const code = await chosenBench().catch((error: Error) => {
  console.error(`bench: ${error.message}`)
  return 1
})
await cleanUp()
process.exit(code)
