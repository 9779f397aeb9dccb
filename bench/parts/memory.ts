/**
 * The memory of one unpaginated GET /api/v1/books on fresh service processes (part of the full run
 * and of --compare-only): baseline, peak and growth of the service's RSS, and its section.
 */
import { existsSync } from 'node:fs'
import { LARGE } from '../data/seed'
import { pinning } from '../harness/measure'
import { countBytes, memoryOf, resetPeak, startReadWorkers } from '../harness/process-memory'
import { type RunningServer, startServer, stopServer, waitUntilReady } from '../harness/servers'
import { median } from '../harness/statistics'
import { markdownTable } from '../harness/tables'

/** Fresh service processes per data set; the table gives the median and each run. */
export const MEMORY_RUNS = 3

/** One fresh service process answering one unpaginated GET /api/v1/books. */
export interface MemoryRun {
  /** VmRSS once the service is up and idle, just before the request. */
  readonly baselineKb: number
  /** VmHWM after the request, the peak having been reset to the baseline just before it. */
  readonly peakKb: number
  /** VmRSS once the last byte has been read. */
  readonly afterKb: number
  /** Body bytes the bench read (counted, not kept). */
  readonly bytes: number
  /** From sending the request to its last body byte. */
  readonly ms: number
  /** Whether the peak was reset through /proc/<pid>/clear_refs; if not, it is the highest VmRSS sampled. */
  readonly peakReset: boolean
}

export interface MemoryResult {
  readonly books: number
  readonly runs: readonly MemoryRun[]
}

/**
 * Starts a fresh service on `databasePath` (so VmHWM holds nothing from earlier requests), waits
 * until it answers and settles, then asks once for the whole book list.
 */
async function measureOnce(databasePath: string, track: (server: RunningServer) => void): Promise<MemoryRun> {
  const server = startServer(
    'service (memory)',
    'src/cli.ts',
    { HOST: '127.0.0.1', DATABASE_URL: `sqlite://${databasePath}`, LOG_LEVEL: 'info' },
    pinning.server,
  )
  track(server)
  try {
    const pid = server.process.pid
    await waitUntilReady(server, '/api/v1/books/1')
    await startReadWorkers(server.origin)
    const baselineKb = memoryOf(pid).rssKb
    const peakReset = resetPeak(pid)
    // Sampled as well: the fallback where the peak cannot be reset.
    let sampledKb = baselineKb
    const sampler = setInterval(() => {
      sampledKb = Math.max(sampledKb, memoryOf(pid).rssKb)
    }, 5)
    const sent = performance.now()
    const response = await fetch(`${server.origin}/api/v1/books`, {
      headers: { accept: 'application/vnd.api+json', 'accept-encoding': 'identity' },
    })
    const bytes = await countBytes(response)
    const ms = performance.now() - sent
    clearInterval(sampler)
    if (response.status !== 200) throw new Error(`GET /api/v1/books answered ${response.status}`)
    const after = memoryOf(pid)
    const peakKb = peakReset ? after.hwmKb : Math.max(sampledKb, after.rssKb)
    return { baselineKb, peakKb, afterKb: after.rssKb, bytes, ms, peakReset }
  } finally {
    await stopServer(server)
  }
}

/**
 * MEMORY_RUNS fresh processes on each data set, alternating between the sets; `track` is told of
 * each process, so that an interrupted run can stop it.
 */
export async function measureListMemory(
  sets: readonly { books: number; databasePath: string }[],
  track: (server: RunningServer) => void,
): Promise<MemoryResult[] | null> {
  if (!existsSync(`/proc/${process.pid}/status`)) return null
  const results = sets.map((set) => ({ books: set.books, runs: [] as MemoryRun[] }))
  for (let run = 0; run < MEMORY_RUNS; run++) {
    for (const [i, set] of sets.entries()) {
      const measured = await measureOnce(set.databasePath, track)
      results[i]?.runs.push(measured)
      process.stderr.write(
        `  memory    GET all ${set.books.toLocaleString('en-US')} books run ${run + 1}/${MEMORY_RUNS}: RSS ${Math.round(measured.baselineKb / 1024)} -> peak ${Math.round(measured.peakKb / 1024)} MiB, ${measured.bytes.toLocaleString('en-US')} bytes in ${Math.round(measured.ms)} ms\n`,
      )
    }
  }
  return results
}

const mib = (kb: number) => (kb / 1024).toFixed(1)

/** Baseline, peak and growth of the service's RSS over one full-list request: medians of fresh processes. */
export function memoryTable(results: readonly MemoryResult[]): string {
  const header = [
    'request (fresh process each run)',
    'body (MiB)',
    'baseline RSS (MiB)',
    'peak RSS (MiB)',
    'growth (MiB)',
    'growth, each run (MiB)',
    'RSS after (MiB)',
    'time to last byte (ms)',
  ]
  const rows = results.map(({ books, runs }) => {
    const of = (pick: (run: (typeof runs)[number]) => number) => median(runs.map(pick))
    return [
      `GET all ${books.toLocaleString('en-US')} books`,
      (of((r) => r.bytes) / 1024 / 1024).toFixed(1),
      mib(of((r) => r.baselineKb)),
      mib(of((r) => r.peakKb)),
      mib(of((r) => r.peakKb - r.baselineKb)),
      runs.map((r) => mib(r.peakKb - r.baselineKb)).join(' / '),
      mib(of((r) => r.afterKb)),
      String(Math.round(of((r) => r.ms))),
    ]
  })
  return markdownTable(header, rows)
}

/** The 100,000-book list's memory runs, for the memory target. */
export const largeMemory = (memory: readonly MemoryResult[] | null) => memory?.find((m) => m.books === LARGE.books)

export function memorySection(memory: readonly MemoryResult[] | null): string {
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
