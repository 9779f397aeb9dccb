/**
 * What the search bench (bench/parts/search/search.ts) measured, as its report reads it, and how
 * the report writes a page, a backend and a size.
 */
import type { ImportRun } from '../million/data'
import { ms } from '../million/report'
import type { CrowdRound } from './concurrency'
import type { FamilyQuery } from './family'
import type { SearchBackend } from './load'
import type { PageTiming } from './pages'
import type { RecallResult } from './recall'

/** A first page within this many ms at 100,000 books and at 1,000,000 (issue 34). */
export const BUDGET_MS: Readonly<Record<number, number>> = { 100000: 50, 1000000: 250 }
export const budgetOf = (books: number) => BUDGET_MS[books] ?? (books <= 100_000 ? 50 : 250)
/** SQLite's import of 1,000,000 books at most this multiple of 100,000's (issue 34, point 7). */
export const IMPORT_MULTIPLE = 12

export interface SearchCell {
  readonly backend: SearchBackend
  readonly books: number
  readonly catalogue: { readonly authors: number; readonly collections: number; readonly titleWords: number }
  readonly family: readonly FamilyQuery[]
  readonly familyHash: string
  readonly importRun: ImportRun
  readonly vacuumSeconds?: number
  readonly referenceSeconds: number
  readonly service: readonly PageTiming[]
  readonly reference: readonly PageTiming[]
  readonly recall: RecallResult
  readonly crowd?: CrowdRound
  /** Times a server was started afresh after a page it gave no answer to. */
  readonly restarts: { readonly service: number; readonly reference: number }
  /** The machine's one-minute load average as the size started and ended: how shared it was. */
  readonly load: { readonly start: number; readonly end: number }
  readonly seconds: number
}

export interface SearchResult {
  /** The commit measured. */
  readonly build: string
  readonly seed: number
  readonly passes: number
  /** Per size, in the order of the sizes: a page over this many ms at the first pass was asked once (pages.ts). */
  readonly onceOverMs: readonly number[]
  readonly crowdSample: number
  readonly cells: readonly SearchCell[]
  readonly seconds: number
}

export const NAMES: Record<SearchBackend, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' }
export const count = (n: number) => n.toLocaleString('en-US')
export const short = (books: number) => (books >= 1_000_000 ? `${books / 1_000_000}M` : `${books / 1000}k`)
export const code = (text: string) => `\`${text}\``
/** A page's figure, and why there is no answer where there is none. */
export const figure = (t: PageTiming) =>
  `${ms(t.medianMs)}${t.status === 200 ? '' : t.status === 0 ? ' (no answer)' : ` (answered ${t.status})`}`
export const pageName = (t: PageTiming) =>
  `${code(t.page.query.text)}${t.page.order === 'ranked' ? '' : ` sort=${t.page.order}`}`
export const sorted = (timings: readonly PageTiming[]) => timings.filter((t) => t.page.order !== 'ranked')
export const ranked = (timings: readonly PageTiming[]) => timings.filter((t) => t.page.order === 'ranked')
export const where = (cell: SearchCell) => `${NAMES[cell.backend]} ${short(cell.books)}`
