import { StoreUnavailableError } from '../faults'
import { sqliteFault } from './faults'

/*
 * Waiting for a lock another connection holds, on timers rather than in SQLite's busy handler,
 * which would sleep in the thread and stop every request of this process meanwhile.
 */

/**
 * A short wait before trying for a lock again: up to 0.25 ms, doubling to 2 ms, with jitter so that
 * processes waiting for the same lock do not all try at once. Short, since another process holds
 * the lock for one group commit (a millisecond or two); a longer ceiling (20 ms) left the lock idle
 * between commits and made two workers' POSTs slower than one's. A failed try costs microseconds.
 */
export function lockBackoff(attempt: number): Promise<void> {
  const ceiling = Math.min(2, 0.25 * 2 ** attempt)
  return Bun.sleep(Math.random() * ceiling)
}

/** What a write that waited out BUSY_TIMEOUT for the write lock fails with (503, Retry-After: 1). */
export function lockedOut(busyTimeoutMs: number): StoreUnavailableError {
  return new StoreUnavailableError(
    'busy',
    'SQLITE_BUSY',
    `database is locked: another connection held the write lock for ${busyTimeoutMs} ms`,
  )
}

/**
 * Runs a read; a fault of the database leaves as StoreUnavailableError. WAL readers do not wait
 * for writers, but a read can meet SQLITE_BUSY while another process recovers or removes the WAL:
 * it is tried again on a timer, as BEGIN is, until `busyTimeoutMs`.
 */
export async function readRetrying<T>(busyTimeoutMs: number, read: () => T): Promise<T> {
  const deadline = Date.now() + busyTimeoutMs
  for (let attempt = 0; ; attempt++) {
    try {
      return read()
    } catch (error) {
      const fault = sqliteFault(error)
      if (fault?.reason !== 'busy' || Date.now() >= deadline) throw fault ?? error
    }
    await lockBackoff(attempt)
  }
}
