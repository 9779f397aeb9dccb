/**
 * PostgreSQL's writes beside the raw reference (issue 23): POST, PATCH (a rename) and DELETE of a
 * book through the service on PostgreSQL, and through bench/references/raw-postgres.ts (Bun.serve and
 * Bun's SQL client, one statement a request, ids from the same identity columns, a pool of 10 as
 * the service's default), each on its own copy of the same database, in alternating rounds, with
 * the targets: each write at least 0.8 of the reference, and POST at least 3 times the
 * 573 a second measured before (one worker, LOG_LEVEL=warn, 10,000 books, wrk at c=32). The
 * service runs at LOG_LEVEL=warn here, as the issue measured it.
 */
import { SQL } from 'bun'
import { createDatabase } from '../data/postgres-databases'
import { type DataSet, SEED } from '../data/seed'
import { seedPostgres } from '../data/seed-postgres'
import { compareWrites } from '../harness/compare'
import { pinning, QUICK, runScenario, warmUp } from '../harness/measure'
import { deleteBook, patchBook, postBook } from '../harness/requests'
import { type Scenario, type ScenarioResult, WORKERS_CONCURRENCY } from '../harness/scenario'
import { type RunningServer, startServer, stopServer, waitUntilReady } from '../harness/servers'
import { cpuTable, table } from '../harness/tables'

/** Each write at least this share of the reference's req/s. */
export const POSTGRES_WRITE_RATIO = 0.8
/** POST a book, req/s before issue 23 on this machine (one worker, LOG_LEVEL=warn, c=32)... */
export const POSTGRES_POST_BEFORE = 573
/** ...and at least this many times it after. */
export const POSTGRES_POST_MULTIPLE = 3

/**
 * Rounds per scenario and server, 2 s each: on a 2-core machine shared with other work, the
 * database's processes and the service's compete for the same cores, and a round's rate moves by
 * half from one round to the next; six short turns in alternation put a slow spell on both.
 */
export const POSTGRES_WRITE_ROUNDS = QUICK ? 2 : 6
export const POSTGRES_WRITE_MEASURE_MS = POSTGRES_WRITE_ROUNDS * (QUICK ? 1000 : 2000)

/**
 * Books seeded after the 10,000 (ids 10,001 on), for DELETE to delete, one a request: a server's
 * DELETE runs take 18 s (6 rounds of 1 s of warm-up and 2 s), enough for 13,800 deletes a second,
 * about 1.5 times the fastest measured here (the reference's 9,400 on a quiet machine). Seeding
 * them through the store's import costs about a minute.
 */
export const POSTGRES_DELETE_STOCK = 250_000
export const POSTGRES_WRITE_SET: DataSet = { ...SEED, books: SEED.books + POSTGRES_DELETE_STOCK }

export const postgresWriteScenarios: readonly Scenario[] = [
  ['POST a book', postBook],
  ['PATCH a book (rename)', patchBook],
  ['DELETE a book', deleteBook, POSTGRES_DELETE_STOCK],
].map(([name, plan, sequenceCount]) => ({
  name: `${name} on PostgreSQL`,
  concurrency: WORKERS_CONCURRENCY,
  withReference: true,
  ...(sequenceCount === undefined ? {} : { sequenceCount: sequenceCount as number }),
  plan: plan as Scenario['plan'],
}))

export interface PostgresWritesResult {
  readonly results: readonly ScenarioResult[]
  /** Seconds the seeding took (the template database, copied for each server). */
  readonly seededSeconds: number
}

/**
 * Seeds POSTGRES_WRITE_SET into a template database through PostgresStore (ids as SQLite's seed
 * gives them), copies it for the service and for the reference, checks that both answer the
 * writes byte for byte the same, and measures each scenario on both in alternating rounds.
 */
export async function runPostgresWrites(track: (server: RunningServer) => void): Promise<PostgresWritesResult> {
  const started = performance.now()
  const template = await createDatabase()
  await seedPostgres(template.url, POSTGRES_WRITE_SET)
  // The copies start with their statistics and visibility map made, so that no autovacuum of the
  // 110,000 new rows runs during one server's rounds and not the other's.
  const admin = new SQL(template.url, { max: 1 })
  try {
    await admin.unsafe('VACUUM ANALYZE')
  } finally {
    await admin.close()
  }
  const seededSeconds = (performance.now() - started) / 1000
  process.stderr.write(`seeded ${POSTGRES_WRITE_SET.books} books into PostgreSQL in ${Math.round(seededSeconds)} s\n`)
  const [serviceDatabase, referenceDatabase] = [
    await createDatabase(template.name),
    await createDatabase(template.name),
  ]
  const service = startServer(
    'service',
    'src/cli.ts',
    { HOST: '127.0.0.1', LOG_LEVEL: 'warn', DATABASE_URL: serviceDatabase.url },
    pinning.server,
  )
  track(service)
  const reference = startServer(
    'reference',
    'bench/references/raw-postgres.ts',
    { REFERENCE_DATABASE_URL: referenceDatabase.url },
    pinning.server,
  )
  track(reference)
  try {
    await Promise.all([waitUntilReady(service, '/api/v1/books/1'), waitUntilReady(reference, '/api/v1/books/1')])
    await compareWrites(service, [{ server: reference, check: 'bytes' }], POSTGRES_WRITE_SET)
    process.stderr.write('PostgreSQL writes: the reference answers them byte for byte as the service does; measuring\n')
    await warmUp(service)
    await warmUp(reference)
    const results: ScenarioResult[] = []
    for (const scenario of postgresWriteScenarios) {
      results.push(
        await runScenario(scenario, service, reference, POSTGRES_WRITE_MEASURE_MS, {}, POSTGRES_WRITE_ROUNDS),
      )
    }
    return { results, seededSeconds }
  } finally {
    await Promise.all([stopServer(service), stopServer(reference)])
  }
}

/** How each server is measured in this part, for the report's first line. */
export function postgresWritesLoad(warmupMs: number): string {
  const round = POSTGRES_WRITE_MEASURE_MS / POSTGRES_WRITE_ROUNDS / 1000
  return `${POSTGRES_WRITE_ROUNDS} alternating rounds of ${round} s per scenario and server (each server taking its turn, in order then in reverse), each after ${warmupMs / 1000} s of warm-up`
}

/** The section of the report: the table, the CPU each server spent, and the targets. */
export function postgresWritesSection(run: PostgresWritesResult): string {
  const { results } = run
  const round = POSTGRES_WRITE_MEASURE_MS / POSTGRES_WRITE_ROUNDS / 1000
  return [
    `### Writes on PostgreSQL beside the raw reference (${POSTGRES_WRITE_ROUNDS} alternating rounds of ${round} s per scenario and server)`,
    '',
    `The service (one process, LOG_LEVEL=warn, as issue 23 measured it; a pool of 10) and bench/references/raw-postgres.ts (Bun.serve and Bun's SQL client, one statement a request, a pool of 10), each pinned to core 0 on its own copy of a database of ${SEED.books.toLocaleString('en-US')} books and ${POSTGRES_DELETE_STOCK.toLocaleString('en-US')} more for DELETE to delete (ids ${(SEED.books + 1).toLocaleString('en-US')} on, a different one each request), seeded through PostgresStore; PostgreSQL's own processes unpinned. POST creates a book of a random author, PATCH renames a random one of the ${SEED.books.toLocaleString('en-US')} books. Both take ids from the tables' identity columns.`,
    '',
    table(results),
    '',
    'Server CPU time (user + system) per request, warm-up included:',
    '',
    cpuTable(results),
    '',
    '```',
    postgresWriteTargets(results),
    '```',
  ].join('\n')
}

/** Issue 23's targets over the results, a PASS/MISS line each. */
export function postgresWriteTargets(results: readonly ScenarioResult[]): string {
  const lines = [
    `targets (issue 23): each write >= ${POSTGRES_WRITE_RATIO} of the reference; POST >= ${POSTGRES_POST_MULTIPLE}x ${POSTGRES_POST_BEFORE} req/s`,
  ]
  for (const result of results) {
    const ratio = result.reference ? result.service.perSecond / result.reference.perSecond : undefined
    const ok = ratio !== undefined && ratio >= POSTGRES_WRITE_RATIO
    lines.push(`  ${ok ? 'PASS' : 'MISS'}  ${ratio?.toFixed(2) ?? '—'} of the reference on ${result.name}`)
  }
  const post = results.find((result) => result.name.startsWith('POST'))
  if (post) {
    const wanted = POSTGRES_POST_MULTIPLE * POSTGRES_POST_BEFORE
    const rate = post.service.perSecond
    lines.push(
      `  ${rate >= wanted ? 'PASS' : 'MISS'}  ${Math.round(rate)} req/s (${(rate / POSTGRES_POST_BEFORE).toFixed(2)}x ${POSTGRES_POST_BEFORE}; >= ${wanted}) on ${post.name}`,
    )
  }
  return lines.join('\n')
}
