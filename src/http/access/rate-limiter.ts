/**
 * Requests counted per key (a token's name or a client address) in fixed windows of a minute, in
 * this process's memory (with workers, the supervisor's, for all of them: shared-rate-limit.ts). A key's window starts with its first request and lasts WINDOW_MS; the
 * next request after that starts a new one. Fixed windows let a client send up to twice the limit
 * across a window's end; in exchange each key costs one small record and one lookup per request.
 */

export const WINDOW_MS = 60_000
/**
 * Most keys tracked at once (about 100 bytes each). Expired windows are dropped first; past the
 * cap the oldest window is dropped too, which gives that key a fresh allowance: only a client
 * with more addresses than this in one minute gets that far, and the memory stays bounded.
 */
export const DEFAULT_RATE_LIMIT_KEYS = 100_000

export interface RateWindow {
  /** When the window began, in the clock's milliseconds. */
  start: number
  /** Requests in it so far, this one included. */
  count: number
}

export interface RateLimitOptions {
  /** Requests a key may make in a window. */
  readonly perMinute: number
  readonly maxKeys?: number
  /** Milliseconds from a monotonic origin; `performance.now` unless a test drives time. */
  readonly clock?: () => number
}

export class RateLimiter {
  readonly limit: number
  /** Insertion order is the order the windows started in, so the oldest come first. */
  private readonly windows = new Map<string, RateWindow>()
  private readonly maxKeys: number
  private readonly clock: () => number

  constructor({ perMinute, maxKeys = DEFAULT_RATE_LIMIT_KEYS, clock = () => performance.now() }: RateLimitOptions) {
    this.limit = perMinute
    this.maxKeys = maxKeys
    this.clock = clock
  }

  /** Keys tracked now. */
  get size(): number {
    return this.windows.size
  }

  /** The clock's time, to pass to `hit` and `secondsLeft`. */
  now(): number {
    return this.clock()
  }

  /** Counts one request for `key` at `now` and returns its window. */
  hit(key: string, now: number): RateWindow {
    let window = this.windows.get(key)
    if (window && now - window.start >= WINDOW_MS) {
      // A new window: moved to the end, where the newest start.
      this.windows.delete(key)
      window = undefined
    }
    if (!window) {
      this.dropExpired(now)
      if (this.windows.size >= this.maxKeys) {
        const oldest = this.windows.keys().next()
        if (!oldest.done) this.windows.delete(oldest.value)
      }
      window = { start: now, count: 0 }
      this.windows.set(key, window)
    }
    window.count++
    return window
  }

  private dropExpired(now: number): void {
    for (const [key, window] of this.windows) {
      if (now - window.start < WINDOW_MS) return
      this.windows.delete(key)
    }
  }
}

/** Whole seconds until `window` ends: at least 1, so that a client told to wait does wait. */
export function secondsLeft(window: RateWindow, now: number): number {
  // From the time elapsed: (start + WINDOW_MS) - now can come out a hair over WINDOW_MS in floating point.
  return Math.max(1, Math.ceil((WINDOW_MS - (now - window.start)) / 1000))
}
