import type { Logger } from '../../logger'
import type { StoreUnavailableError } from '../../store/faults'

/**
 * A fault that goes on is logged again at most this often, and a fault that comes back after this
 * long without failures is logged as a new one.
 */
export const FAULT_LOG_INTERVAL_MS = 60_000

interface Episode {
  readonly fault: StoreUnavailableError
  readonly since: number
  failures: number
  lastFailure: number
  lastLine: number
}

/**
 * Logs database faults once per episode rather than once per request: `database unavailable` when
 * one starts (or its cause changes), `database still unavailable` at most once a minute while
 * requests keep failing, `database available again` at the first write answered 2xx after it.
 */
export class FaultLog {
  private episode: Episode | null = null

  constructor(
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether a fault is being tracked, so that answers can be checked for its end. */
  get active(): boolean {
    return this.episode !== null
  }

  /** A request failed with `fault`. */
  failed(fault: StoreUnavailableError): void {
    const now = this.now()
    const episode = this.episode
    if (!episode || episode.fault.code !== fault.code || now - episode.lastFailure >= FAULT_LOG_INTERVAL_MS) {
      this.episode = { fault, since: now, failures: 1, lastFailure: now, lastLine: now }
      this.logger.log('error', 'database unavailable', {
        reason: fault.reason,
        code: fault.code,
        detail: fault.message,
        retry_after_s: fault.retryAfterSeconds,
      })
      return
    }
    episode.failures++
    episode.lastFailure = now
    if (now - episode.lastLine < FAULT_LOG_INTERVAL_MS) return
    episode.lastLine = now
    this.logger.log('error', 'database still unavailable', {
      reason: fault.reason,
      code: fault.code,
      detail: fault.message,
      failures: episode.failures,
      duration_ms: now - episode.since,
    })
  }

  /** A write was answered 2xx: the database takes writes again. */
  recovered(): void {
    const episode = this.episode
    if (!episode) return
    this.episode = null
    this.logger.log('info', 'database available again', {
      reason: episode.fault.reason,
      code: episode.fault.code,
      failures: episode.failures,
      duration_ms: this.now() - episode.since,
    })
  }
}
