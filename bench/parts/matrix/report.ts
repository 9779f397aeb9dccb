/** The backend × workers part's tables, its `--workers 2` targets, and its section of the report. */

import { postgresAdminUrl } from '../../data/postgres-databases'
import { SEED } from '../../data/seed'
import { type ScenarioResult, WORKERS_CONCURRENCY } from '../../harness/scenario'
import { CLIENT_BOUND_CORES, clientBound, cpu, markdownTable, p99Of, rate, rateOf, ratioOf } from '../../harness/tables'
import { MATRIX_SEARCH, type MatrixChoice, type MatrixResult, serviceTakesWorkers } from './matrix'

/** `--workers 2` against one worker: reads at least this many times as many... */
export const WORKERS_READ_GAIN = 1.6
/** ...writes at least as many... */
export const WORKERS_WRITE_GAIN = 1
/** ...and a p99 under this, at WORKERS_CONCURRENCY connections. */
export const WORKERS_P99_MS = 20

/** One measured cell of the backend × workers part: a scenario on one backend at one worker count. */
export interface MatrixCell {
  readonly backend: string
  readonly workers: number
  readonly result: ScenarioResult
}

/**
 * The backend × workers table: a row per scenario, backend and worker count, the scenarios
 * grouped so that both backends and every worker count of a request sit one under the other.
 */
export function matrixTable(cells: readonly MatrixCell[]): string {
  const header = [
    'scenario',
    'backend',
    'workers',
    'service req/s',
    'reference req/s',
    'ratio',
    'service p99 (ms)',
    'reference p99 (ms)',
    'service CPU µs/req',
    'reference CPU µs/req',
  ]
  const names = [...new Set(cells.map((cell) => cell.result.name))]
  const rows = names.flatMap((name) =>
    cells
      .filter((cell) => cell.result.name === name)
      .map(({ backend, workers, result }) => {
        const ratio = ratioOf(result)
        return [
          `${name} (c=${result.concurrency})`,
          backend,
          String(workers),
          rateOf(result.service),
          result.reference ? rateOf(result.reference) : '—',
          ratio === undefined || !Number.isFinite(ratio) ? '—' : ratio.toFixed(2),
          p99Of(result.service),
          result.reference ? p99Of(result.reference) : '—',
          cpu(result.serviceCpuUs),
          cpu(result.referenceCpuUs),
        ]
      }),
  )
  const text = markdownTable(header, rows)
  const results = cells.map((cell) => cell.result)
  if (!results.some((r) => clientBound(r.service) || (r.reference && clientBound(r.reference)))) return text
  return `${text}\n\n\\* The load generator was at least ${CLIENT_BOUND_CORES} of its core busy: it, not the server, set this rate.`
}

/**
 * `--workers 2` against one worker, a row per backend and scenario, with the targets: reads at
 * least WORKERS_READ_GAIN times one worker's req/s, writes at least WORKERS_WRITE_GAIN times, and
 * the p99 at two workers under WORKERS_P99_MS where one request's CPU allows it (see below).
 */
export function workersTable(cells: readonly MatrixCell[]): string {
  const header = [
    'scenario',
    'backend',
    'req/s, 1 worker',
    'req/s, 2 workers',
    'gain',
    'reference gain',
    'target',
    'p99 (ms), 2 workers',
    'CPU µs/req, 1 → 2 workers',
    'gain on 2 free cores',
    'verdict',
  ]
  const rows: string[][] = []
  const unbounded: string[] = []
  for (const one of cells.filter((cell) => cell.workers === 1)) {
    const two = cells.find(
      (cell) => cell.workers === 2 && cell.backend === one.backend && cell.result.name === one.result.name,
    )
    if (two === undefined) continue
    const gain = two.result.service.perSecond / one.result.service.perSecond
    const referenceGain =
      one.result.reference && two.result.reference
        ? two.result.reference.perSecond / one.result.reference.perSecond
        : undefined
    const write = one.result.name.startsWith('POST')
    const target = write ? WORKERS_WRITE_GAIN : WORKERS_READ_GAIN
    const p99 = two.result.service.p99Ms
    // Little's law: c connections kept busy on 2 cores wait c/2 times a request's CPU on average.
    // A request that needs more than 2 * WORKERS_P99_MS / c of CPU cannot meet the p99 target at all.
    const cpuMs = (two.result.serviceCpuUs ?? 0) / 1000
    const p99Applies = cpuMs < (2 * WORKERS_P99_MS) / two.result.concurrency
    // The targets are SQLite's (issue 9): over PostgreSQL the database's own processes share the
    // same two cores, so a second worker has no core of its own to gain from.
    const targeted = one.backend === 'sqlite'
    // What two cores of its own would give a server bound by its CPU: twice one worker's rate, less
    // what the second worker adds to each request's CPU (the supervisor's share, caches shared).
    const oneCpu = one.result.serviceCpuUs
    const twoCpu = two.result.serviceCpuUs
    const freeCoresGain = oneCpu !== undefined && twoCpu !== undefined && twoCpu > 0 ? (2 * oneCpu) / twoCpu : undefined
    if (targeted && !p99Applies) unbounded.push(`${one.result.name} on ${one.backend}`)
    const ok = gain >= target && (!p99Applies || p99 < WORKERS_P99_MS)
    rows.push([
      `${one.result.name} (c=${two.result.concurrency})`,
      one.backend,
      rate(one.result.service.perSecond),
      rate(two.result.service.perSecond),
      Number.isFinite(gain) ? gain.toFixed(2) : '—',
      referenceGain === undefined || !Number.isFinite(referenceGain) ? '—' : referenceGain.toFixed(2),
      targeted ? `>= ${target.toFixed(1)}${p99Applies ? `, p99 < ${WORKERS_P99_MS}` : ''}` : 'none',
      p99Of(two.result.service),
      `${cpu(one.result.serviceCpuUs)} → ${cpu(two.result.serviceCpuUs)}`,
      freeCoresGain === undefined ? '—' : freeCoresGain.toFixed(2),
      targeted ? (ok ? 'PASS' : 'MISS') : '—',
    ])
  }
  const notes = [
    `Targets (SQLite's, issue 9): reads at least ${WORKERS_READ_GAIN}x one worker's req/s, writes at least ${WORKERS_WRITE_GAIN}x, p99 under ${WORKERS_P99_MS} ms at two workers. Over PostgreSQL the database's processes run on the same two cores, so no target applies there. The load generator runs on the same two cores: its own CPU per request is what keeps a read's gain under 2, for the reference (as many plain Bun.serve processes) as for the service. The CPU per request of the service's process tree at one and at two workers shows what the second worker costs; "gain on 2 free cores" is 2 × the first over the second, what a server bound by its CPU would gain with the load generator on another machine (not a target: an estimate).`,
  ]
  if (unbounded.length > 0) {
    notes.push(
      `No p99 target for ${unbounded.join('; ')}: each request takes more than ${((2 * WORKERS_P99_MS) / WORKERS_CONCURRENCY).toFixed(2)} ms of CPU, so ${WORKERS_CONCURRENCY} connections kept busy on 2 cores wait longer than ${WORKERS_P99_MS} ms on average, whatever the server (the reference's p99 is in the table above).`,
    )
  }
  return `${markdownTable(header, rows)}\n\n${notes.join(' ')}`
}

/** The backend × workers section of the report. */
export function matrixSection(choice: MatrixChoice, matrix: readonly MatrixResult[], measureMs: number): string {
  const workers = choice.workers.join(' and ')
  const cells = matrix.flatMap(({ backend, workers, results }) =>
    results.map((result) => ({ backend, workers, result })),
  )
  return [
    `### Backends and workers at ${SEED.books.toLocaleString('en-US')} books (${measureMs / 1000} s per scenario and server)`,
    '',
    `The service on ${choice.backends.join(' and ')}, at \`--workers\` ${workers}, each beside the reference for its backend (as many processes as the service has workers, sharing the port with SO_REUSEPORT): bench/references/raw.ts over bun:sqlite, bench/references/raw-postgres.ts over Bun's SQL client (prepared statements, a pool of 10 as the service's default, one statement per request). Each pair starts on fresh copies of the same ${SEED.books.toLocaleString('en-US')} books (SQLite: the seeded file; PostgreSQL: a database seeded through PostgresStore and its import, then copied with CREATE DATABASE … TEMPLATE on ${shownAdmin()}); the bench checks that the service answers the same on both backends and that each reference answers byte for byte as its service. The page is one of the first 50 (\`page[number]\`, 20 a page), the search \`filter[search]=${MATRIX_SEARCH}\` ranked, first page of 20.`,
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
