/**
 * What the million-book bench (bench/parts/million/million.ts) asks of the service, and the shape of what it
 * measures, shared with its report (bench/parts/million/report.ts).
 */
import { DEFAULT_LIMITS } from '../../../src/jsonapi/limits'
import { QUICK } from '../../harness/measure'
import type { ImportRun, KeptSet, MillionBackend, MillionSize } from './data'

export interface MillionCase {
  readonly key: string
  /** The row's name in the report. */
  readonly label: string
  readonly path: string
  /** Searches are held to the search targets; the plain page to its own. */
  readonly kind: 'ranked' | 'sorted' | 'plain page' | 'filtered page' | 'one record'
}

/** The longest search MAX_SEARCH_WORDS allows: words each in many books, none the start of another, that no book holds together. */
const longestSearch = ['book', 'author', 'collection', '1', '2', '3', '4', '5', '6', '7', '8', '9']
  .slice(0, DEFAULT_LIMITS.maxSearchWords)
  .join(' ')

const SEARCHES: readonly (readonly [string, string])[] = [
  ['book', 'a word in every title'],
  ['b', 'one character'],
  ['author 7', "an author's name"],
  ['édition', 'accented'],
  ['edition', 'unaccented'],
  ['zzzz', 'matches nothing'],
  [longestSearch, `${DEFAULT_LIMITS.maxSearchWords} words, the most allowed`],
]

const search = (query: string) => `/api/v1/books?filter[search]=${encodeURIComponent(query)}&page[size]=20`

export const MILLION_CASES: readonly MillionCase[] = [
  ...SEARCHES.map(([query, what]) => ({
    key: `ranked ${query}`,
    label: `ranked \`${query}\` (${what})`,
    path: search(query),
    kind: 'ranked' as const,
  })),
  ...SEARCHES.map(([query, what]) => ({
    key: `sorted ${query}`,
    label: `sorted \`${query}\` (${what})`,
    path: `${search(query)}&sort=-name`,
    kind: 'sorted' as const,
  })),
  {
    key: 'plain page',
    label: 'plain page `page[number]=2&page[size]=20`',
    path: '/api/v1/books?page[number]=2&page[size]=20',
    kind: 'plain page',
  },
  {
    key: 'filtered page',
    label: 'filtered page `filter[author]=7&page[size]=20`',
    path: '/api/v1/books?filter[author]=7&page[size]=20',
    kind: 'filtered page',
  },
  { key: 'one record', label: '`GET /books/1` (the yardstick)', path: '/api/v1/books/1', kind: 'one record' },
]

/** Requests per case after the warm-up: at least MIN, at most MAX, no more once BUDGET_MS is spent. */
export const MILLION_SAMPLES = QUICK ? { min: 3, max: 3, budgetMs: 1000 } : { min: 3, max: 9, budgetMs: 4000 }

export interface CaseTiming {
  readonly samplesMs: readonly number[]
  readonly medianMs: number
  readonly minMs: number
  readonly maxMs: number
  /** The first status other than 200, or 200. */
  readonly status: number
  /** meta.total of the warm-up answer, where it has one. */
  readonly total?: number
}

export interface MillionCell {
  readonly backend: MillionBackend
  readonly size: MillionSize
  readonly set: KeptSet
  readonly timings: ReadonlyMap<string, CaseTiming>
  readonly importRun: ImportRun
  /** Whether the import was the one that made the kept set this run (else a scratch import). */
  readonly importMadeSet: boolean
}

export interface MillionResult {
  readonly backends: readonly MillionBackend[]
  readonly sizes: readonly MillionSize[]
  readonly cells: readonly MillionCell[]
  readonly seconds: number
}
