/**
 * The full run of `bun run bench`, its parts in order: the memory of a full-list request on fresh
 * processes, issue 10's comparison at 10,000 books (reads, then writes at each DURABILITY), the
 * service beside the raw reference at 100,000 books, the backend × workers part, PostgreSQL's
 * writes and reads through a replica (with PostgreSQL), and last the million-book part; then the
 * report, which bench/results/full.md keeps.
 */
import { cpus } from 'node:os'
import { type DataSet, LARGE, SEED } from '../data/seed'
import {
  LARGE_MEASURE_MS,
  LOAD_GENERATOR,
  loadGeneratorNote,
  MEASURE_MS,
  measuredSeconds,
  pinning,
  ROUNDS,
  WARMUP_MS,
} from '../harness/measure'
import type { ScenarioResult } from '../harness/scenario'
import { runReads } from '../parts/comparison/reads'
import { BASELINES_NOTE, durabilitySection, readsSection } from '../parts/comparison/report'
import { DELETE_STOCK, WRITE_SET } from '../parts/comparison/scenarios'
import { targetsSection } from '../parts/comparison/targets'
import { runDurability } from '../parts/comparison/writes'
import { largeSection, runLarge } from '../parts/large'
import { type MatrixChoice, runMatrix } from '../parts/matrix/matrix'
import { matrixSection } from '../parts/matrix/report'
import { largeMemory, MEMORY_RUNS, measureListMemory, memorySection } from '../parts/memory'
import { MILLION_SIZES } from '../parts/million/data'
import { runMillion } from '../parts/million/million'
import { millionSection } from '../parts/million/report'
import { postgresWritesSection, runPostgresWrites } from '../parts/postgres-writes'
import { replicaSection, runReplicaReads } from '../parts/replicas'
import { count, dir, seedSet, track } from './setup'

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

/** Runs every part; gives the report and every scenario's result (for the errors check). */
export async function runFull(
  choice: MatrixChoice,
  started: number,
): Promise<{ report: string; all: readonly ScenarioResult[] }> {
  const small = await seedSet('10k', SEED)
  const writes = await seedSet('writes', WRITE_SET)
  const large = await seedSet('100k', LARGE)

  // First, while nothing else runs: one full list per fresh process, for its peak memory.
  const memory = await measureListMemory(
    [
      { books: SEED.books, databasePath: small.memory },
      { books: LARGE.books, databasePath: large.memory },
    ],
    track,
  )

  const reads = await runReads(small.pristine, dir, MEASURE_MS, track)
  const largeRun = await runLarge(large, LARGE_MEASURE_MS, track)
  const durability = await runDurability(writes.pristine, dir, MEASURE_MS, track)
  const matrix = await runMatrix(choice, small.pristine, dir, LARGE_MEASURE_MS, track)
  const matrixLines = matrix.reduce((sum, m) => sum + m.loggedLines, 0)
  const postgresWrites = choice.backends.includes('postgres') ? await runPostgresWrites(track) : null
  // Reads through a read replica, with PostgreSQL: on a primary and a standby of the bench's own.
  const replicas = choice.backends.includes('postgres') ? await runReplicaReads(LARGE_MEASURE_MS, track) : undefined
  // Last: issue 24's million books, on the kept data sets (made the first time, minutes).
  const million = await runMillion(choice.backends, MILLION_SIZES, dir, track)

  const compared = [...reads.results, ...durability.flatMap((d) => d.results)]
  const all = [
    ...compared,
    ...largeRun.results,
    ...matrix.flatMap((m) => m.results),
    ...(postgresWrites?.results ?? []),
    ...(replicas?.results ?? []),
  ]
  const report = [
    '## Benchmark: the service beside three baselines (raw Bun + SQLite, minimal Elysia, Express)',
    '',
    describeRun(
      reads.loggedLines + largeRun.loggedLines + matrixLines + (replicas?.loggedLines ?? 0),
      (performance.now() - started) / 1000,
    ),
    '',
    readsSection(reads, MEASURE_MS),
    '',
    durabilitySection(durability, MEASURE_MS),
    '',
    targetsSection(compared, largeMemory(memory)),
    '',
    largeSection(largeRun.results, LARGE_MEASURE_MS),
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
  return { report, all }
}
