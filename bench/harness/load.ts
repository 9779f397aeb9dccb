/**
 * The load generator: a fixed number of keep-alive connections, each sending its next request as
 * soon as the previous answer is read, for a fixed time. Run in its own process so that it does
 * not share an event loop (or, pinned, a core) with the server it measures:
 *
 *   bun bench/harness/load.ts '<LoadPlan as JSON>'   (prints a LoadRound as JSON)
 */

export interface LoadPlan {
  /** Origin of the server; only loopback is allowed. */
  readonly origin: string
  readonly method: 'GET' | 'POST' | 'PATCH' | 'DELETE'
  /**
   * `{n}` is replaced by a random integer from 1 to `randomMax` on every request (the same one in
   * the path and the body); `{next}` by the next integer of a sequence from `sequenceFrom` (each
   * used by one request only: the ids of the books a DELETE run deletes).
   */
  readonly path: string
  /** As `path`, plus `{seq}`, a tag unique to the request (for distinct book names). */
  readonly body?: string
  readonly randomMax: number
  /** Where `{next}` starts (default 1); a later run of the plan starts after the `sent` of the earlier ones. */
  readonly sequenceFrom?: number
  readonly expectStatus: number
  readonly concurrency: number
  readonly warmupMs: number
  readonly durationMs: number
}

/** Latencies as [milliseconds, how many requests took that long] pairs, in any order. */
export type LatencyCounts = readonly (readonly [number, number])[]

/** One run of a plan: raw samples, so that several rounds can be merged before taking percentiles. */
export interface LoadRound {
  /** Requests started in the measured window and answered as expected. */
  readonly requests: number
  /** Their latencies. */
  readonly latenciesMs: LatencyCounts
  /** From the end of the warm-up to the last measured answer. */
  readonly seconds: number
  readonly errors: number
  readonly firstError?: string
  /** Every answer, warm-up included: what the server's CPU time is divided by. */
  readonly answered: number
  /** Every request made, warm-up included, answered or not: how far a `{next}` sequence went. */
  readonly sent: number
  /** CPU the load generator itself used, per second of its run: near 1 means it may be the limit. */
  readonly clientCores: number
}

export interface LoadSummary {
  readonly requests: number
  readonly perSecond: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly errors: number
  readonly firstError?: string
  readonly answered: number
  readonly clientCores: number
}

/** A safety stop for each connection's loop, far above what a few seconds on loopback can reach. */
const MAX_REQUESTS_PER_CONNECTION = 1_000_000

/** Nearest-rank percentile of counted values sorted by value. */
function percentile(sorted: LatencyCounts, total: number, p: number): number {
  if (total === 0) return Number.NaN
  const rank = Math.min(total, Math.max(1, Math.ceil(p * total)))
  let seen = 0
  for (const [value, count] of sorted) {
    seen += count
    if (seen >= rank) return value
  }
  return Number.NaN
}

/** Pools rounds: requests over total measured time, percentiles over every sample. */
export function summarize(rounds: readonly LoadRound[]): LoadSummary {
  const sorted = rounds.flatMap((r) => r.latenciesMs).sort((a, b) => a[0] - b[0])
  const requests = rounds.reduce((sum, r) => sum + r.requests, 0)
  const seconds = rounds.reduce((sum, r) => sum + r.seconds, 0)
  const firstError = rounds.find((r) => r.firstError !== undefined)?.firstError
  return {
    requests,
    perSecond: seconds > 0 ? requests / seconds : 0,
    p50Ms: percentile(sorted, requests, 0.5),
    p99Ms: percentile(sorted, requests, 0.99),
    errors: rounds.reduce((sum, r) => sum + r.errors, 0),
    ...(firstError === undefined ? {} : { firstError }),
    answered: rounds.reduce((sum, r) => sum + r.answered, 0),
    clientCores: Math.max(...rounds.map((r) => r.clientCores)),
  }
}

export async function runLoad(plan: LoadPlan): Promise<LoadRound> {
  if (!/^http:\/\/127\.0\.0\.1:\d+$/.test(plan.origin))
    throw new Error(`load: refusing a non-loopback target ${plan.origin}`)
  // identity: Bun's fetch asks for compression by default, which the service gives and the
  // reference does not; the bench compares the same bytes.
  const headers: Record<string, string> = { accept: 'application/vnd.api+json', 'accept-encoding': 'identity' }
  if (plan.body !== undefined) headers['content-type'] = 'application/vnd.api+json'
  const random = () => String(1 + Math.floor(Math.random() * plan.randomMax))

  const cpuBefore = process.cpuUsage()
  const start = performance.now()
  const measureFrom = start + plan.warmupMs
  const stopAt = measureFrom + plan.durationMs
  const latenciesMs: number[] = []
  let errors = 0
  let firstError: string | undefined
  let lastAnswer = measureFrom
  let answered = 0
  let next = plan.sequenceFrom ?? 1

  async function connection(index: number): Promise<void> {
    for (let i = 0; i < MAX_REQUESTS_PER_CONNECTION; i++) {
      const sent = performance.now()
      if (sent >= stopAt) return
      const n = random()
      const id = String(next++)
      const fill = (text: string) => text.replaceAll('{n}', n).replaceAll('{next}', id)
      // No abort signal per request: it costs the client a quarter of its throughput. A hung round
      // is ended from outside instead (measure.ts kills this process after a grace period).
      const init: RequestInit = { method: plan.method, headers }
      if (plan.body !== undefined) init.body = fill(plan.body).replaceAll('{seq}', `${index}-${i}`)
      let failure: string | undefined
      try {
        const response = await fetch(plan.origin + fill(plan.path), init)
        // The whole body is read: a request is done when the client has every byte.
        const body = await response.arrayBuffer()
        if (response.status !== plan.expectStatus) {
          failure = `${plan.method} ${plan.path}: ${response.status} ${new TextDecoder().decode(body).slice(0, 300)}`
        }
      } catch (error) {
        failure = `${plan.method} ${plan.path}: ${(error as Error).message}`
      }
      const done = performance.now()
      answered++
      if (sent < measureFrom) continue
      lastAnswer = Math.max(lastAnswer, done)
      if (failure === undefined) latenciesMs.push(Math.round((done - sent) * 1000) / 1000)
      else {
        errors++
        firstError ??= failure
      }
    }
  }

  await Promise.all(Array.from({ length: plan.concurrency }, (_, index) => connection(index)))
  const cpu = process.cpuUsage(cpuBefore)
  return {
    requests: latenciesMs.length,
    latenciesMs: latenciesMs.map((ms) => [ms, 1] as const),
    seconds: (lastAnswer - measureFrom) / 1000,
    errors,
    ...(firstError === undefined ? {} : { firstError }),
    answered,
    sent: next - (plan.sequenceFrom ?? 1),
    clientCores: (cpu.user + cpu.system) / 1000 / (performance.now() - start),
  }
}

if (import.meta.main) {
  const plan = JSON.parse(Bun.argv[2] ?? '') as LoadPlan
  console.log(JSON.stringify(await runLoad(plan)))
}
