/**
 * A heavy search must not hold the others: four copies of the family's worst page at once (each
 * sent again as soon as it is answered, by bench/parts/search/crowd.ts in a process of its own),
 * while a fifth client, this process, asks a seeded sample of the family's other queries' pages
 * one at a time. What counts is the fifth client's latency against the budget, beside the same
 * pages' latency alone (from the passes).
 */
import { join } from 'node:path'
import { pinning } from '../../harness/measure'
import type { RunningServer } from '../../harness/servers'
import { median } from '../../harness/statistics'
import { ask, type PageTiming } from './pages'
import { seededRandom, shuffled } from './seeded-random'

export const CROWD = 4
/** The fifth client stops after this long, once it has asked at least FIFTH_CLIENT_LEAST pages. */
const FIFTH_CLIENT_MS = 90_000
const FIFTH_CLIENT_LEAST = 10

export interface CrowdRound {
  /** The page the crowd asked, with its timing alone. */
  readonly heavy: PageTiming
  /** The fifth client's pages: each with its latency among the crowd and alone. */
  readonly others: readonly { readonly timing: PageTiming; readonly ms: number; readonly status: number }[]
  readonly crowdAnswers: number
  readonly crowdMedianMs: number
  /** The crowd's answers other than 200. */
  readonly crowdFailed: number
  readonly seconds: number
}

/** The crowd's standard output, read as it comes: its first line, then the rest once it ends. */
function lines(stream: ReadableStream<Uint8Array>) {
  const reader = stream.getReader()
  const decoder = new TextDecoder()
  let text = ''
  const more = async () => {
    const { done, value } = await reader.read()
    if (!done) text += decoder.decode(value, { stream: true })
    return !done
  }
  return {
    async first(): Promise<string> {
      while (!text.includes('\n') && (await more())) {}
      const at = text.indexOf('\n')
      const line = at === -1 ? text : text.slice(0, at)
      text = at === -1 ? '' : text.slice(at + 1)
      return line
    },
    async rest(): Promise<string> {
      while (await more()) {}
      return text
    },
  }
}

export async function crowdRound(
  server: RunningServer,
  timings: readonly PageTiming[],
  sample: number,
  seed: number,
): Promise<CrowdRound | undefined> {
  const answered = timings.filter((t) => t.status === 200)
  const heavy = answered.reduce<PageTiming | undefined>(
    (w, t) => (w === undefined || t.medianMs > w.medianMs ? t : w),
    undefined,
  )
  if (heavy === undefined) return undefined
  const others = shuffled(
    seededRandom(seed + 2000),
    answered.filter((t) => t.page.query.text !== heavy.page.query.text),
  ).slice(0, sample)
  const started = performance.now()
  const crowd = Bun.spawn(
    [...pinning.client, 'bun', join(import.meta.dir, 'crowd.ts'), server.origin, String(CROWD), heavy.page.path],
    { stdin: 'pipe', stdout: 'pipe', stderr: 'inherit' },
  )
  const output = lines(crowd.stdout)
  const line = await output.first()
  if (line !== 'started') throw new Error(`the crowd did not start (${line})`)
  // Its first requests are on their way: let the service take them before the fifth client's.
  await Bun.sleep(100)
  const measured = []
  const until = performance.now() + FIFTH_CLIENT_MS
  for (const timing of others) {
    // The crowd may hold each page for seconds: past the time allowed, a few pages are enough.
    if (measured.length >= FIFTH_CLIENT_LEAST && performance.now() > until) break
    const answer = await ask(server.origin, timing.page.path)
    measured.push({ timing, ms: answer.ms, status: answer.status })
  }
  crowd.stdin.end()
  const rest = await output.rest()
  await crowd.exited
  const result = JSON.parse(rest.trim()) as { latencies: number[]; statuses: Record<string, number> }
  return {
    heavy,
    others: measured,
    crowdAnswers: result.latencies.length,
    crowdMedianMs: median(result.latencies),
    crowdFailed: Object.entries(result.statuses).reduce((n, [status, count]) => n + (status === '200' ? 0 : count), 0),
    seconds: (performance.now() - started) / 1000,
  }
}
