/**
 * A server under test and the processes it started (the service's `--workers`, a reference's
 * copies), read from /proc: their CPU time together, and which of them are still running.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'

const clockTicks = (() => {
  const out = Bun.spawnSync(['getconf', 'CLK_TCK'], { stdout: 'pipe', stderr: 'ignore' })
  return Number(out.stdout.toString().trim()) || 100
})()

/** User + system CPU seconds of one process so far, its parent's pid and its start time; undefined when it is gone. */
function processStat(pid: number): { seconds: number; parent: number; started: string } | undefined {
  let stat: string
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // Fields after the parenthesised command name; ppid is the 4th overall, utime and stime the
  // 14th and 15th, starttime the 22nd.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return {
    seconds: (Number(fields[11]) + Number(fields[12])) / clockTicks,
    parent: Number(fields[1]),
    started: fields[19] ?? '',
  }
}

/** `pid` and every process below it; empty off Linux or once it is gone. */
export function processTree(pid: number): number[] {
  if (!existsSync(`/proc/${pid}/stat`)) return []
  const children = new Map<number, number[]>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const parent = processStat(Number(entry))?.parent
    if (parent !== undefined) children.set(parent, [...(children.get(parent) ?? []), Number(entry)])
  }
  const tree: number[] = []
  const pending = [pid]
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    tree.push(next)
    pending.push(...(children.get(next) ?? []))
  }
  return tree
}

/**
 * User + system CPU seconds of a process and all its descendants so far (a server run as several
 * worker processes counts whole), or undefined off Linux.
 */
export function cpuSeconds(pid: number): number | undefined {
  if (!existsSync(`/proc/${pid}/stat`)) return undefined
  return processTree(pid).reduce((sum, member) => sum + (processStat(member)?.seconds ?? 0), 0)
}

/** A process as it runs now: its pid and start time, so that a pid taken again later is not mistaken for it. */
export interface ProcessIdentity {
  readonly pid: number
  readonly started: string
}

export function identify(pids: readonly number[]): ProcessIdentity[] {
  return pids.flatMap((pid) => {
    const started = processStat(pid)?.started
    return started === undefined ? [] : [{ pid, started }]
  })
}

/** Whether that very process (same pid, same start time) still runs. */
export function stillRunning(process: ProcessIdentity): boolean {
  return processStat(process.pid)?.started === process.started
}
