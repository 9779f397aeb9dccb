import { sqlState, storeError } from './faults'

/**
 * How long a write keeps running again while PostgreSQL asks it to (see `RETRIED`) before the
 * client gets 503: writes of the same rows at once never need that long (they lock in one order,
 * postgres/lock-order.ts, so what remains is a transaction or two run again); a write that still
 * fails after it is one the database keeps refusing, and the client had better know.
 */
export const WRITE_RETRY_DEADLINE_MS = 5_000

/** The longest pause between two tries: a few milliseconds at first, doubling up to this. */
const MAX_PAUSE_MS = 50

/**
 * What PostgreSQL rolled back for the write to run again from the start:
 * - 40001 serialization_failure: the change feed's order check (postgres/feed-ddl.ts), raised by
 *   its trigger when a younger transaction committed a change to a row this one then changed;
 * - 40P01 deadlock_detected: two transactions each waiting for the other's rows (rare: the store's
 *   writes lock rows in one order, lock-order.ts; but an operator's own statements need not);
 * - 55P03 lock_not_available: a record that joined an owner while the write waited for the owner's
 *   lock, held by another write (lock-order.ts takes those last, without waiting); run again, the
 *   write finds it among the members and locks it in order;
 * - 23503 foreign_key_violation: a reference deleted, or a record added, between the statement's
 *   snapshot and its write; run again, the write's own checks see it and answer (422, 409).
 */
const RETRIED: ReadonlySet<string> = new Set(['40001', '40P01', '55P03', '23503'])

/**
 * Runs `attempt` until it succeeds, again after each error in `RETRIED` with a short random pause
 * (so that two writes that collided do not collide again in step), for up to
 * WRITE_RETRY_DEADLINE_MS; then, or at any other error, throws it as the store does (a fault as
 * StoreUnavailableError: 503).
 */
export async function retrying<T>(attempt: () => Promise<T>, deadlineMs = WRITE_RETRY_DEADLINE_MS): Promise<T> {
  const deadline = performance.now() + deadlineMs
  for (let tries = 1; ; tries++) {
    try {
      return await attempt()
    } catch (error) {
      const pause = Math.random() * Math.min(MAX_PAUSE_MS, 2 ** tries)
      if (!RETRIED.has(sqlState(error) ?? '') || performance.now() + pause >= deadline) throw storeError(error)
      await Bun.sleep(pause)
    }
  }
}
