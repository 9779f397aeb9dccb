/**
 * The report's figures as markdown: the table layout, how a rate, a latency, a CPU figure and a
 * ratio are written, and the service-beside-reference tables several parts print.
 */
import type { LoadSummary } from './load'
import type { ScenarioResult } from './scenario'

/** Load-generator CPU, in cores, above which it rather than the server is taken to set req/s. */
export const CLIENT_BOUND_CORES = 0.9

export const rate = (value: number) => Math.round(value).toLocaleString('en-US')
export const clientBound = (load: LoadSummary) => load.clientCores >= CLIENT_BOUND_CORES
export const rateOf = (load: LoadSummary) => `${rate(load.perSecond)}${clientBound(load) ? '\\*' : ''}`
export const ms = (value: number) => value.toFixed(2)
export const cpu = (value: number | undefined) =>
  value === undefined ? '—' : Math.round(value).toLocaleString('en-US')
/** No answer in the measured window (a very slow request in a short run): no percentile. */
export const p99Of = (load: LoadSummary) => (load.requests === 0 ? '—' : ms(load.p99Ms))
export const ratio2 = (value: number | undefined) =>
  value === undefined || !Number.isFinite(value) ? '—' : value.toFixed(2)
export const over = (service: LoadSummary, baseline: LoadSummary | undefined) =>
  baseline === undefined ? undefined : service.perSecond / baseline.perSecond

export function label(result: ScenarioResult): string {
  return `${result.name} (c=${result.concurrency})`
}

export function ratioOf(result: ScenarioResult): number | undefined {
  return result.reference ? result.service.perSecond / result.reference.perSecond : undefined
}

/**
 * A markdown table with padded columns, the first column left-aligned and the rest right-aligned:
 * the layout Biome's formatter gives, so that the written bench/results/full.md passes `bun run check`.
 */
export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, i) => Math.max(title.length, 3, ...rows.map((row) => (row[i] ?? '').length)))
  const line = (cells: readonly string[]) =>
    `| ${widths.map((w, i) => (i === 0 ? (cells[i] ?? '').padEnd(w) : (cells[i] ?? '').padStart(w))).join(' | ')} |`
  const rule = `| ${widths.map((w, i) => (i === 0 ? '-'.repeat(w) : `${'-'.repeat(w - 1)}:`)).join(' | ')} |`
  return [line(header), rule, ...rows.map(line)].join('\n')
}

export function table(results: readonly ScenarioResult[]): string {
  const header = [
    'scenario',
    'service req/s',
    'reference req/s',
    'ratio (service/reference)',
    'service p50 (ms)',
    'service p99 (ms)',
    'reference p99 (ms)',
  ]
  const rows = results.map((result) => {
    const { service, reference } = result
    const ratio = ratioOf(result)
    return [
      label(result),
      rateOf(service),
      reference ? rateOf(reference) : '—',
      ratio === undefined ? '—' : ratio.toFixed(2),
      ms(service.p50Ms),
      ms(service.p99Ms),
      reference ? ms(reference.p99Ms) : '—',
    ]
  })
  const text = markdownTable(header, rows)
  if (!results.some((r) => clientBound(r.service) || (r.reference && clientBound(r.reference)))) return text
  return `${text}

\\* The load generator was at least ${CLIENT_BOUND_CORES} of its core busy: it, not the server, set this rate (a reference held back this way makes the ratio flatter the service). The CPU table below compares what each server itself spends per request.`
}

/** Where the server's CPU goes per request: less noisy than req/s when the client shares the cores. */
export function cpuTable(results: readonly ScenarioResult[]): string {
  const header = [
    'scenario',
    'service CPU µs/req',
    'reference CPU µs/req',
    'load generator cores busy (service / reference)',
  ]
  const rows = results.map((result) => [
    label(result),
    cpu(result.serviceCpuUs),
    cpu(result.referenceCpuUs),
    [result.service, result.reference].map((r) => (r ? r.clientCores.toFixed(2) : '—')).join(' / '),
  ])
  return markdownTable(header, rows)
}

/** Which scenarios were compared with the reference and which the service ran alone. */
export function referenceNote(results: readonly ScenarioResult[]): string {
  const names = (compared: boolean) => [
    ...new Set(results.filter((r) => (r.reference !== undefined) === compared).map((r) => r.name)),
  ]
  const lines = []
  const withReference = names(true)
  const alone = names(false)
  if (withReference.length > 0) {
    lines.push(`Compared with the reference (its answers checked byte for byte): ${withReference.join('; ')}.`)
  }
  if (alone.length > 0) lines.push(`Service only, no reference route ("—"): ${alone.join('; ')}.`)
  return lines.join('\n')
}
