/**
 * The load generator as wrk (Debian's package `wrk`) rather than bench/harness/load.ts: the same plan, the
 * same requests (bench/harness/wrk-plan.lua), the same LoadRound. wrk spends less CPU per request than
 * Bun's fetch (41-46 µs against 66-73 µs on GET one book at c=32, its Lua script included), which
 * matters on a 2-core machine where the generator shares the cores with a server of two workers.
 */
import { join } from 'node:path'
import type { LatencyCounts, LoadPlan, LoadRound } from './load'

/** Whether wrk is installed: the bench uses it where it is, bench/harness/load.ts otherwise. */
export const wrkPath = Bun.which('wrk')

const SCRIPT = join(import.meta.dir, 'wrk-plan.lua')
/** wrk's own limit for one request; far above what a request takes here, so only a hang reaches it. */
const WRK_TIMEOUT = '10s'

interface WrkOutput {
  readonly requests: number
  /** Requests made, answered or not: a `{next}` sequence goes on after them. */
  readonly sent: number
  readonly durationUs: number
  readonly socketErrors: number
  readonly timeouts: number
  readonly mismatches: number
  readonly firstMismatch: string
  readonly latencyUs: readonly (readonly [number, number])[]
}

/** wrk takes whole seconds: a run of `ms` lasts this many. */
export const wrkSeconds = (ms: number) => Math.max(1, Math.round(ms / 1000))

/** One wrk run of `seconds`, its `{next}` sequence from `sequenceFrom`; its output and the CPU it used. */
async function wrkRun(
  plan: LoadPlan,
  seconds: number,
  placement: readonly string[],
  sequenceFrom: number,
): Promise<{ output: WrkOutput; cpuUs: number }> {
  if (!wrkPath) throw new Error('wrk is not installed')
  const child = Bun.spawn(
    [
      ...placement,
      wrkPath,
      '-t1',
      `-c${plan.concurrency}`,
      `-d${seconds}s`,
      `--timeout`,
      WRK_TIMEOUT,
      '-s',
      SCRIPT,
      plan.origin,
      '--',
      plan.method,
      plan.path,
      plan.body ?? '',
      String(plan.randomMax),
      String(plan.expectStatus),
      String(sequenceFrom),
      '1',
    ],
    { stdout: 'pipe', stderr: 'pipe' },
  )
  const [text, errorText, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  const line = text.split('\n').find((l) => l.startsWith('wrk-plan '))
  if (code !== 0 || line === undefined) {
    throw new Error(`wrk failed on ${plan.method} ${plan.path} (exit ${code}): ${errorText.trim() || text.trim()}`)
  }
  const usage = child.resourceUsage()
  return {
    output: JSON.parse(line.slice('wrk-plan '.length)) as WrkOutput,
    cpuUs: usage ? Number(usage.cpuTime.user + usage.cpuTime.system) : 0,
  }
}

/** Runs `plan` with wrk: a warm-up run (its answers counted in `answered` only), then the measured one. */
export async function runWrk(plan: LoadPlan, placement: readonly string[]): Promise<LoadRound> {
  if (!/^http:\/\/127\.0\.0\.1:\d+$/.test(plan.origin)) {
    throw new Error(`load: refusing a non-loopback target ${plan.origin}`)
  }
  const started = performance.now()
  let answered = 0
  let cpuUs = 0
  let sent = 0
  const sequenceFrom = plan.sequenceFrom ?? 1
  if (plan.warmupMs > 0) {
    const warm = await wrkRun(plan, wrkSeconds(plan.warmupMs), placement, sequenceFrom)
    answered += warm.output.requests
    cpuUs += warm.cpuUs
    sent += warm.output.sent
  }
  if (plan.durationMs === 0) {
    return { requests: 0, latenciesMs: [], seconds: 0, errors: 0, answered, sent, clientCores: 0 }
  }
  const { output, cpuUs: measuredCpuUs } = await wrkRun(
    plan,
    wrkSeconds(plan.durationMs),
    placement,
    sequenceFrom + sent,
  )
  cpuUs += measuredCpuUs
  answered += output.requests
  sent += output.sent
  const errors = output.mismatches + output.socketErrors + output.timeouts
  const latenciesMs: LatencyCounts = output.latencyUs.map(([us, count]) => [us / 1000, count] as const)
  const firstError =
    output.firstMismatch !== ''
      ? `${plan.method} ${plan.path}: ${output.firstMismatch}`
      : errors > 0
        ? `${plan.method} ${plan.path}: ${output.socketErrors} socket errors, ${output.timeouts} timeouts`
        : undefined
  return {
    requests: output.requests - output.mismatches,
    latenciesMs,
    seconds: output.durationUs / 1e6,
    errors,
    ...(firstError === undefined ? {} : { firstError }),
    answered,
    sent,
    clientCores: cpuUs / 1000 / (performance.now() - started),
  }
}
