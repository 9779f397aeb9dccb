/**
 * `bun run bench`: seeds temporary databases (10,000 books; 100,000; the 10,000 with a stock of
 * books for DELETE), measures the memory of a full-list request on fresh service processes, then
 * issue 10's comparison at 10,000 books: the reads (bench/parts/comparison/reads.ts) and the writes
 * at each DURABILITY (bench/parts/comparison/writes.ts), the service beside three baselines, each in
 * its own process (the raw reference, a minimal Elysia app, Express + jsonapi-serializer: see
 * bench/references/), loaded over loopback from another process, with the issue's targets; then the
 * service against the raw reference at 100,000 books (bench/parts/large.ts); then the backend ×
 * workers part (bench/parts/matrix/): the service on SQLite and on PostgreSQL, one process and
 * `--workers N`, each beside its reference; then POST, PATCH and DELETE on PostgreSQL beside its
 * reference (bench/parts/postgres-writes.ts); last, issue 24's searches, pages and imports at 10,000,
 * 100,000 and 1,000,000 books (bench/parts/million/). The order is bench/runs/full.ts's. Prints
 * markdown tables and writes them to bench/results/full.md. Options (see chosenBench): --backends,
 * --workers, --load, --quick, --compare-only, --durability-only, --matrix-only,
 * --postgres-writes-only. `bun run bench -- crash` runs the crash rounds of bench/parts/crash.ts
 * instead (other named benches, among them `change-latency` and `before-after`: see chosenBench).
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { QUICK } from './harness/measure'
import { appBench } from './parts/app/app-bench'
import { beforeAfter } from './parts/before-after'
import { crashBench } from './parts/crash'
import { firstSearchBench } from './parts/first-search/first-search'
import { runBounds } from './parts/limits/bounds'
import { runHostile } from './parts/limits/hostile'
import { machineryBench } from './parts/machinery/machinery'
import { type MatrixChoice, matrixChoice } from './parts/matrix/matrix'
import { millionBench } from './parts/million/million'
import { replicaBench } from './parts/replicas'
import { searchBench } from './parts/search/search'
import { changeLatencyBench } from './runs/change-latency'
import { runFull } from './runs/full'
import { compareOnly, durabilityOnly, matrixOnly, type PartialRun, postgresWritesOnly } from './runs/partial'
import { cleanUp, dir, track } from './runs/setup'

type Mode = 'full' | 'compare' | 'durability' | 'matrix' | 'postgres-writes'

function runOf(choice: MatrixChoice, mode: Mode, started: number): Promise<PartialRun> {
  if (mode === 'postgres-writes') return postgresWritesOnly(started)
  if (mode === 'durability') return durabilityOnly(started)
  if (mode === 'matrix') return matrixOnly(choice, started)
  if (mode === 'compare') return compareOnly(started)
  return runFull(choice, started)
}

async function main(choice: MatrixChoice, mode: Mode): Promise<number> {
  const { report, all } = await runOf(choice, mode, performance.now())
  console.log(`\n${report}`)
  // A quick or partial run is for trying the bench out: the published results stay as they were.
  if (!QUICK && mode === 'full') writeFileSync(join(import.meta.dir, 'results', 'full.md'), report)
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
 * bench/parts/crash.ts, `bun run bench -- hostile` the most expensive requests the limits allow
 * (bench/parts/limits/hostile.ts), `bun run bench -- bounds` many clients at once and the largest writes
 * (bench/parts/limits/bounds.ts), `bun run bench -- replicas` the reads through a PostgreSQL read replica
 * alone (bench/parts/replicas.ts, also part of the full run with PostgreSQL), and `bun run bench --
 * million [--sizes 10k,100k,1m] [--backends sqlite,postgres]` issue 24's searches, pages and imports
 * at 10,000 to 1,000,000 books on kept data sets alone (bench/parts/million/million.ts, also the full run's last
 * part, on the backends of `--backends`), and `bun run bench -- change-latency [--backends sqlite,postgres]
 * [--streams 1,50]` how long a change takes to reach the feed's streams (bench/runs/change-latency.ts),
 * and `bun run bench -- first-search [--backends sqlite,postgres]` the start and the first search
 * on a catalogue of one book (bench/parts/first-search/first-search.ts), and `bun run bench -- search
 * [--sizes 100000,1000000] [--backends sqlite,postgres] [--seed N]` issue 34's generated query family
 * at 100,000 and 1,000,000 books (bench/parts/search/search.ts), and `bun run bench -- app
 * [--backends sqlite,postgres] [--seed N]` the browser app's size, first list and keystrokes at
 * 100,000 books (bench/parts/app/app-bench.ts).
 * Options of `main`:
 *
 * - `--backends sqlite,postgres` (BENCH_BACKENDS): the backends of the backend × workers part;
 * - `--workers 1,2` (BENCH_WORKERS): its worker counts (default 1,2 where the service takes
 *   `--workers`, else 1);
 * - `--load wrk|bun` (BENCH_LOAD): the load generator, wrk where it is installed (bench/harness/load-wrk.ts);
 * - `--quick` (BENCH_QUICK=1): 1 s per scenario instead of 5, bench/results/full.md left as it is;
 * - `--compare-only`: only issue 10's comparison at 10,000 books (reads, writes at each DURABILITY,
 *   beside the three baselines) and the memory of the 100,000-book list, with the targets;
 * - `--matrix-only`: only the backend × workers part (seeds 10,000 books; about a minute a pair),
 *   and with PostgreSQL the reads through a replica (bench/parts/replicas.ts);
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
  if (chosen === 'before-after') return beforeAfter()
  if (chosen === 'machinery') return machineryBench(argv.slice(1), dir, track)
  if (chosen === 'million') return millionBench(argv.slice(1), dir, track)
  if (chosen === 'change-latency') return changeLatencyBench(argv.slice(1), dir, track)
  if (chosen === 'first-search') return firstSearchBench(argv.slice(1))
  if (chosen === 'search') return searchBench(argv.slice(1), dir, track)
  if (chosen === 'app') return appBench(argv.slice(1), dir, track)
  if (chosen !== undefined && !chosen.startsWith('--')) {
    console.error(
      `bench: no bench "${chosen}"; run it without an argument, or with "crash", "hostile", "bounds", "replicas", "before-after", "machinery", "million", "change-latency", "first-search", "search" or "app"`,
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
