import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { pinning } from './measure'
import { freePort, type RunningServer, startServer, stopServer, waitUntilReady } from './servers'

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

export function memoryOf(pid: number): { rssKb: number; hwmKb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN)
  return { rssKb: kb('VmRSS'), hwmKb: kb('VmHWM') }
}

/** Sets VmHWM back to the current VmRSS (Linux 4.0+, "5" to clear_refs); false where that is not allowed. */
export function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5')
  } catch {
    return false
  }
  const { rssKb, hwmKb } = memoryOf(pid)
  // A little allocation may land between the two reads; a peak left from start-up would be far higher.
  return hwmKb - rssKb < 1024
}

/** Reads a body to its end, counting bytes and keeping none. */
export async function countBytes(response: Response): Promise<number> {
  let bytes = 0
  const reader = response.body?.getReader()
  if (!reader) return 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return bytes
    bytes += value.byteLength
  }
}

/**
 * A request only a read worker answers: a ranked search is never cheap enough for the main thread
 * (resource-controller.ts), whatever the data. A short list, an author's name say, is answered on
 * the main thread and starts no worker.
 */
const WORKER_READ = '/api/v1/books?filter[search]=nothingmatchesthis'

/**
 * Starts the service's read workers (each of its reads goes to the least busy, and the first starts
 * them all), so that their start is not counted as a later request's memory: they are part of an
 * idle service. Checked through /metrics, which counts the round trips to the workers.
 */
export async function startReadWorkers(origin: string): Promise<void> {
  await (await fetch(origin + WORKER_READ)).arrayBuffer()
  const metrics = await (await fetch(`${origin}/metrics`)).text()
  const trips = /^catalogue_database_calls_total\{operation="read_worker"\} (\d+)/m.exec(metrics)
  if (!trips || Number(trips[1]) < 1) throw new Error(`${WORKER_READ} did not reach a read worker`)
  await Bun.sleep(300)
}

/**
 * Starts a fresh service on `databasePath` (so VmHWM holds nothing from earlier requests), waits
 * until it answers and settles, then asks once for the whole book list.
 */
async function measureOnce(databasePath: string, track: (server: RunningServer) => void): Promise<MemoryRun> {
  const server = startServer(
    'service (memory)',
    'src/cli.ts',
    freePort(),
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
