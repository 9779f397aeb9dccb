/**
 * Why the database cannot serve a request right now, whatever the backend:
 * - `full`: no space left for a write;
 * - `read-only`: the database or its files cannot be written;
 * - `busy`: another connection held a lock past the busy timeout;
 * - `io`: the operating system failed a read or a write;
 * - `corrupt`: the file is damaged (an operator must restore it);
 * - `unavailable`: the database cannot be opened, is gone, or is out of memory;
 * - `replaced`: the SQLite file was replaced or removed under the running service, which must be
 *   restarted to serve what is there now (sqlite/file-guard.ts).
 */
export type StoreFaultReason = 'full' | 'read-only' | 'busy' | 'io' | 'corrupt' | 'unavailable' | 'replaced'

/**
 * How long a client should wait before trying again. A lock is usually released within a second;
 * space, permissions and disks need someone to act, so asking more often only adds load.
 */
const retryAfterSeconds: Readonly<Record<StoreFaultReason, number>> = {
  busy: 1,
  full: 5,
  'read-only': 5,
  io: 5,
  unavailable: 5,
  replaced: 5,
  corrupt: 30,
}

/** What each reason means, in words a client can read. */
const descriptions: Readonly<Record<StoreFaultReason, string>> = {
  full: 'disk full',
  'read-only': 'read-only',
  busy: 'locked by another connection',
  io: 'disk I/O error',
  corrupt: 'damaged',
  unavailable: 'cannot be opened',
  replaced: 'replaced or removed',
}

/**
 * The database cannot serve the request, for a reason outside the service's own code; nothing of
 * a write that fails with it is stored. The HTTP layer answers it with 503 and Retry-After.
 */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError'
  readonly retryAfterSeconds: number

  constructor(
    readonly reason: StoreFaultReason,
    /** The backend's own code for the failure (`SQLITE_FULL`), for the logs. */
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
    this.retryAfterSeconds = retryAfterSeconds[reason]
  }

  /** The reason in words: `disk full`. */
  get description(): string {
    return descriptions[this.reason]
  }
}
