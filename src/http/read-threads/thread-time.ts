import { readFileSync } from 'node:fs'

/**
 * The CPU time this thread has run, in ms, where Linux says it (/proc/thread-self/schedstat, in
 * ns; some 12 µs a read), else the wall clock. A read's cost is its CPU time: its wall time also
 * holds the time the thread waited for a core, which on a loaded machine was 2.5x its CPU time
 * (58 ms of CPU in 148 ms), and would make a light search look heavy (see search-lanes.ts).
 */
export function threadMs(): number {
  if (perThread) {
    try {
      return Number(readFileSync(SCHEDSTAT, 'latin1').split(' ', 1)[0]) / 1e6
    } catch {
      perThread = false
    }
  }
  return performance.now()
}

const SCHEDSTAT = '/proc/thread-self/schedstat'
let perThread = process.platform === 'linux'
