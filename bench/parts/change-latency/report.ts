/**
 * The change-latency part's figures: per round, the percentiles of the times from a write's answer
 * (and from its sending) to its change's arrival on a stream, over every (write, stream) pair; per
 * setup and stream count, the median of the rounds' figures with their lowest and highest.
 */
import { median } from '../../harness/statistics'
import { markdownTable } from '../../harness/tables'
import type { RoundResult } from './round'

/** The value at `fraction` of the sorted values (nearest rank). */
export function percentile(sorted: readonly number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))
  return sorted[rank] as number
}

/** One round's figures. */
export interface RoundFigures {
  readonly fromAck: { readonly p50: number; readonly p99: number; readonly max: number }
  readonly fromSend: { readonly p50: number; readonly p99: number; readonly max: number }
  /** Of the expected arrivals, the share that came within 1 s of the write's answer (a missing one did not). */
  readonly withinSecond: number
  readonly answerP99: number
}

const summary = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), max: sorted.at(-1) ?? Number.NaN }
}

export function figuresOf(round: RoundResult): RoundFigures {
  const within = round.fromAckMs.filter((ms) => ms <= 1000).length
  return {
    fromAck: summary(round.fromAckMs),
    fromSend: summary(round.fromSendMs),
    withinSecond: round.expected === 0 ? Number.NaN : within / round.expected,
    answerP99: summary(round.answerMs).p99,
  }
}

/** The rounds of one setup at one stream count. */
export interface Cell {
  readonly setup: string
  readonly streams: number
  readonly rounds: readonly RoundResult[]
}

const ms = (value: number) => (Number.isNaN(value) ? '—' : value >= 100 ? value.toFixed(0) : value.toFixed(1))
const share = (value: number) => (Number.isNaN(value) ? '—' : value.toFixed(4))
/** "median (lowest to highest)" of one figure over the rounds, or the figure alone for one round. */
function spread(values: readonly number[], format: (value: number) => string): string {
  if (values.length === 1) return format(values[0] as number)
  return `${format(median(values))} (${format(Math.min(...values))} to ${format(Math.max(...values))})`
}

export const HEADER = [
  'setup',
  'streams',
  'writes/s sent',
  'from answer p50 ms',
  'p99',
  'max',
  'from sending p50 ms',
  'p99',
  'max',
  'within 1 s of the answer',
  'write answer p99 ms',
  'arrived / expected, missing, twice',
  'longest other transaction on the cluster ms',
]

export function cellRow(cell: Cell): string[] {
  const figures = cell.rounds.map(figuresOf)
  const of = (pick: (f: RoundFigures) => number, format = ms) => spread(figures.map(pick), format)
  const sum = (pick: (r: RoundResult) => number) => cell.rounds.reduce((total, round) => total + pick(round), 0)
  return [
    cell.setup,
    String(cell.streams),
    spread(
      cell.rounds.map((r) => r.sentPerSecond),
      (v) => v.toFixed(1),
    ),
    of((f) => f.fromAck.p50),
    of((f) => f.fromAck.p99),
    of((f) => f.fromAck.max),
    of((f) => f.fromSend.p50),
    of((f) => f.fromSend.p99),
    of((f) => f.fromSend.max),
    of((f) => f.withinSecond, share),
    of((f) => f.answerP99),
    `${sum((r) => r.fromAckMs.length)} / ${sum((r) => r.expected)}, ${sum((r) => r.missing)}, ${sum((r) => r.duplicates)}`,
    cell.rounds.every((r) => r.longestOtherMs === undefined)
      ? '—'
      : spread(
          cell.rounds.map((r) => r.longestOtherMs ?? Number.NaN),
          ms,
        ),
  ]
}

/** Problems a reader must see beside the figures: failed writes, streams that ended, events not understood. */
export function problems(cells: readonly Cell[]): string[] {
  const lines: string[] = []
  for (const cell of cells) {
    for (const [i, round] of cell.rounds.entries()) {
      const at = `${cell.setup}, ${cell.streams} streams, round ${i + 1}`
      if (round.writeErrors > 0) lines.push(`${at}: ${round.writeErrors} writes failed (${round.firstWriteError})`)
      if (round.streamEnded !== undefined) lines.push(`${at}: ${round.streamEnded}`)
      if (round.malformed > 0) lines.push(`${at}: ${round.malformed} events without a change record`)
      if (round.missing > 0) lines.push(`${at}: ${round.missing} changes never arrived on a stream`)
      if (round.duplicates > 0) lines.push(`${at}: ${round.duplicates} changes arrived twice on a stream`)
    }
  }
  return lines
}

export function latencySection(cells: readonly Cell[], intro: string): string {
  const trouble = problems(cells)
  return [
    intro,
    '',
    markdownTable(HEADER, cells.map(cellRow)),
    '',
    ...(trouble.length === 0
      ? ['Every acknowledged write arrived once on every stream.']
      : ['Problems:', '', ...trouble.map((line) => `- ${line}`)]),
  ].join('\n')
}
