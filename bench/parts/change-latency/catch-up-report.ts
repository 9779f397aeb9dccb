/**
 * The catch-up case's figures: per backend, stream count and server, how the streams ended, the
 * changes a second each stream was fed (over the streams that got every change), all streams
 * together, and GET one book meanwhile; the service over its reference.
 */
import { median } from '../../harness/statistics'
import { markdownTable } from '../../harness/tables'
import type { Probed } from './book-probe'
import { type CatchUpBackend, type CatchUpCase, outcomes } from './catch-up'
import { percentile } from './report'

const NAMES = { sqlite: 'SQLite, one process', postgres: 'PostgreSQL, one instance' } as const

const whole = (value: number) => (Number.isNaN(value) ? '—' : Math.round(value).toLocaleString('en-US'))
const ms = (value: number) => (Number.isNaN(value) ? '—' : value >= 100 ? value.toFixed(0) : value.toFixed(1))

/** Changes a second of each stream that got every change. */
function rates(one: CatchUpCase): number[] {
  return one.results.filter((r) => r.outcome === 'complete' && r.ms > 0).map((r) => (r.received / r.ms) * 1000)
}

function rateCell(values: readonly number[]): string {
  if (values.length === 0) return '—'
  if (values.length === 1) return whole(values[0] as number)
  return `${whole(median(values))} (${whole(Math.min(...values))}-${whole(Math.max(...values))})`
}

function probeCell(probed: Probed): string {
  const sorted = [...probed.ms].sort((a, b) => a - b)
  if (sorted.length === 0) return `— (0 answers${probed.errors > 0 ? `, ${probed.errors} failed` : ''})`
  const figures = [percentile(sorted, 0.5), percentile(sorted, 0.9), sorted.at(-1) as number].map(ms).join(' / ')
  return `${figures} (${sorted.length}${probed.errors > 0 ? `, ${probed.errors} failed` : ''})`
}

export const CATCH_UP_HEADER = [
  'setup',
  'streams',
  'server',
  'how the streams ended',
  'changes/s a stream, median (min-max)',
  'all streams, changes/s',
  'caught up in s, median (max)',
  'first event ms, median',
  'GET /api/v1/books/1 ms p50 / p90 / max (answers)',
  'service / reference, changes/s a stream',
]

function caseRow(backend: CatchUpBackend, one: CatchUpCase, reference: CatchUpCase | undefined): string[] {
  const own = rates(one)
  const complete = one.results.filter((r) => r.outcome === 'complete')
  const received = one.results.reduce((sum, r) => sum + r.received, 0)
  const times = complete.map((r) => r.ms / 1000)
  const firsts = one.results.flatMap((r) => (r.firstEventMs === undefined ? [] : [r.firstEventMs]))
  const theirs = reference ? rates(reference) : []
  const ratio =
    one.server === 'service' && own.length > 0 && theirs.length > 0 ? (median(own) / median(theirs)).toFixed(2) : '—'
  return [
    NAMES[backend.backend],
    String(one.streams),
    one.server,
    outcomes(one.results, backend.changes),
    rateCell(own),
    whole((received / one.wallMs) * 1000),
    times.length === 0 ? '—' : `${median(times).toFixed(2)} (${Math.max(...times).toFixed(2)})`,
    firsts.length === 0 ? '—' : ms(median(firsts)),
    probeCell(one.during),
    ratio,
  ]
}

function rowsOf(backend: CatchUpBackend): string[][] {
  const rows: string[][] = (['service', 'reference'] as const).map((server) => [
    NAMES[backend.backend],
    '0',
    server,
    'no stream open',
    '—',
    '—',
    '—',
    '—',
    probeCell(backend.alone[server]),
    '—',
  ])
  for (const one of backend.cases) {
    if (one.server !== 'service') continue
    const reference = backend.cases.find((c) => c.server === 'reference' && c.streams === one.streams)
    rows.push(caseRow(backend, one, reference))
    if (reference) rows.push(caseRow(backend, reference, undefined))
  }
  return rows
}

/** What a reader must see beside the figures: each way a stream ended short, with the first reason. */
export function catchUpProblems(backends: readonly CatchUpBackend[]): string[] {
  const lines: string[] = []
  for (const backend of backends) {
    for (const one of backend.cases) {
      const failed = one.results.filter((r) => r.outcome !== 'complete')
      if (failed.length === 0) continue
      const first = failed[0]
      lines.push(
        `${NAMES[backend.backend]}, ${one.server}, ${one.streams} streams: ${outcomes(failed, backend.changes)}${first?.detail ? ` (the first: ${first.detail})` : ''}`,
      )
    }
  }
  return lines
}

export function catchUpSection(backends: readonly CatchUpBackend[], intro: string): string {
  const trouble = catchUpProblems(backends)
  return [
    intro,
    '',
    markdownTable(CATCH_UP_HEADER, backends.flatMap(rowsOf)),
    '',
    ...(trouble.length === 0
      ? ['Every stream got every change of the feed once, in order.']
      : ['Streams that did not get every change:', '', ...trouble.map((line) => `- ${line}`)]),
  ].join('\n')
}
