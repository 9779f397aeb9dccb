import { httpError } from '../../jsonapi/errors'
import { type RateLimiter, secondsLeft } from './rate-limiter'

/*
 * RATE_LIMIT across the workers of one service (`--workers N`): the supervisor holds the counts,
 * in one RateLimiter and by its one clock, and each worker asks it for every request it counts,
 * over the IPC channel Bun.spawn opened between them. So the limit holds exactly whichever worker
 * a connection lands on, as RateLimit-Policy's q says, and a worker started again loses nothing.
 *
 * Measured (bench/standalone/rate-limit-cost.ts: GET of one author at 16 connections, the limit
 * off and on side by side, the CPU of every process of the service per request, on the shared
 * 2-core machine): with `--workers 2` the limit adds 30 µs a request (21-38 over six rounds; the
 * supervisor's share 5-8 µs) to 126 µs, and one round trip of latency, during which the worker
 * serves others. With one process the count stays in the process (rate-limiter.ts): 5 µs (0.5-11.5)
 * over 107 µs, 5,000-9,000 of a single GET's 90,000 instructions, as before; off, nothing runs.
 * The asks of one turn of a worker's event loop share one message (3 to 5 under that load).
 *
 * The alternatives weighed: a shared SQLite file (WAL, synchronous=OFF, one upsert a request) was
 * exact and synchronous at 5-7 µs a request, but two workers contending for its write lock slept
 * in SQLite's busy handler, blocking their event loops: 1 ms for 1 request in 1,000, up to 185 ms
 * at worst; leasing allowance to workers in batches would not be exact.
 */

/**
 * A worker's question: count one request of each of `keys`. The asks of one turn of its event loop
 * go in one message (under load, several requests arrive in a turn): each message costs both
 * processes a wake-up and a system call or two, whatever it holds.
 */
export interface RateAsk {
  readonly kind: 'rate'
  /** The number of the first ask; the others follow in order. */
  readonly first: number
  readonly keys: readonly string[]
}

/**
 * The supervisor's answer, for each key of an ask in turn, two numbers: the requests of the key in
 * its window, this one included, and the whole seconds left of the window.
 */
export interface RateAnswer {
  readonly kind: 'rate'
  readonly first: number
  readonly counts: readonly number[]
}

/** One request counted: the requests of its key in the window, this one included, and the whole seconds left of it. */
export interface RateCount {
  readonly count: number
  readonly reset: number
}

/** Whether an IPC message is a worker's RateAsk. */
export function isRateAsk(message: unknown): message is RateAsk {
  const ask = message as Partial<RateAsk> | null
  return (
    ask?.kind === 'rate' &&
    typeof ask.first === 'number' &&
    Array.isArray(ask.keys) &&
    ask.keys.every((key) => typeof key === 'string')
  )
}

/** The supervisor's side: counts each key of `ask` in `limiter`, which counts for every worker. */
export function answerRateAsk(limiter: RateLimiter, ask: RateAsk): RateAnswer {
  const now = limiter.now()
  const counts: number[] = []
  for (const key of ask.keys) {
    const window = limiter.hit(key, now)
    counts.push(window.count, secondsLeft(window, now))
  }
  return { kind: 'rate', first: ask.first, counts }
}

/** A worker that cannot ask its supervisor is stopping: the request is told to come again (to another). */
const unreachable = httpError(
  503,
  'The service is stopping and cannot count this request against its rate limit; try again',
  undefined,
  { 'retry-after': '1' },
)

/** A worker's side: the count of each request, asked of the supervisor. */
export class SharedRateLimit {
  /** The number the next ask gets. */
  private next = 0
  /** The keys asked in this turn of the event loop, not sent yet. */
  private keys: string[] = []
  private readonly waiting = new Map<number, PromiseWithResolvers<RateCount>>()
  private open = true

  /** `send` passes an ask to the supervisor (process.send); the answers come to `received`. */
  constructor(
    readonly limit: number,
    private readonly send: (ask: RateAsk) => unknown,
  ) {}

  /** Counts one request of `key`, in the window every worker shares. */
  count(key: string): Promise<RateCount> {
    if (!this.open) return Promise.reject(unreachable)
    const waiting = Promise.withResolvers<RateCount>()
    this.waiting.set(this.next++, waiting)
    // Sent once this turn's requests have all asked: after the I/O the loop is handling now.
    if (this.keys.push(key) === 1) setImmediate(this.flush)
    return waiting.promise
  }

  private readonly flush = (): void => {
    const keys = this.keys
    this.keys = []
    const first = this.next - keys.length
    try {
      this.send({ kind: 'rate', first, keys })
    } catch {
      for (let id = first; id < first + keys.length; id++) this.refuse(id)
    }
  }

  private refuse(id: number): void {
    this.waiting.get(id)?.reject(unreachable)
    this.waiting.delete(id)
  }

  /** An IPC message from the supervisor: the answers to an ask, if it is one. */
  received(message: unknown): void {
    const answer = message as Partial<RateAnswer> | null
    if (answer?.kind !== 'rate' || typeof answer.first !== 'number' || !Array.isArray(answer.counts)) return
    const { first, counts } = answer
    for (let i = 0; i + 1 < counts.length; i += 2) {
      const id = first + i / 2
      this.waiting.get(id)?.resolve({ count: counts[i] as number, reset: counts[i + 1] as number })
      this.waiting.delete(id)
    }
  }

  /** The channel closed (the supervisor is gone): every ask waiting, and every later one, is refused. */
  close(): void {
    this.open = false
    this.keys = []
    for (const id of [...this.waiting.keys()]) this.refuse(id)
  }
}

/** This worker's SharedRateLimit, over its channel to the supervisor that started it (process.send). */
export function supervisedRateLimit(limit: number): SharedRateLimit {
  const shared = new SharedRateLimit(limit, (ask) => {
    // send's false only says the message waits in a backlog; it is still sent.
    if (!process.connected || !process.send) throw new Error('no channel to the supervisor')
    process.send(ask)
  })
  process.on('message', (message) => shared.received(message))
  process.on('disconnect', () => shared.close())
  return shared
}
