/**
 * A service process's memory read from /proc (VmRSS, and VmHWM reset to it before a request), a
 * body read to its end without keeping it, and the read workers started as an idle service has them.
 */
import { readFileSync, writeFileSync } from 'node:fs'

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

/** VmRSS sampled every 10 ms from now, with VmHWM reset: `stop` gives the peak in KiB. */
export function rssSampler(pid: number): { stop(): number } {
  const reset = resetPeak(pid)
  let peak = memoryOf(pid).rssKb
  const timer = setInterval(() => {
    peak = Math.max(peak, memoryOf(pid).rssKb)
  }, 10)
  return {
    stop() {
      clearInterval(timer)
      const now = memoryOf(pid)
      return Math.max(peak, now.rssKb, reset ? now.hwmKb : 0)
    },
  }
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
