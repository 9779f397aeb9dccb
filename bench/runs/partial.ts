/**
 * The partial runs of `bun run bench`, one part each with its section of the report:
 * --compare-only, --durability-only, --matrix-only and --postgres-writes-only.
 */
import { cpus } from 'node:os'
import { LARGE, SEED } from '../data/seed'
import { LARGE_MEASURE_MS, loadGeneratorNote, loadLine, MEASURE_MS, pinning, WARMUP_MS } from '../harness/measure'
import type { ScenarioResult } from '../harness/scenario'
import { runReads } from '../parts/comparison/reads'
import { BASELINES_NOTE, durabilitySection, readsSection } from '../parts/comparison/report'
import { WRITE_SET } from '../parts/comparison/scenarios'
import { targetsSection } from '../parts/comparison/targets'
import { runDurability } from '../parts/comparison/writes'
import { type MatrixChoice, runMatrix } from '../parts/matrix/matrix'
import { matrixSection } from '../parts/matrix/report'
import { largeMemory, measureListMemory, memorySection } from '../parts/memory'
import { postgresWritesLoad, postgresWritesSection, runPostgresWrites } from '../parts/postgres-writes'
import { replicaSection, runReplicaReads } from '../parts/replicas'
import { count, dir, seedSet, track } from './setup'

/** What a partial run gives: its report and every scenario's result (for the errors check). */
export interface PartialRun {
  readonly report: string
  readonly all: readonly ScenarioResult[]
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

/** --postgres-writes-only: POST, PATCH and DELETE on PostgreSQL beside its reference. */
export async function postgresWritesOnly(started: number): Promise<PartialRun> {
  const writes = await runPostgresWrites(track)
  return {
    all: [...writes.results],
    report: partialReport(
      'writes on PostgreSQL beside the raw reference',
      started,
      [postgresWritesSection(writes)],
      false,
      postgresWritesLoad(WARMUP_MS),
    ),
  }
}

/** --durability-only: the writes at each DURABILITY, beside the baselines at the same setting. */
export async function durabilityOnly(started: number): Promise<PartialRun> {
  const writes = await seedSet('writes', WRITE_SET)
  const runs = await runDurability(writes.pristine, dir, MEASURE_MS, track)
  const all = runs.flatMap((run) => run.results)
  return {
    all,
    report: partialReport(
      'writes at each DURABILITY, beside three baselines',
      started,
      [durabilitySection(runs, MEASURE_MS), targetsSection(all, undefined)],
      true,
    ),
  }
}

/** --matrix-only: the backend × workers part, and with PostgreSQL the reads through a replica. */
export async function matrixOnly(choice: MatrixChoice, started: number): Promise<PartialRun> {
  const small = await seedSet('10k', SEED)
  const matrix = await runMatrix(choice, small.pristine, dir, LARGE_MEASURE_MS, track)
  const replicas = choice.backends.includes('postgres') ? await runReplicaReads(LARGE_MEASURE_MS, track) : undefined
  return {
    all: [...matrix.flatMap((m) => m.results), ...(replicas?.results ?? [])],
    report: partialReport(
      'the service on each backend and worker count, against references',
      started,
      [
        matrixSection(choice, matrix, LARGE_MEASURE_MS),
        ...(replicas === undefined ? [] : [replicaSection(replicas, LARGE_MEASURE_MS)]),
      ],
      false,
    ),
  }
}

/** --compare-only: issue 10's comparison at 10,000 books and the memory of the 100,000-book list. */
export async function compareOnly(started: number): Promise<PartialRun> {
  const small = await seedSet('10k', SEED)
  const writes = await seedSet('writes', WRITE_SET)
  const large = await seedSet('100k', LARGE)
  // The memory target's list first, while nothing else runs.
  const memory = await measureListMemory([{ books: LARGE.books, databasePath: large.memory }], track)
  const reads = await runReads(small.pristine, dir, MEASURE_MS, track)
  const runs = await runDurability(writes.pristine, dir, MEASURE_MS, track)
  const all = [...reads.results, ...runs.flatMap((run) => run.results)]
  return {
    all,
    report: partialReport(
      `the service beside three baselines at ${count(SEED.books)} books`,
      started,
      [
        readsSection(reads, MEASURE_MS),
        durabilitySection(runs, MEASURE_MS),
        targetsSection(all, largeMemory(memory)),
        memorySection(memory),
      ],
      true,
    ),
  }
}
