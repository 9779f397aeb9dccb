/**
 * The search bench's pages and how they are timed: each query of the family asked for its first
 * page of 20 ranked (no sort) and sorted (`sort=name`, `sort=-name`), one request at a time from
 * this process (the bench, on core 1) to the server's (core 0), over one keep-alive connection,
 * from sending to the last byte of the body. Several passes over every page, each pass in its own
 * seeded order, the servers taking turns (in order, then in reverse) so that a slow spell of the
 * shared machine falls on all of them; a page's figure is the median of its passes.
 */
import type { RunningServer } from '../../harness/servers'
import { median } from '../../harness/statistics'
import type { FamilyQuery } from './family'
import { seededRandom, shuffled } from './seeded-random'

export const ORDERS = ['ranked', 'name', '-name'] as const
export type Order = (typeof ORDERS)[number]

export interface SearchPage {
  readonly query: FamilyQuery
  readonly order: Order
  readonly path: string
  /** Unique in a family: the order and the text. */
  readonly key: string
}

export const searchPath = (text: string, order: Order, extra = '') =>
  `/api/v1/books?filter[search]=${encodeURIComponent(text)}&page[size]=20${order === 'ranked' ? '' : `&sort=${order}`}${extra}`

export function pagesOf(family: readonly FamilyQuery[]): SearchPage[] {
  return family.flatMap((query) =>
    ORDERS.map((order) => ({ query, order, path: searchPath(query.text, order), key: `${order} ${query.text}` })),
  )
}

export interface Answer {
  readonly ms: number
  /** 0: the connection failed. */
  readonly status: number
  readonly body: string
}

const headers = { accept: 'application/vnd.api+json', 'accept-encoding': 'identity' }

export async function ask(origin: string, path: string): Promise<Answer> {
  const started = performance.now()
  try {
    const response = await fetch(origin + path, { headers })
    const body = await response.text()
    return { ms: performance.now() - started, status: response.status, body }
  } catch {
    return { ms: performance.now() - started, status: 0, body: '' }
  }
}

export interface PageTiming {
  readonly page: SearchPage
  readonly samplesMs: readonly number[]
  readonly medianMs: number
  /** The first status other than 200, or 200. */
  readonly status: number
  /** meta.total of the first answer. */
  readonly total?: number
}

function totalOf(body: string): number | undefined {
  try {
    return (JSON.parse(body) as { meta?: { total?: number } }).meta?.total
  } catch {
    return undefined
  }
}

/** A few pages first: a fresh process's JIT and caches, the same head start for every server. */
async function warm(server: RunningServer, pages: readonly SearchPage[], seed: number): Promise<void> {
  for (const page of shuffled(seededRandom(seed), pages).slice(0, 20)) await ask(server.origin, page.path)
}

/**
 * Every page on every server, `passes` times; per server, each page's timing. A page that took
 * more than `onceOverMs` the first time is not asked again by that server: it is that far over
 * its budget whatever the repeats say, and at a million books such a page can take a minute.
 */
export async function timePasses(
  servers: readonly RunningServer[],
  pages: readonly SearchPage[],
  passes: number,
  seed: number,
  onceOverMs: number,
  progress: (line: string) => void,
): Promise<Map<RunningServer, PageTiming[]>> {
  const samples = new Map(servers.map((server) => [server, new Map<string, Answer[]>()]))
  for (const server of servers) await warm(server, pages, seed)
  for (let pass = 0; pass < passes; pass++) {
    const order = shuffled(seededRandom(seed + 1000 + pass), pages)
    for (const server of pass % 2 === 0 ? servers : [...servers].reverse()) {
      const started = performance.now()
      const answers = samples.get(server) ?? new Map<string, Answer[]>()
      let skipped = 0
      for (const page of order) {
        const earlier = answers.get(page.key) ?? []
        if ((earlier[0]?.ms ?? 0) > onceOverMs) {
          skipped++
          continue
        }
        answers.set(page.key, [...earlier, await ask(server.origin, page.path)])
      }
      const over = skipped > 0 ? ` (${skipped} pages over ${onceOverMs} ms the first time not asked again)` : ''
      progress(
        `${server.name} pass ${pass + 1}/${passes}: ${((performance.now() - started) / 1000).toFixed(1)} s${over}`,
      )
    }
  }
  return new Map(
    servers.map((server) => [
      server,
      pages.map((page) => {
        const answers = samples.get(server)?.get(page.key) ?? []
        const total = answers[0] ? totalOf(answers[0].body) : undefined
        const status = answers.find((a) => a.status !== 200)?.status ?? 200
        const samplesMs = answers.map((a) => a.ms)
        return { page, samplesMs, medianMs: median(samplesMs), status, ...(total === undefined ? {} : { total }) }
      }),
    ]),
  )
}

/** The value below which a share `p` of the figures lie (nearest rank). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? Number.NaN
}

export interface PageSummary {
  readonly pages: number
  readonly worst: PageTiming | undefined
  readonly p50: number
  readonly p90: number
  readonly p99: number
  readonly overBudget: number
  /** Pages answered otherwise than 200. */
  readonly failed: number
  /** Pages with one sample (over the repeat limit the first time, or a single pass). */
  readonly once: number
}

export function summarize(timings: readonly PageTiming[], budgetMs: number): PageSummary {
  const ms = timings.map((t) => t.medianMs)
  const worst = timings.reduce<PageTiming | undefined>(
    (w, t) => (w === undefined || t.medianMs > w.medianMs ? t : w),
    undefined,
  )
  return {
    pages: timings.length,
    worst,
    p50: percentile(ms, 0.5),
    p90: percentile(ms, 0.9),
    p99: percentile(ms, 0.99),
    overBudget: ms.filter((m) => m > budgetMs).length,
    failed: timings.filter((t) => t.status !== 200).length,
    once: timings.filter((t) => t.samplesMs.length === 1).length,
  }
}
