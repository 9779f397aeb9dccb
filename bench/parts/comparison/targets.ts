/** Issue 10's targets for the comparison at 10,000 books, and their section of the report. */
import type { ScenarioResult } from '../../harness/scenario'
import { median } from '../../harness/statistics'
import { label, ms, over, p99Of, ratio2 } from '../../harness/tables'
import type { MemoryResult } from '../memory'

/** Issue 10's targets. A read at least this share of the raw reference's req/s... */
export const RAW_READ_RATIO = 0.85
/** ...and of the minimal Elysia app's... */
export const ELYSIA_READ_RATIO = 0.9
/** ...with a p99 at most this multiple of the raw reference's. */
export const READ_P99_MULTIPLE = 1.5
/** A write at DURABILITY=normal at least this share of the raw reference at normal... */
export const NORMAL_WRITE_RATIO = 0.9
/** ...and at full at least this multiple of the raw reference at full, which commits each write alone. */
export const FULL_WRITE_RATIO = 1.5
/** Every scenario, read or write, at least this multiple of Express + jsonapi-serializer. */
export const EXPRESS_MULTIPLE = 5
/** The whole list of 100,000 books, streamed, with a peak RSS at most this far (MiB) over idle. */
export const MEMORY_GROWTH_MIB = 32

/**
 * Issue 10's targets, a PASS/MISS line per check: each read at least RAW_READ_RATIO of the raw
 * reference and ELYSIA_READ_RATIO of Elysia, its p99 at most READ_P99_MULTIPLE times the raw
 * reference's; each write at least NORMAL_WRITE_RATIO of the raw reference at normal, or
 * FULL_WRITE_RATIO times it at full; every scenario at least EXPRESS_MULTIPLE times Express; and,
 * given `memory` (the runs of the 100,000-book list), the median growth of the peak RSS over idle at
 * most MEMORY_GROWTH_MIB.
 */
export function comparisonTargets(results: readonly ScenarioResult[], memory?: MemoryResult): string {
  const lines = [
    `targets (issue 10): reads >= ${RAW_READ_RATIO} of raw (the lists: raw streaming them) and >= ${ELYSIA_READ_RATIO} of Elysia, service p99 <= ${READ_P99_MULTIPLE}x raw's;`,
    `  writes at DURABILITY=normal >= ${NORMAL_WRITE_RATIO} of raw at normal, at full >= ${FULL_WRITE_RATIO}x raw at full (each write committed alone);`,
    `  every scenario >= ${EXPRESS_MULTIPLE}x Express; the whole list of 100,000 books streamed within ${MEMORY_GROWTH_MIB} MiB of idle RSS`,
  ]
  let missed = 0
  let checked = 0
  const check = (ok: boolean, text: string) => {
    checked++
    if (!ok) missed++
    lines.push(`  ${ok ? 'PASS' : 'MISS'}  ${text}`)
  }
  // A share of a baseline ("0.91 of raw"), or a multiple of it ("5.20x Express") where the target is one.
  const share = (name: string, value: number | undefined, target: number, result: ScenarioResult) =>
    check(
      value !== undefined && value >= target,
      target >= 1
        ? `${ratio2(value)}x ${name} (>= ${target}x) on ${label(result)}`
        : `${ratio2(value)} of ${name} (>= ${target}) on ${label(result)}`,
    )
  for (const result of results) {
    const { target, service, reference } = result
    if (target === undefined) continue
    if (target.kind === 'read') {
      share('raw', over(service, reference), RAW_READ_RATIO, result)
      share('Elysia', over(service, result.baselines?.elysia?.load), ELYSIA_READ_RATIO, result)
      if (reference) {
        const limit = READ_P99_MULTIPLE * reference.p99Ms
        check(
          service.requests > 0 && service.p99Ms <= limit,
          `service p99 ${p99Of(service)} ms (<= ${READ_P99_MULTIPLE} x raw's ${p99Of(reference)} = ${ms(limit)}) on ${label(result)}`,
        )
      }
    } else {
      const wanted = target.durability === 'normal' ? NORMAL_WRITE_RATIO : FULL_WRITE_RATIO
      share(`raw at ${target.durability}`, over(service, reference), wanted, result)
    }
  }
  for (const result of results) {
    if (result.target === undefined) continue
    share('Express', over(result.service, result.baselines?.express?.load), EXPRESS_MULTIPLE, result)
  }
  if (memory !== undefined && memory.runs.length > 0) {
    const growths = memory.runs.map((r) => (r.peakKb - r.baselineKb) / 1024)
    const growth = median(growths)
    check(
      growth <= MEMORY_GROWTH_MIB,
      `peak RSS ${growth.toFixed(1)} MiB over idle (median of ${growths.map((g) => g.toFixed(1)).join(' / ')}; <= ${MEMORY_GROWTH_MIB}) on GET all ${memory.books.toLocaleString('en-US')} books`,
    )
  }
  lines.push(`  overall: ${missed === 0 ? 'PASS' : `MISS (${missed} of ${checked} checks missed)`}`)
  return lines.join('\n')
}

/** Issue 10's targets over what this run measured. */
export function targetsSection(results: readonly ScenarioResult[], memory: MemoryResult | undefined): string {
  return ["### Issue 10's targets", '', '```', comparisonTargets(results, memory), '```'].join('\n')
}
