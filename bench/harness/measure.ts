import { cpus } from 'node:os'
import { join } from 'node:path'
import { SEED } from '../data/seed'
import { type LoadPlan, type LoadRound, summarize } from './load'
import { runWrk, wrkPath, wrkSeconds } from './load-wrk'
import { cpuSeconds } from './process-tree'
import { getBook } from './requests'
import { MODERATE_CONCURRENCY, type Scenario, type ScenarioResult } from './scenario'
import type { Baselines } from './server-pairs'
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

/**
 * Seconds a server is measured in one scenario of `measureMs`, over its ROUNDS rounds: wrk runs
 * whole seconds, so 5 s in 2 rounds is 2 x 3 s with wrk (2 x 2.5 s with bench/harness/load.ts).
 */
export function measuredSeconds(measureMs: number): number {
  const round = measureMs / ROUNDS
  return ROUNDS * (LOAD_GENERATOR === 'wrk' ? wrkSeconds(round) : round / 1000)
}
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
 * The load generator: `--load wrk|bun` (BENCH_LOAD); wrk where it is installed, else bench/harness/load.ts.
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

/** A `{next}` sequence (bench/harness/load.ts) is taken up where the server's earlier runs of it left off. */
function sequencePlan(scenario: Scenario, used: number): Partial<LoadPlan> {
  const from = scenario.plan.sequenceFrom
  return from === undefined ? {} : { sequenceFrom: from + used }
}

/**
 * Measures `scenario` for `measureMs` on each server, split into rounds where there is more than
 * one: the service, the raw reference (`withReference`) and those of `others` that the scenario
 * names in `baselines`, taking turns (in order, then in reverse), so that a slow spell on a shared
 * machine falls on all of them; `rounds` rounds (ROUNDS unless a part of the bench asks for more).
 */
export async function runScenario(
  scenario: Scenario,
  service: RunningServer,
  reference: RunningServer,
  measureMs = MEASURE_MS,
  others: Baselines = {},
  roundsAsked = ROUNDS,
): Promise<ScenarioResult> {
  const extra = (scenario.baselines ?? []).flatMap((name) => {
    const server = others[name]
    return server === undefined ? [] : [[name, server] as const]
  })
  const turns = [service, ...(scenario.withReference ? [reference] : []), ...extra.map(([, server]) => server)]
  const rounds = turns.length > 1 ? roundsAsked : 1
  const measured = new Map<RunningServer, Measured[]>(turns.map((server) => [server, []]))
  const used = new Map<RunningServer, number>(turns.map((server) => [server, 0]))
  for (let round = 0; round < rounds; round++) {
    for (const server of round % 2 === 0 ? turns : [...turns].reverse()) {
      const plan: LoadPlan = {
        ...scenario.plan,
        ...sequencePlan(scenario, used.get(server) ?? 0),
        origin: server.origin,
        concurrency: scenario.concurrency,
        warmupMs: WARMUP_MS,
        durationMs: measureMs / rounds,
      }
      const result = await measureRound(server, plan)
      used.set(server, (used.get(server) ?? 0) + result.round.sent)
      const { requests, errors, firstError } = result.round
      process.stderr.write(
        `  ${server.name.padEnd(9)} ${scenario.name} c=${scenario.concurrency} round ${round + 1}/${rounds}: ${Math.round(requests / result.round.seconds)} req/s${errors > 0 ? `, ${errors} errors (${firstError})` : ''}\n`,
      )
      measured.get(server)?.push(result)
    }
  }
  const { sequenceCount } = scenario
  if (sequenceCount !== undefined) {
    for (const [server, count] of used) {
      if (count > sequenceCount) {
        process.stderr.write(
          `  ${server.name} made ${count} requests of ${scenario.name}, past the ${sequenceCount} ids of its sequence: the later ones found nothing\n`,
        )
      }
    }
  }
  const summaryOf = (server: RunningServer) => {
    const rounds = measured.get(server) ?? []
    return { load: summarize(rounds.map((m) => m.round)), cpuUs: cpuPerRequest(rounds) }
  }
  const serviceSummary = summaryOf(service)
  const referenceSummary = scenario.withReference ? summaryOf(reference) : undefined
  return {
    name: scenario.name,
    concurrency: scenario.concurrency,
    ...(scenario.target === undefined ? {} : { target: scenario.target }),
    service: serviceSummary.load,
    serviceCpuUs: serviceSummary.cpuUs,
    reference: referenceSummary?.load,
    referenceCpuUs: referenceSummary?.cpuUs,
    ...(extra.length === 0
      ? {}
      : { baselines: Object.fromEntries(extra.map(([name, server]) => [name, summaryOf(server)])) }),
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

/** The load generator, as the report names it. */
export const loadGeneratorNote =
  LOAD_GENERATOR === 'wrk'
    ? 'wrk (one thread, bench/harness/wrk-plan.lua), a fresh process per round, over c keep-alive connections to 127.0.0.1'
    : 'bench/harness/load.ts, a separate Bun process per round, Bun fetch over c keep-alive connections to 127.0.0.1'

/** How long each server is measured per scenario, and how. */
export function loadLine(measureMs: number): string {
  const rounds = measuredSeconds(measureMs) / ROUNDS
  return `${ROUNDS} alternating rounds of ${rounds} s per scenario and server (each server taking its turn, in order then in reverse), each after ${WARMUP_MS / 1000} s of warm-up`
}
