/**
 * The search bench's pages and how they are timed: each query of the family asked for its first
 * page of 20 ranked (no sort) and sorted (`sort=name`, `sort=-name`), one request at a time from
 * this process (the bench, on core 1) to the server's (core 0), over one keep-alive connection,
 * from sending to the last byte of the body. Several passes over every page, each pass in its own
 * seeded order, the servers taking turns (in order, then in reverse) so that a slow spell of the
 * shared machine falls on all of them; a page's figure is the median of its passes.
 */
import { median } from '../../harness/statistics'
import type { FamilyQuery } from './family'
import { seededRandom, shuffled } from './seeded-random'
import type { ServerUnderTest } from './under-test'

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

/**
 * How long the bench waits for a page: 40 times the budget at a million books, whose verdict no
 * longer waiting changes. Past it, as when the service closes the connection first (its idle
 * timeout, 30 s), the page has no answer (status 0).
 */
export const PAGE_LIMIT_MS = 10_000

export async function ask(origin: string, path: string): Promise<Answer> {
  const started = performance.now()
  try {
    const response = await fetch(origin + path, { headers, signal: AbortSignal.timeout(PAGE_LIMIT_MS) })
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

/** Kinds whose pages are cheap whatever the catalogue: a warm-up never waits on a heavy one. */
const LIGHT_KINDS: readonly string[] = ['nothing', 'one typo', 'two typos', 'last name']

/** A few light pages first: a fresh process's JIT and caches, the same head start for every server. */
async function warm(server: ServerUnderTest, pages: readonly SearchPage[], seed: number): Promise<void> {
  const light = pages.filter((page) => LIGHT_KINDS.includes(page.query.kind))
  for (const page of shuffled(seededRandom(seed), light).slice(0, 20)) await ask(server.origin, page.path)
}

/**
 * Every page on every server, `passes` times; per server, each page's timing. A page that took
 * more than `onceOverMs` the first time is not asked again by that server: it is that far over
 * its budget whatever the repeats say, and at a million books such a page can take a minute.
 */
export async function timePasses(
  servers: readonly ServerUnderTest[],
  pages: readonly SearchPage[],
  passes: number,
  seed: number,
  onceOverMs: number,
  progress: (line: string) => void,
): Promise<Map<ServerUnderTest, PageTiming[]>> {
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
        const answer = await ask(server.origin, page.path)
        answers.set(page.key, [...earlier, answer])
        if (answer.status === 0) {
          // No answer (in PAGE_LIMIT_MS, or the service's idle timeout closed the connection): its
          // search goes on in the server, which would slow every page after it.
          progress(`${server.name}: no answer to ${page.path} after ${Math.round(answer.ms)} ms; restarting it`)
          await server.restart()
          await warm(server, pages, seed)
        }
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
