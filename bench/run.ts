/**
 * `bun run bench`: seeds temporary databases (10,000 books; 100,000; the 10,000 with a stock of
 * books for DELETE), measures the memory of a full-list request on fresh service processes, then
 * issue 10's comparison at 10,000 books: the reads (bench/comparison.ts) and the writes at each
 * DURABILITY (bench/durability.ts), the service beside three baselines, each in its own process
 * (the raw reference, a minimal Elysia app, Express + jsonapi-serializer), loaded over loopback
 * from another process, with the issue's targets; then the service against the raw reference at
 * 100,000 books; then the backend × workers part (bench/matrix.ts): the service on SQLite and on
 * PostgreSQL, one process and `--workers N`, each beside its reference; then POST, PATCH and
 * DELETE on PostgreSQL beside its reference (bench/postgres-writes.ts); last, issue 24's searches,
 * pages and imports at 10,000, 100,000 and 1,000,000 books (bench/million.ts). Prints markdown tables
 * and writes them to bench/results.md. Options (see chosenBench): --backends, --workers, --load,
 * --quick, --compare-only, --durability-only, --matrix-only, --postgres-writes-only. `bun run bench -- crash` runs the
 * crash rounds of bench/crash.ts instead (other named benches: see chosenBench).
 */
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { encodeCursor } from '../src/jsonapi/cursor'
import { removeTempDirs, stopChildren } from '../test/support/process'
import { runBounds } from './bounds'
import { compareAnswers } from './compare'
import { type ReadsResult, runReads } from './comparison'
import { crashBench } from './crash'
import { type DurabilityResult, runDurability } from './durability'
import { runHostile } from './hostile'
import { machineryBench } from './machinery'
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
  measuredSeconds,
  pinning,
  QUICK,
  ROUNDS,
  runScenario,
  WARMUP_MS,
  warmUp,
} from './measure'
import { MEMORY_RUNS, type MemoryResult, measureListMemory } from './memory'
import { millionBench, runMillion } from './million'
import { MILLION_SIZES } from './million-data'
import { millionSection } from './million-report'
import { dropDatabases, postgresAdminUrl } from './postgres-databases'
import {
  type PostgresWritesResult,
  postgresWritesLoad,
  postgresWritesSection,
  runPostgresWrites,
} from './postgres-writes'
import { replicaBench, replicaSection, runReplicaReads } from './replicas'
import {
  comparisonCpuTable,
  comparisonTable,
  comparisonTargets,
  cpuTable,
  matrixTable,
  memoryTable,
  referenceNote,
  type ScenarioResult,
  table,
  workersTable,
} from './report'
import { DELETE_STOCK, getBook, type LargeInputs, largeScenarios, type Scenario, WRITE_SET } from './scenarios'
import { AUTHOR_SURNAME, type DataSet, LARGE, SEARCH_WORD, SEED, seed } from './seed'
import { type RunningServer, type ServerPair, startPair, stopPair, stopServer } from './servers'

const CURSOR_PAGES_IN = 5
const DEEP_PAGE = { number: 2000, size: 20 }

const count = (n: number) => n.toLocaleString('en-US')

const loadGeneratorNote =
  LOAD_GENERATOR === 'wrk'
    ? 'wrk (one thread, bench/wrk-plan.lua), a fresh process per round, over c keep-alive connections to 127.0.0.1'
    : 'bench/load.ts, a separate Bun process per round, Bun fetch over c keep-alive connections to 127.0.0.1'

/** How long each server is measured per scenario, and how. */
function loadLine(measureMs: number): string {
  const rounds = measuredSeconds(measureMs) / ROUNDS
  return `${ROUNDS} alternating rounds of ${rounds} s per scenario and server (each server taking its turn, in order then in reverse), each after ${WARMUP_MS / 1000} s of warm-up`
}

/** The three baselines of issue 10, as the report names them. */
const BASELINES_NOTE = [
  '- Raw reference ("raw"): bench/reference.ts, plain Bun.serve + the prepared bun:sqlite statements of bench/reference-sqlite.ts, no framework, no logging, on a copy of the same file with the same pragmas and the same SQL, each write committed alone (one transaction per request); it has GET one book, POST, PATCH (a rename) and DELETE of a book, the unpaginated lists (every book, the books of an author), offset and cursor pages of books (with full-text search on offset pages) and an author with its books. In the comparison it streams the unpaginated lists in keyset batches of 1,000 rows, each written as one chunk (REFERENCE_LISTS=streamed), as the service does; a second process of it writing them whole ("raw, lists whole") is reported beside it for the lists, and for the writes a third committing them in groups as the service does ("raw, group commit", REFERENCE_COMMITS=grouped: the writes of one turn of the event loop in one IMMEDIATE transaction, each in a savepoint, answered after the COMMIT).',
  '- Minimal Elysia ("Elysia"): bench/reference-elysia.ts, `new Elysia()` with plain .get/.post/.patch/.delete routes (no plugins, no schemas) calling the same handlers over the same statements; lists written whole.',
  '- Express ("Express"): bench/reference-express.mjs, the conventional Node stack run as it is run: on Node 20, Express 5 with express.json and jsonapi-serializer\'s Serializer (the author and collection included for one book, linkage in lists), over better-sqlite3 with the same pragmas and SQL, each write committed alone.',
  "- Checks before measuring: the raw reference (both list modes, both commit modes) and Elysia answer every compared request (reads; a create, renames, deletes) with the service's status, content type, Location and body bytes; Express's documents differ, so it is held to the same status, Location and number of records (data and included).",
]

function describeRun(loggedLines: number, seconds: number): string {
  const cores = cpus()
  const data = (set: DataSet) =>
    `${set.authors} authors, ${set.collections} book collections, ${count(set.books)} books (${count(set.books / set.authors)} an author)`
  return [
    `Bun ${Bun.version}, ${cores.length} CPU cores (${cores[0]?.model.trim() ?? 'unknown'}), ${new Date().toISOString().slice(0, 10)}; the whole run took ${Math.round(seconds)} s.`,
    '',
    `- Data: each set seeded through SqliteStore (writes in chunks of 1,000 that share a group commit) into a temporary SQLite file (WAL, synchronous=FULL, foreign_keys=ON): ${data(SEED)}, titled "Book <n>: a bench title"; the same with ${count(DELETE_STOCK)} more books (ids ${count(SEED.books + 1)} on) for the write runs, the stock DELETE deletes from, one book a request; and ${data(LARGE)}, titled "<word> of <word>" from 400 words (a word is in about 500 titles), every tenth author with a searchable name.`,
    `- Service: \`bun src/cli.ts\` with LOG_LEVEL=info, so it writes one JSON log line per request, as operators run it; its stdout goes to a file the bench counts and removes (${count(loggedLines)} lines this run).`,
    ...BASELINES_NOTE,
    `- Load: ${loadGeneratorNote}; ${ROUNDS} alternating rounds per scenario and server (each server taking its turn, in order then in reverse), each after ${WARMUP_MS / 1000} s of warm-up: rounds of ${measuredSeconds(MEASURE_MS) / ROUNDS} s at ${count(SEED.books)} books and of ${measuredSeconds(LARGE_MEASURE_MS) / ROUNDS} s at ${count(LARGE.books)} books${LOAD_GENERATOR === 'wrk' ? ` (${MEASURE_MS / 1000} s and ${LARGE_MEASURE_MS / 1000} s asked of each server, split in rounds; wrk runs whole seconds)` : ''}; latency is from sending to the last body byte.`,
    `- Memory: for each data set, ${MEMORY_RUNS} fresh service processes (started before any load, one request each); VmRSS from /proc/<pid>/status once it is up and idle with its read workers started (a ranked search, which only they answer, checked in /metrics), then VmHWM reset to it (write "5" to /proc/<pid>/clear_refs), one unpaginated GET /api/v1/books whose body the bench reads to the end counting bytes, and VmHWM read as the peak.`,
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

/** The report of a partial run (--compare-only, --durability-only, --matrix-only): its title, the run, its sections. */
function partialReport(
  title: string,
  started: number,
  sections: readonly string[],
  baselines: boolean,
  load = loadLine(MEASURE_MS),
): string {
  return [
    `## Benchmark: ${title}`,
    '',
    partialRunLine(started, load),
    ...(baselines ? ['', ...BASELINES_NOTE] : []),
    '',
    ...sections.flatMap((section) => [section, '']),
  ].join('\n')
}

function partialRunLine(started: number, load: string): string {
  return `Bun ${Bun.version}, ${cpus().length} CPU cores (${cpus()[0]?.model.trim() ?? 'unknown'}), ${new Date().toISOString().slice(0, 10)}; the whole run took ${Math.round((performance.now() - started) / 1000)} s. Load: ${loadGeneratorNote}; ${load}. Placement: ${pinning.note}.`
}

const secondsOf = (measureMs: number) => `${measuredSeconds(measureMs)} s per scenario and server`

/** The reads of the comparison, as a section of the report. */
function readsSection(reads: ReadsResult, measureMs: number): string {
  return [
    `### At ${count(SEED.books)} books: reads beside three baselines (${secondsOf(measureMs)})`,
    '',
    'Each server on its own copy of the seeded file, all started together and pinned to core 0, measured in turn.',
    '',
    comparisonTable(reads.results),
    '',
    'Server CPU time (user + system) per request, warm-up included:',
    '',
    comparisonCpuTable(reads.results),
  ].join('\n')
}

/** The writes at each DURABILITY, as a section of the report. */
function durabilitySection(runs: readonly DurabilityResult[], measureMs: number): string {
  const results = runs.flatMap((run) => run.results)
  return [
    `### Writes at each DURABILITY beside three baselines (${secondsOf(measureMs)})`,
    '',
    `The service started with \`DURABILITY=full\`, then \`normal\`, each beside the raw reference, Elysia and Express at the same setting (synchronous=FULL, then NORMAL, in WAL; REFERENCE_DURABILITY), which commit each write alone, and the raw reference again committing them in groups as the service does; fresh copies of the write runs' file for each (the ${count(SEED.books)} books and ${count(DELETE_STOCK)} more that DELETE deletes, a different one each request, ids ${count(SEED.books + 1)} on). PATCH renames one of the ${count(SEED.books)} books, drawn at random.`,
    '',
    comparisonTable(results),
    '',
    'Server CPU time (user + system) per request, warm-up included:',
    '',
    comparisonCpuTable(results),
  ].join('\n')
}

/** Issue 10's targets over what this run measured. */
function targetsSection(results: readonly ScenarioResult[], memory: MemoryResult | undefined): string {
  return ["### Issue 10's targets", '', '```', comparisonTargets(results, memory), '```'].join('\n')
}

/** The 100,000-book list's memory runs, for the memory target. */
const largeMemory = (memory: readonly MemoryResult[] | null) => memory?.find((m) => m.books === LARGE.books)

function memorySection(memory: readonly MemoryResult[] | null): string {
  return [
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
  ].join('\n')
}

type Mode = 'full' | 'compare' | 'durability' | 'matrix' | 'postgres-writes'

async function main(choice: MatrixChoice, mode: Mode): Promise<number> {
  const started = performance.now()
  let report: string
  let all: ScenarioResult[]
  if (mode === 'postgres-writes') {
    const writes = await runPostgresWrites((server) => servers.push(server))
    all = [...writes.results]
    report = partialReport(
      'writes on PostgreSQL beside the raw reference',
      started,
      [postgresWritesSection(writes)],
      false,
      postgresWritesLoad(WARMUP_MS),
    )
  } else if (mode === 'durability') {
    const writes = await seedSet('writes', WRITE_SET)
    const runs = await runDurability(writes.pristine, dir, MEASURE_MS, (server) => servers.push(server))
    all = runs.flatMap((run) => run.results)
    report = partialReport(
      'writes at each DURABILITY, beside three baselines',
      started,
      [durabilitySection(runs, MEASURE_MS), targetsSection(all, undefined)],
      true,
    )
  } else if (mode === 'matrix') {
    const small = await seedSet('10k', SEED)
    const matrix = await runMatrix(choice, small.pristine, dir, LARGE_MEASURE_MS, (server) => servers.push(server))
    const replicas = choice.backends.includes('postgres')
      ? await runReplicaReads(LARGE_MEASURE_MS, (server) => servers.push(server))
      : undefined
    all = [...matrix.flatMap((m) => m.results), ...(replicas?.results ?? [])]
    report = partialReport(
      'the service on each backend and worker count, against references',
      started,
      [
        matrixSection(choice, matrix, LARGE_MEASURE_MS),
        ...(replicas === undefined ? [] : [replicaSection(replicas, LARGE_MEASURE_MS)]),
      ],
      false,
    )
  } else if (mode === 'compare') {
    const small = await seedSet('10k', SEED)
    const writes = await seedSet('writes', WRITE_SET)
    const large = await seedSet('100k', LARGE)
    // The memory target's list first, while nothing else runs.
    const memory = await measureListMemory([{ books: LARGE.books, databasePath: large.memory }], (server) =>
      servers.push(server),
    )
    const reads = await runReads(small.pristine, dir, MEASURE_MS, (server) => servers.push(server))
    const runs = await runDurability(writes.pristine, dir, MEASURE_MS, (server) => servers.push(server))
    all = [...reads.results, ...runs.flatMap((run) => run.results)]
    report = partialReport(
      `the service beside three baselines at ${count(SEED.books)} books`,
      started,
      [
        readsSection(reads, MEASURE_MS),
        durabilitySection(runs, MEASURE_MS),
        targetsSection(all, largeMemory(memory)),
        memorySection(memory),
      ],
      true,
    )
  } else {
    const small = await seedSet('10k', SEED)
    const writes = await seedSet('writes', WRITE_SET)
    const large = await seedSet('100k', LARGE)

    // First, while nothing else runs: one full list per fresh process, for its peak memory.
    const memory: MemoryResult[] | null = await measureListMemory(
      [
        { books: SEED.books, databasePath: small.memory },
        { books: LARGE.books, databasePath: large.memory },
      ],
      (server) => servers.push(server),
    )

    const reads = await runReads(small.pristine, dir, MEASURE_MS, (server) => servers.push(server))

    const largePair = await startSetPair(large, LARGE)
    const inputs = await largeInputs(largePair.service)
    await compareAnswers(largePair.service, largePair.reference, LARGE, { paths: largeComparisons(inputs) })
    process.stderr.write('the reference answers byte for byte as the service does; measuring\n')
    await warmUp(largePair.service, getBook(LARGE))
    await warmUp(largePair.reference, getBook(LARGE))
    const largeResults = await runAll(largeScenarios(inputs), largePair, LARGE_MEASURE_MS)
    const largeLines = largePair.service.loggedLines()
    await stopPair(largePair)

    const durability = await runDurability(writes.pristine, dir, MEASURE_MS, (server) => servers.push(server))
    const matrix = await runMatrix(choice, small.pristine, dir, LARGE_MEASURE_MS, (server) => servers.push(server))
    const matrixLines = matrix.reduce((sum, m) => sum + m.loggedLines, 0)
    const postgresWrites: PostgresWritesResult | null = choice.backends.includes('postgres')
      ? await runPostgresWrites((server) => servers.push(server))
      : null
    // Reads through a read replica, with PostgreSQL: on a primary and a standby of the bench's own.
    const replicas = choice.backends.includes('postgres')
      ? await runReplicaReads(LARGE_MEASURE_MS, (server) => servers.push(server))
      : undefined
    // Last: issue 24's million books, on the kept data sets (made the first time, minutes).
    const million = await runMillion(choice.backends, MILLION_SIZES, dir, (server) => servers.push(server))

    const compared = [...reads.results, ...durability.flatMap((d) => d.results)]
    all = [
      ...compared,
      ...largeResults,
      ...matrix.flatMap((m) => m.results),
      ...(postgresWrites?.results ?? []),
      ...(replicas?.results ?? []),
    ]
    report = [
      '## Benchmark: the service beside three baselines (raw Bun + SQLite, minimal Elysia, Express)',
      '',
      describeRun(
        reads.loggedLines + largeLines + matrixLines + (replicas?.loggedLines ?? 0),
        (performance.now() - started) / 1000,
      ),
      '',
      readsSection(reads, MEASURE_MS),
      '',
      durabilitySection(durability, MEASURE_MS),
      '',
      targetsSection(compared, largeMemory(memory)),
      '',
      `### At ${count(LARGE.books)} books, beside the raw reference (${secondsOf(LARGE_MEASURE_MS)})`,
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
      matrixSection(choice, matrix, LARGE_MEASURE_MS),
      '',
      ...(postgresWrites ? [postgresWritesSection(postgresWrites), ''] : []),
      ...(replicas === undefined ? [] : [replicaSection(replicas, LARGE_MEASURE_MS), '']),
      memorySection(memory),
      '',
      millionSection(million),
      '',
    ].join('\n')
  }
  console.log(`\n${report}`)
  // A quick or partial run is for trying the bench out: the published results stay as they were.
  if (!QUICK && mode === 'full') writeFileSync(join(import.meta.dir, 'results.md'), report)
  const failed = all.filter(
    (r) =>
      r.service.errors > 0 ||
      (r.reference?.errors ?? 0) > 0 ||
      Object.values(r.baselines ?? {}).some((m) => m.load.errors > 0),
  )
  if (failed.length > 0) {
    console.error(`requests failed in: ${failed.map((r) => `${r.name} c=${r.concurrency}`).join(', ')}`)
    return 1
  }
  return 0
}

/**
 * `bun run bench [options]` runs `main`; `bun run bench -- crash` the crash rounds of
 * bench/crash.ts, `bun run bench -- hostile` the most expensive requests the limits allow
 * (bench/hostile.ts), `bun run bench -- bounds` many clients at once and the largest writes
 * (bench/bounds.ts), `bun run bench -- replicas` the reads through a PostgreSQL read replica
 * alone (bench/replicas.ts, also part of the full run with PostgreSQL), and `bun run bench --
 * million [--sizes 10k,100k,1m] [--backends sqlite,postgres]` issue 24's searches, pages and imports
 * at 10,000 to 1,000,000 books on kept data sets alone (bench/million.ts, also the full run's last
 * part, on the backends of `--backends`). Options of `main`:
 *
 * - `--backends sqlite,postgres` (BENCH_BACKENDS): the backends of the backend × workers part;
 * - `--workers 1,2` (BENCH_WORKERS): its worker counts (default 1,2 where the service takes
 *   `--workers`, else 1);
 * - `--load wrk|bun` (BENCH_LOAD): the load generator, wrk where it is installed (bench/load-wrk.ts);
 * - `--quick` (BENCH_QUICK=1): 1 s per scenario instead of 5, results.md left as it is;
 * - `--compare-only`: only issue 10's comparison at 10,000 books (reads, writes at each DURABILITY,
 *   beside the three baselines) and the memory of the 100,000-book list, with the targets;
 * - `--matrix-only`: only the backend × workers part (seeds 10,000 books; about a minute a pair),
 *   and with PostgreSQL the reads through a replica (bench/replicas.ts);
 * - `--durability-only`: only the writes at each DURABILITY, beside the baselines at the same setting;
 * - `--postgres-writes-only`: only POST, PATCH and DELETE on PostgreSQL beside its reference.
 */
async function chosenBench(): Promise<number> {
  const argv = Bun.argv.slice(2)
  const chosen = argv[0]
  if (chosen === 'crash') return crashBench()
  if (chosen === 'hostile') return runHostile()
  if (chosen === 'bounds') return runBounds()
  if (chosen === 'replicas') return replicaBench()
  if (chosen === 'million') return millionBench(argv.slice(1), dir, (server) => servers.push(server))
  if (chosen === 'machinery') return machineryBench(argv.slice(1), dir, (server) => servers.push(server))
  if (chosen !== undefined && !chosen.startsWith('--')) {
    console.error(
      `bench: no bench "${chosen}"; run it without an argument, or with "crash", "hostile", "bounds", "replicas" or "million" or "machinery"`,
    )
    return 2
  }
  const only = ['--compare-only', '--matrix-only', '--durability-only', '--postgres-writes-only']
  const known = new Set(['--backends', '--workers', '--load', '--quick', ...only])
  for (const [i, arg] of argv.entries()) {
    const isValue = argv[i - 1] === '--backends' || argv[i - 1] === '--workers' || argv[i - 1] === '--load'
    if (!isValue && !known.has(arg)) {
      console.error(
        `bench: unknown option "${arg}" (--backends LIST, --workers LIST, --load wrk|bun, --quick, --compare-only, --matrix-only, --durability-only, --postgres-writes-only)`,
      )
      return 2
    }
  }
  const choice = matrixChoice(argv, process.env)
  if (typeof choice === 'string') {
    console.error(`bench: ${choice}`)
    return 2
  }
  const chosenOnly = only.filter((flag) => argv.includes(flag))
  if (chosenOnly.length > 1) {
    console.error(`bench: ${chosenOnly.join(' and ')} exclude each other`)
    return 2
  }
  const mode: Mode =
    chosenOnly[0] === '--compare-only'
      ? 'compare'
      : chosenOnly[0] === '--matrix-only'
        ? 'matrix'
        : chosenOnly[0] === '--durability-only'
          ? 'durability'
          : chosenOnly[0] === '--postgres-writes-only'
            ? 'postgres-writes'
            : 'full'
  return main(choice, mode)
}

const code = await chosenBench().catch((error: Error) => {
  console.error(`bench: ${error.message}`)
  return 1
})
await cleanUp()
process.exit(code)
