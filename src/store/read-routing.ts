/**
 * How a store with read replicas (PostgreSQL with DATABASE_REPLICA_URL, docs/postgres.md) is told
 * whose request its calls are for, and what it reports of its replicas. The HTTP layer runs each
 * API request inside `forClient`; calls made outside any (the probes, operator commands, tests on
 * the store) read the primary.
 */

/** A request that writes: its reads (the checks before a write) go to the primary, and its commits are remembered. */
export type RequestKind = 'read' | 'write'

/**
 * - `starting`: not yet asked (the service has just started);
 * - `streaming`: a standby that has replayed what the primary had REPLICA_MAX_LAG ago: reads go to it;
 * - `lagging`: a standby further behind: skipped until it catches up;
 * - `down`: it does not answer, or a read on it failed: skipped until it answers again;
 * - `not-standby`: it answers but is not in recovery (promoted, or not a replica): never used;
 * - `foreign`: a standby of another cluster than the primary's, or a URL that names another
 *   database than the primary's (by name or oid): never used.
 */
export type ReplicaState = 'starting' | 'streaming' | 'lagging' | 'down' | 'not-standby' | 'foreign'

export interface ReplicaReport {
  /** host:port/database, without user or password. */
  readonly name: string
  readonly state: ReplicaState
  /** How far behind the primary it was when last asked, in seconds; null while not known. */
  readonly lagSeconds: number | null
  /** Reads it answered. */
  readonly reads: number
  /** Reads that failed on it and were answered by the primary instead. */
  readonly fallbacks: number
  /** While `foreign`: the database its URL reaches and the primary's, each `name (oid N) in cluster S`, for the log. */
  readonly foreign?: { readonly database: string; readonly expected: string }
}

export interface ReadRouting {
  /**
   * Runs `work` (one request's handling) with the store calls it makes counted as `client`'s (an
   * API token's name, else an address): its reads go to one node for the whole request, a replica
   * that has replayed the client's last commit where one has, else the primary.
   */
  forClient<T>(client: string, kind: RequestKind, work: () => T): T
  /** Reads the primary answered. */
  primaryReads(): number
  replicas(): readonly ReplicaReport[]
}
