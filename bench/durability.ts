/**
 * The writes at each DURABILITY (docs/performance.md): the service started with DURABILITY=full and
 * then normal, each beside the reference at the same setting (bench/reference.ts,
 * REFERENCE_DURABILITY), which commits each write alone. Fresh copies of the seeded file for each.
 */
import { copyFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Durability } from '../src/store/open'
import { compareAnswers } from './compare'
import { pinning, runScenario, warmUp } from './measure'
import { MODERATE_CONCURRENCY, type ScenarioResult } from './report'
import { postBook, type Scenario } from './scenarios'
import { SEED } from './seed'
import { type RunningServer, startPair, stopPair } from './servers'

export const DURABILITY_SETTINGS: readonly Durability[] = ['full', 'normal']

/** At `normal` the service must reach this share of the reference at `normal`... */
export const NORMAL_RATIO_TARGET = 0.9
/** ...and at `full` this multiple of the reference at `full`, which waits for the disk on each write alone. */
export const FULL_RATIO_TARGET = 1.5

export interface DurabilityResult {
  readonly durability: Durability
  readonly results: readonly ScenarioResult[]
}

const writes = (durability: Durability): Scenario[] =>
  [MODERATE_CONCURRENCY, 64].map((concurrency) => ({
    name: `POST a book (DURABILITY=${durability})`,
    concurrency,
    withReference: true,
    ratioTarget: false,
    p99Target: false,
    plan: postBook,
  }))

export async function runDurability(
  pristine: string,
  dir: string,
  measureMs: number,
  track: (server: RunningServer) => void,
): Promise<DurabilityResult[]> {
  const all: DurabilityResult[] = []
  for (const durability of DURABILITY_SETTINGS) {
    const service = join(dir, `durability-${durability}-service.db`)
    const reference = join(dir, `durability-${durability}-reference.db`)
    copyFileSync(pristine, service)
    copyFileSync(pristine, reference)
    const pair = await startPair({ service, reference }, pinning.server, track, durability)
    try {
      await compareAnswers(pair.service, pair.reference, SEED, { post: true })
      await warmUp(pair.service)
      await warmUp(pair.reference)
      const results: ScenarioResult[] = []
      for (const scenario of writes(durability)) {
        results.push(await runScenario(scenario, pair.service, pair.reference, measureMs))
      }
      all.push({ durability, results })
    } finally {
      await stopPair(pair)
    }
  }
  return all
}

/** The target line, then a PASS/MISS line per scenario. */
export function durabilityTargets(runs: readonly DurabilityResult[]): string {
  const lines = [
    `target: at DURABILITY=normal at least ${NORMAL_RATIO_TARGET} of the reference at normal; at full at least ${FULL_RATIO_TARGET}x the reference at full (each write committed alone)`,
  ]
  for (const { durability, results } of runs) {
    const target = durability === 'normal' ? NORMAL_RATIO_TARGET : FULL_RATIO_TARGET
    for (const result of results) {
      if (!result.reference) continue
      const ratio = result.service.perSecond / result.reference.perSecond
      lines.push(
        `  ${ratio >= target ? 'PASS' : 'MISS'}  ratio ${ratio.toFixed(2)} on ${result.name} (c=${result.concurrency})`,
      )
    }
  }
  return lines.join('\n')
}
