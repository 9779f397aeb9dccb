/**
 * The writes at each DURABILITY (docs/performance.md): the service started with DURABILITY=full and
 * then normal, each beside the raw reference (bench/references/raw.ts), the minimal Elysia app and
 * Express + jsonapi-serializer at the same setting (REFERENCE_DURABILITY), which commit each write
 * alone, and the raw reference committing them in groups as the service does: POST, PATCH (a
 * rename) and DELETE of a book, on fresh copies of the write runs' file for each (the 10,000 books
 * and DELETE_STOCK more for DELETE to delete, bench/parts/comparison/scenarios.ts).
 */
import type { Durability } from '../../../src/store/sqlite/open-database'
import { compareWrites } from '../../harness/compare'
import { pinning, runScenario, warmUp } from '../../harness/measure'
import type { ScenarioResult } from '../../harness/scenario'
import { startComparison, stopComparison } from '../../harness/server-pairs'
import { copiesFor, type RunningServer } from '../../harness/servers'
import { WRITE_SET, writeScenarios } from './scenarios'

export const DURABILITY_SETTINGS: readonly Durability[] = ['full', 'normal']

export interface DurabilityResult {
  readonly durability: Durability
  readonly results: readonly ScenarioResult[]
}

/** `pristine` is a file of WRITE_SET as seeded; every server gets its own copy for each setting. */
export async function runDurability(
  pristine: string,
  dir: string,
  measureMs: number,
  track: (server: RunningServer) => void,
): Promise<DurabilityResult[]> {
  const all: DurabilityResult[] = []
  for (const durability of DURABILITY_SETTINGS) {
    const files = copiesFor(pristine, dir, `writes-${durability}`, [
      'service',
      'reference',
      'grouped',
      'elysia',
      'express',
    ])
    const servers = await startComparison(files, pinning.server, track, durability)
    try {
      const { service, reference, others } = servers
      const compared = [
        { server: reference, check: 'bytes' as const },
        ...(others.grouped ? [{ server: others.grouped, check: 'bytes' as const }] : []),
        ...(others.elysia ? [{ server: others.elysia, check: 'bytes' as const }] : []),
        ...(others.express ? [{ server: others.express, check: 'records' as const }] : []),
      ]
      await compareWrites(service, compared, WRITE_SET)
      process.stderr.write(
        `DURABILITY=${durability}: the raw reference (alone and grouped) and Elysia answer the writes byte for byte as the service does, Express with the same statuses and record counts; measuring\n`,
      )
      for (const server of [service, reference, ...Object.values(others)]) await warmUp(server)
      const results: ScenarioResult[] = []
      for (const scenario of writeScenarios(durability)) {
        results.push(await runScenario(scenario, service, reference, measureMs, others))
      }
      all.push({ durability, results })
    } finally {
      await stopComparison(servers)
    }
  }
  return all
}
