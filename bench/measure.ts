import { cpus } from 'node:os'
import { join } from 'node:path'
import { type LoadPlan, type LoadRound, summarize } from './load'
import { runWrk, wrkPath } from './load-wrk'
import { cpuSeconds } from './process-tree'
import { MODERATE_CONCURRENCY, type ScenarioResult } from './report'
import { getBook, type Scenario } from './scenarios'
import { SEED } from './seed'
import type { RunningServer } from './servers'

export const WARMUP_MS = 1000
/** `--quick` (or BENCH_QUICK=1): 1 s per scenario and server, to try the bench out, not to quote. */
export const QUICK = process.env.BENCH_QUICK === '1' || Bun.argv.includes('--quick')
/** BENCH_SECONDS shortens a run while working on the bench itself; the published numbers use 5. */
export const MEASURE_MS =
  1000 * (QUICK ? 1 : Number(process.env.BENCH_SECONDS) > 0 ? Number(process.env.BENCH_SECONDS) : 5)
/** The scenarios at 100,000 books get 3 s (with the default 5) to keep the whole run near 4 minutes. */
export const LARGE_MEASURE_MS = Math.round(MEASURE_MS * 0.6)
/**
 * A scenario with a reference is measured in rounds, service and reference taking turns (ABBA),
 * so that a slow spell on a shared machine falls on both rather than skewing the ratio.
 */
export const ROUNDS = 2
/** Time a load-generator process gets beyond its plan (start-up, the last answers) before it counts as hung. */
const LOAD_GRACE_MS = 15_000

/**
 * Servers on core 0; the load generator and this process (which drains the service's log pipe)
 * on core 1, so that nothing but the server under test runs on its core. Unpinned if we cannot.
 */
export const pinning = (() => {
  if (cpus().length < 2 || !Bun.which('taskset')) {
    return { server: [], spread: [], client: [], note: 'not pinned to cores (taskset missing or one core)' }
  }
  Bun.spawnSync(['taskset', '-a', '-p', '-c', '1', String(process.pid)], { stdout: 'ignore' })
  return {
    server: ['taskset', '-c', '0'],
    /** A server of several worker processes: on every core (the bench itself is on core 1 only, which children inherit). */
    spread: ['taskset', '-c', `0-${cpus().length - 1}`],
    client: ['taskset', '-c', '1'],
    note: 'each server pinned to core 0; the load generator and the bench itself (draining the log pipe) to core 1 (taskset)',
  }
})()

/**
 * The load generator: `--load wrk|bun` (BENCH_LOAD); wrk where it is installed, else bench/load.ts.
 * Both send the same requests; wrk costs the shared cores far less per request.
 */
export const LOAD_GENERATOR: 'wrk' | 'bun' = (() => {
  const at = Bun.argv.indexOf('--load')
  const chosen = at === -1 ? process.env.BENCH_LOAD : Bun.argv[at + 1]
  if (chosen === 'bun' || chosen === 'wrk') {
    if (chosen === 'wrk' && !wrkPath) throw new Error('--load wrk: wrk is not installed (apt-get install wrk)')
    return chosen
  }
  if (chosen !== undefined) throw new Error(`--load takes wrk or bun (got "${chosen}")`)
  return wrkPath ? 'wrk' : 'bun'
})()

/** A round of `plan` from a fresh load-generator process on the client's core. */
async function generateLoad(plan: LoadPlan): Promise<LoadRound> {
  if (LOAD_GENERATOR === 'wrk') return runWrk(plan, pinning.client)
  const child = Bun.spawn([...pinning.client, 'bun', join(import.meta.dir, 'load.ts'), JSON.stringify(plan)], {
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const deadline = plan.warmupMs + plan.durationMs + LOAD_GRACE_MS
  const watchdog = setTimeout(() => child.kill('SIGKILL'), deadline)
  const output = await new Response(child.stdout).text()
  const code = await child.exited
  clearTimeout(watchdog)
  if (child.signalCode === 'SIGKILL') throw new Error(`the load generator hung on ${plan.method} ${plan.path}`)
  if (code !== 0) throw new Error(`the load generator failed on ${plan.method} ${plan.path}`)
  return JSON.parse(output) as LoadRound
}

interface Measured {
  readonly round: LoadRound
  readonly cpuSeconds?: number
}

/** One round against one server, and the server's CPU meanwhile. */
async function measureRound(server: RunningServer, plan: LoadPlan): Promise<Measured> {
  const cpuBefore = cpuSeconds(server.process.pid)
  const round = await generateLoad(plan)
  const cpuAfter = cpuSeconds(server.process.pid)
  return cpuBefore === undefined || cpuAfter === undefined ? { round } : { round, cpuSeconds: cpuAfter - cpuBefore }
}

/** Server CPU per answered request over all rounds, in microseconds. */
function cpuPerRequest(measured: readonly Measured[]): number | undefined {
  let seconds = 0
  let answered = 0
  for (const m of measured) {
    if (m.cpuSeconds === undefined) return undefined
    seconds += m.cpuSeconds
    answered += m.round.answered
  }
  return answered > 0 ? (seconds * 1e6) / answered : undefined
}

/** Measures `scenario` for `measureMs` on each server, split into rounds where there is a reference. */
export async function runScenario(
  scenario: Scenario,
  service: RunningServer,
  reference: RunningServer,
  measureMs = MEASURE_MS,
): Promise<ScenarioResult> {
  const rounds = scenario.withReference ? ROUNDS : 1
  const measured = new Map<RunningServer, Measured[]>([[service, []]])
  if (scenario.withReference) measured.set(reference, [])
  const turns = [...measured.keys()]
  for (let round = 0; round < rounds; round++) {
    for (const server of round % 2 === 0 ? turns : [...turns].reverse()) {
      const plan: LoadPlan = {
        ...scenario.plan,
        origin: server.origin,
        concurrency: scenario.concurrency,
        warmupMs: WARMUP_MS,
        durationMs: measureMs / rounds,
      }
      const result = await measureRound(server, plan)
      const { requests, errors, firstError } = result.round
      process.stderr.write(
        `  ${server.name.padEnd(9)} ${scenario.name} c=${scenario.concurrency} round ${round + 1}/${rounds}: ${Math.round(requests / result.round.seconds)} req/s${errors > 0 ? `, ${errors} errors (${firstError})` : ''}\n`,
      )
      measured.get(server)?.push(result)
    }
  }
  const serviceRounds = measured.get(service) ?? []
  const referenceRounds = measured.get(reference)
  return {
    name: scenario.name,
    concurrency: scenario.concurrency,
    ratioTarget: scenario.ratioTarget,
    p99Target: scenario.p99Target,
    service: summarize(serviceRounds.map((m) => m.round)),
    serviceCpuUs: cpuPerRequest(serviceRounds),
    reference: referenceRounds && summarize(referenceRounds.map((m) => m.round)),
    referenceCpuUs: referenceRounds && cpuPerRequest(referenceRounds),
  }
}

/** A fresh process has cold caches and an unoptimised JIT; give both the same head start. */
export async function warmUp(server: RunningServer, plan: Scenario['plan'] = getBook(SEED)): Promise<void> {
  await measureRound(server, {
    ...plan,
    origin: server.origin,
    concurrency: MODERATE_CONCURRENCY,
    warmupMs: 2000,
    durationMs: 0,
  })
}
