import { JsonApiError } from '../jsonapi/errors'

/**
 * A search found heavy never holds the others: each search's cost is remembered from its last
 * run, and one that took HEAVY_SEARCH_MS or more runs next time in the heavy lane, one at a time
 * (the cheaper first, see PASS_TIMES), while every other search runs at once as before (on SQLite
 * in the read threads, the heavy lane in a thread of its own; on PostgreSQL on the pool). Measured
 * at 100,000 books (bench/parts/search/concurrency.ts, docs/performance.md): a fifth client's
 * search beside four of `a e i o u k` at once took 0.6-1.0 s on SQLite (2 read threads, each held
 * by a heavy search for 0.1-0.4 s while the others queued behind it; 8.5 s at 1,000,000 books) and
 * 64-132 ms on PostgreSQL (four heavy statements at once on 2 cores), against 7-25 ms alone; with
 * the lane, on a loaded machine, its worst 50-123 ms on SQLite (1.7-2.8 s before, in the same
 * runs) and 86-178 ms on PostgreSQL (108-129), most pages within 50 ms. The cost is what was
 * measured, not guessed from the words: the same words cost 5 ms or 2 s as the catalogue holds them.
 */

/**
 * A search that took this long is heavy: what a search may cost for one queued behind it (its own
 * p90 about 10 ms at 100,000 books) to stay within that size's 50 ms budget. Its CPU time in a read
 * thread (thread-time.ts), else its wall time (PostgreSQL). At 50 ms, the bound before, the
 * family's worst page at 100,000 books (16-25 ms alone on a quiet machine) was never heavy, and a
 * fifth client's pages beside four of it had a p90 of 106-181 ms on SQLite and 39-44 ms on
 * PostgreSQL, 15-17 of 30 and 1-2 of 30 over budget; at 20 ms, in the same runs, 19-23 ms and
 * 15-23 ms, 0-1 and 0 over (in a later round 11 of 30 on SQLite: a crowd's page whose thread's
 * cost stays just under the bound still runs beside the others). At 1,000,000 books, where more of the family costs 20 ms and so waits
 * its turn, its p90 rose from 47 to 77 ms on SQLite and from 59 to 164 ms on PostgreSQL, within the
 * 250 ms budget there (bun run bench -- search, two seeds, docs/performance.md).
 */
export const HEAVY_SEARCH_MS = 20

/**
 * A heavy search goes back to the others only once it costs less than this share of the bound: a
 * search near it would change lanes from one run to the next (the family's `the a` took 21-25 ms
 * at 100,000 books on a quiet machine, 45-71 ms on a loaded one), and each time it was ordinary,
 * four of it at once held the read threads.
 */
const LIGHT_AGAIN_SHARE = 0.5

/** Searches that run at once without slowing each other: the two cores this service is sized for. */
const SHARED_BY = 2

/** Heavy searches remembered, the least recently run forgotten first: a few hundred bytes each. */
const REMEMBERED = 1000

/** Where a search runs: at once beside the others, or in the heavy lane, one at a time. */
export type SearchLane = 'ordinary' | 'heavy'

/** What a search's work answers: its CPU time where it knows it (a read thread's), else its wall time counts. */
export interface LaneAnswer {
  readonly spentMs?: number
}

/**
 * A heavy search waiting for its turn lets the others pass while they would be done within this
 * many times its own cost: the cheaper goes first (a 64 ms search waited 0.6-0.8 s behind two of
 * four 300 ms ones in the order they came), and the costliest still has its turn.
 */
const PASS_TIMES = 10

interface Waiting {
  /** When it came, plus PASS_TIMES its cost: the earliest goes first. */
  readonly due: number
  readonly go: () => void
}

/** The client went away while its search waited or ran: its answer goes nowhere. */
export function clientGone(): JsonApiError {
  return new JsonApiError(499, [
    { status: '499', title: 'Client Closed Request', detail: 'The client went away before its search was answered' },
  ])
}

/** The lanes of one process's searches (see the opening comment). */
export class SearchLanes {
  /** Heavy searches by key, with their last cost in ms, the least recently run first. */
  private readonly costs = new Map<string, number>()
  private readonly waiting: Waiting[] = []
  private running = 0
  /** Searches running now, in either lane, and their count integrated over time (ms), to now. */
  private inFlight = 0
  private inFlightMs = 0
  private counted = performance.now()

  constructor(
    /** Heavy searches run at once: one, so that the other core stays with everything else. */
    private readonly heavyAtOnce = 1,
    /** The cost from which a search is heavy (HEAVY_SEARCH_MS; a test sets its own). */
    private readonly heavyMs = HEAVY_SEARCH_MS,
  ) {}

  /** Heavy searches waiting for their turn. */
  get queued(): number {
    return this.waiting.length
  }

  /** The remembered cost of a search, if it was heavy. */
  cost(key: string): number | undefined {
    return this.costs.get(key)
  }

  /**
   * Runs a search's `work` in its lane. `signal` is its client's: a heavy search whose client goes
   * away before its turn never runs (rejects with clientGone); `work` is given it to stop once running.
   */
  async run<T extends LaneAnswer>(
    key: string,
    signal: AbortSignal | undefined,
    work: (lane: SearchLane) => Promise<T>,
  ): Promise<T> {
    const known = this.costs.get(key)
    if (known === undefined) return this.measured(key, 'ordinary', signal, work)
    await this.turn(known, signal)
    try {
      return await this.measured(key, 'heavy', signal, work)
    } finally {
      this.running--
      this.next()
    }
  }

  private async measured<T extends LaneAnswer>(
    key: string,
    lane: SearchLane,
    signal: AbortSignal | undefined,
    work: (lane: SearchLane) => Promise<T>,
  ): Promise<T> {
    const started = performance.now()
    const before = this.count(1)
    try {
      const answer = await work(lane)
      this.remember(key, answer.spentMs ?? this.share(started, before))
      return answer
    } catch (error) {
      // Stopped or failed part way: what it took says it is heavy at least, never that it is light.
      const ms = this.share(started, before)
      if (ms >= this.heavyMs) this.remember(key, ms)
      // Whatever stopped it (a cancelled statement, a stopped thread), the client is what went.
      throw signal?.aborted ? clientGone() : error
    } finally {
      this.count(-1)
    }
  }

  /** Moves the count of searches in flight by `by`; the integral up to now. */
  private count(by: number): number {
    const now = performance.now()
    this.inFlightMs += this.inFlight * (now - this.counted)
    this.counted = now
    this.inFlight += by
    return this.inFlightMs
  }

  /**
   * A search's cost from its wall time (PostgreSQL, where its CPU time is the server's): its share
   * of SHARED_BY, the searches that can run at once, while more ran beside it. Without it, 32
   * clients asking a 15 ms search at once took 0.5 s each, all of them heavy, and one at a time
   * (0.63 of the throughput before, bun run bench -- before-after).
   */
  private share(started: number, before: number): number {
    const wall = performance.now() - started
    const beside = wall > 0 ? (this.count(0) - before) / wall : 1
    return wall * Math.min(1, SHARED_BY / Math.max(1, beside))
  }

  private remember(key: string, ms: number): void {
    const wasHeavy = this.costs.delete(key)
    if (ms < (wasHeavy ? LIGHT_AGAIN_SHARE * this.heavyMs : this.heavyMs)) return
    this.costs.set(key, ms)
    if (this.costs.size > REMEMBERED) this.costs.delete(this.costs.keys().next().value as string)
  }

  /**
   * Resolves when a heavy search of this cost may run, in the order of PASS_TIMES: a cheaper one
   * passes the costliest, which still has its turn (the same search, remembered at another cost
   * each time, keeps its order but for a tenth of it).
   */
  private turn(cost: number, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return Promise.reject(clientGone())
    if (this.running < this.heavyAtOnce && this.waiting.length === 0) {
      this.running++
      return Promise.resolve()
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const at = this.waiting.indexOf(entry)
        if (at !== -1) this.waiting.splice(at, 1)
        reject(clientGone())
      }
      const entry: Waiting = {
        due: performance.now() + PASS_TIMES * cost,
        go: () => {
          signal?.removeEventListener('abort', onAbort)
          resolve()
        },
      }
      const at = this.waiting.findIndex((other) => other.due > entry.due)
      this.waiting.splice(at === -1 ? this.waiting.length : at, 0, entry)
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  private next(): void {
    while (this.running < this.heavyAtOnce) {
      const entry = this.waiting.shift()
      if (!entry) return
      this.running++
      entry.go()
    }
  }
}

/** A search's key in the lanes: its type, the scope it runs in and its words as typed, case folded. */
export function searchKey(type: string, scope: string, text: string): string {
  return `${type}\u0000${scope}\u0000${text.toLowerCase().split(/\s+/u).filter(Boolean).join(' ')}`
}
