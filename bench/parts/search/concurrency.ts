/**
 * A heavy search must not hold the others: four copies of the family's worst page at once (each
 * sent again as soon as it is answered, by bench/parts/search/crowd.ts in a process of its own),
 * while a fifth client, this process, asks a seeded sample of the family's other queries' pages
 * one at a time. What counts is the fifth client's latency against the budget, beside the same
 * pages' latency alone (from the passes).
 */
import { join } from 'node:path'
import { pinning } from '../../harness/measure'
import { median } from '../../harness/statistics'
import { ask, type PageTiming } from './pages'
import { seededRandom, shuffled } from './seeded-random'
import type { ServerUnderTest } from './under-test'

export const CROWD = 4
/** The fifth client stops after this long once it has asked FIFTH_CLIENT_LEAST pages, and after FIFTH_CLIENT_MOST_MS once it has one. */
const FIFTH_CLIENT_MS = 60_000
const FIFTH_CLIENT_LEAST = 5
const FIFTH_CLIENT_MOST_MS = 150_000
/** How long the crowd's last answers are waited for once it is told to stop. */
const CROWD_GRACE_MS = 20_000

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

/** Each line of `stream` to `line` as it comes; resolves when the stream ends. */
async function eachLine(stream: ReadableStream<Uint8Array>, line: (text: string) => void): Promise<void> {
  const decoder = new TextDecoder()
  let text = ''
  for await (const chunk of stream) {
    text += decoder.decode(chunk, { stream: true })
    for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n')) {
      line(text.slice(0, at))
      text = text.slice(at + 1)
    }
  }
}

export async function crowdRound(
  server: ServerUnderTest,
  timings: readonly PageTiming[],
  sample: number,
  seed: number,
): Promise<CrowdRound | undefined> {
  // The worst page, answered or not (a page the service gave no answer to is the worst of all).
  const answered = timings.filter((t) => t.status === 200)
  const heavy = timings.reduce<PageTiming | undefined>(
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
  const answers: { ms: number; status: string }[] = []
  let sent!: () => void
  const crowdStarted = new Promise<void>((resolve) => {
    sent = resolve
  })
  const read = eachLine(crowd.stdout, (line) => {
    if (line === 'started') return sent()
    const [ms, status = 'failed'] = line.split(' ')
    answers.push({ ms: Number(ms), status })
  })
  await Promise.race([crowdStarted, read])
  // Its first requests are on their way: let the service take them before the fifth client's.
  await Bun.sleep(100)
  const measured = []
  const soft = performance.now() + FIFTH_CLIENT_MS
  const hard = performance.now() + FIFTH_CLIENT_MOST_MS
  for (const timing of others) {
    // The crowd may hold each page for seconds: past the time allowed, a few pages are enough.
    const now = performance.now()
    if ((measured.length >= FIFTH_CLIENT_LEAST && now > soft) || (measured.length > 0 && now > hard)) break
    const answer = await ask(server.origin, timing.page.path)
    measured.push({ timing, ms: answer.ms, status: answer.status })
  }
  crowd.stdin.end()
  // The answers in flight may take as long again: what they took is not the fifth client's figure.
  const gone = await Promise.race([crowd.exited.then(() => true), Bun.sleep(CROWD_GRACE_MS).then(() => false)])
  if (!gone) crowd.kill('SIGKILL')
  await crowd.exited
  await read
  return {
    heavy,
    others: measured,
    crowdAnswers: answers.length,
    crowdMedianMs: median(answers.map((a) => a.ms)),
    crowdFailed: answers.filter((a) => a.status !== '200').length,
    seconds: (performance.now() - started) / 1000,
  }
}
