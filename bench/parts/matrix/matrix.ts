/**
 * The backend × workers part of `bun run bench`: the service on SQLite and on PostgreSQL, as one
 * process and as `--workers N`, each next to the matching reference (bench/references/raw.ts or
 * bench/references/raw-postgres.ts, as many processes sharing the port), on the same 10,000 books:
 * GET one book, a page of 20, a search page and POST, at 32 connections (the workers target).
 */
import { copyFileSync } from 'node:fs'
import { join } from 'node:path'
import { helpText } from '../../../src/config'
import { createDatabase } from '../../data/postgres-databases'
import { SEED } from '../../data/seed'
import { seedPostgres } from '../../data/seed-postgres'
import { compareAnswers } from '../../harness/compare'
import { pinning, runScenario, warmUp } from '../../harness/measure'
import { getBook, postBook } from '../../harness/requests'
import { type Scenario, type ScenarioResult, WORKERS_CONCURRENCY } from '../../harness/scenario'
import {
  type RunningServer,
  startServer,
  stopServer,
  UNCAPPED_LONG_ANSWERS,
  waitUntilReady,
} from '../../harness/servers'

export const BACKENDS = ['sqlite', 'postgres'] as const
export type Backend = (typeof BACKENDS)[number]

export interface MatrixChoice {
  readonly backends: readonly Backend[]
  readonly workers: readonly number[]
}

/**
 * Whether this build of the service takes `--workers` (`catalogue --workers N`), as its help lists
 * it: the default worker counts depend on it. Asked for explicitly, `--workers 2` is tried anyway.
 */
export const serviceTakesWorkers = /^\s*--workers\b/m.test(helpText)

/**
 * `--backends sqlite,postgres` (BENCH_BACKENDS) and `--workers 1,2` (BENCH_WORKERS); the command
 * line wins. By default both backends, and workers 1 and 2 where the service takes `--workers`
 * (1 alone where it does not yet). Returns an error sentence for anything else.
 */
export function matrixChoice(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): MatrixChoice | string {
  const option = (flag: string, variable: string) => {
    const at = argv.indexOf(flag)
    return at === -1 ? env[variable] : argv[at + 1]
  }
  const backendsText = option('--backends', 'BENCH_BACKENDS') ?? BACKENDS.join(',')
  const backends = backendsText.split(',').filter((b) => b !== '')
  const unknown = backends.find((b) => !(BACKENDS as readonly string[]).includes(b))
  if (unknown !== undefined || backends.length === 0) {
    return `--backends takes a list of ${BACKENDS.join(', ')} (got "${backendsText}")`
  }
  const workersText = option('--workers', 'BENCH_WORKERS') ?? (serviceTakesWorkers ? '1,2' : '1')
  const workers = workersText.split(',').map(Number)
  if (workers.length === 0 || workers.some((n) => !Number.isInteger(n) || n < 1 || n > 64)) {
    return `--workers takes a list of worker counts such as 1,2 (got "${workersText}")`
  }
  return { backends: backends as Backend[], workers: [...new Set(workers)] }
}

/** The word the search page looks for: 209 books, 111 titles ("Book 42", "Book 420"…) and author 42's 100 books, 2 of them both. */
export const MATRIX_SEARCH = '42'
/** Pages of 20 drawn from the first 50 (offsets up to 980), so the page cost stays that of a list's head. */
const LIST_PAGES = 50
const listPage = (n: number | '{n}') => `/api/v1/books?page[number]=${n}&page[size]=20`
const searchPage = (n: number) => `/api/v1/books?filter[search]=${MATRIX_SEARCH}&page[number]=${n}&page[size]=20`

/** The four requests of the matrix, each compared with the reference; POST last, so the pages see the seeded books. */
export const matrixScenarios: readonly Scenario[] = [
  ['GET one book', getBook(SEED)],
  [
    `page of 20 (one of the first ${LIST_PAGES})`,
    { method: 'GET', path: listPage('{n}'), randomMax: LIST_PAGES, expectStatus: 200 },
  ],
  [`search "${MATRIX_SEARCH}", page 1 of 20`, { method: 'GET', path: searchPage(1), randomMax: 1, expectStatus: 200 }],
  ['POST a book', postBook],
].map(
  ([name, plan]): Scenario => ({
    name: name as string,
    concurrency: WORKERS_CONCURRENCY,
    withReference: true,
    plan: plan as Scenario['plan'],
  }),
)

/** The data of one backend, as seeded: copied afresh for each service and each reference. */
type Pristine =
  | { readonly backend: 'sqlite'; readonly path: string }
  | { readonly backend: 'postgres'; readonly template: string }

export interface MatrixResult {
  readonly backend: Backend
  readonly workers: number
  readonly results: readonly ScenarioResult[]
  /** Lines the service logged (one per request). */
  readonly loggedLines: number
}

/** Where a service and its reference read and write: fresh copies of the seeded data. */
async function freshCopies(
  pristine: Pristine,
  dir: string,
  label: string,
): Promise<{ serviceEnv: Record<string, string>; referenceEnv: Record<string, string>; script: string }> {
  if (pristine.backend === 'sqlite') {
    const service = join(dir, `${label}-service.db`)
    const reference = join(dir, `${label}-reference.db`)
    copyFileSync(pristine.path, service)
    copyFileSync(pristine.path, reference)
    return {
      serviceEnv: { DATABASE_URL: `sqlite://${service}` },
      referenceEnv: { REFERENCE_DB: reference },
      script: 'bench/references/raw.ts',
    }
  }
  const service = await createDatabase(pristine.template)
  const reference = await createDatabase(pristine.template)
  return {
    serviceEnv: { DATABASE_URL: service.url },
    referenceEnv: { REFERENCE_DATABASE_URL: reference.url },
    script: 'bench/references/raw-postgres.ts',
  }
}

/** Answers of the first backend's service, to check that the next backend holds the same records. */
const crossBackend = new Map<string, string>()
const crossBackendPaths = [
  '/api/v1/books/1',
  '/api/v1/books/10',
  `/api/v1/books/${SEED.books}`,
  listPage(1),
  listPage(LIST_PAGES),
]

async function sameDataAcrossBackends(service: RunningServer, backend: Backend): Promise<void> {
  for (const path of crossBackendPaths) {
    const body = await (await fetch(service.origin + path, { headers: { accept: 'application/vnd.api+json' } })).text()
    const earlier = crossBackend.get(path)
    if (earlier === undefined) crossBackend.set(path, body)
    else if (earlier !== body)
      throw new Error(`GET ${path}: the service on ${backend} answers otherwise than on the first backend`)
  }
}

async function runOne(
  pristine: Pristine,
  workers: number,
  dir: string,
  measureMs: number,
  track: (server: RunningServer) => void,
): Promise<MatrixResult> {
  const label = `${pristine.backend}-w${workers}`
  const { serviceEnv, referenceEnv, script } = await freshCopies(pristine, dir, label)
  // One process pinned to core 0 as in the rest of the bench; several spread over every core.
  const placement = workers === 1 ? pinning.server : pinning.spread
  const service = startServer(
    `service (${label})`,
    'src/cli.ts',
    { HOST: '127.0.0.1', LOG_LEVEL: 'info', ...UNCAPPED_LONG_ANSWERS, ...serviceEnv },
    placement,
    workers === 1 ? [] : ['--workers', String(workers)],
  )
  track(service)
  const reference = startServer(
    `reference (${label})`,
    script,
    { REFERENCE_WORKERS: String(workers), ...referenceEnv },
    placement,
  )
  track(reference)
  try {
    await Promise.all([
      waitUntilReady(service, '/api/v1/books/1').catch((error: Error) => {
        const hint = workers > 1 ? ' (does this build take `catalogue --workers N`?)' : ''
        throw new Error(`${error.message}${hint}`)
      }),
      waitUntilReady(reference, '/api/v1/books/1'),
    ])
    // The other worker processes may still be starting: give them a moment before comparing.
    if (workers > 1) await Bun.sleep(1000)
    await sameDataAcrossBackends(service, pristine.backend)
    await compareAnswers(service, reference, SEED, {
      paths: [listPage(1), listPage(LIST_PAGES), searchPage(1), searchPage(2), searchPage(20)],
      post: true,
    })
    process.stderr.write(`${label}: the reference answers byte for byte as the service does; measuring\n`)
    await warmUp(service)
    await warmUp(reference)
    const results: ScenarioResult[] = []
    for (const scenario of matrixScenarios) results.push(await runScenario(scenario, service, reference, measureMs))
    return { backend: pristine.backend, workers, results, loggedLines: service.loggedLines() }
  } finally {
    await Promise.all([stopServer(service), stopServer(reference)])
  }
}

/**
 * Runs every chosen backend at every chosen worker count. `sqliteSeed` is a SQLite file of the
 * 10,000 books as seeded; PostgreSQL gets the same books through its store (bench/data/seed-postgres.ts).
 */
export async function runMatrix(
  choice: MatrixChoice,
  sqliteSeed: string,
  dir: string,
  measureMs: number,
  track: (server: RunningServer) => void,
): Promise<MatrixResult[]> {
  const all: MatrixResult[] = []
  for (const backend of choice.backends) {
    let pristine: Pristine
    if (backend === 'sqlite') pristine = { backend, path: sqliteSeed }
    else {
      const started = performance.now()
      const template = await createDatabase()
      await seedPostgres(template.url, SEED)
      process.stderr.write(
        `seeded ${SEED.books} books into PostgreSQL in ${Math.round(performance.now() - started)} ms\n`,
      )
      pristine = { backend, template: template.name }
    }
    for (const workers of choice.workers) all.push(await runOne(pristine, workers, dir, measureMs, track))
  }
  return all
}
