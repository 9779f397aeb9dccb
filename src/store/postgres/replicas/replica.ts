import { SQL } from 'bun'
import type { ReplicaReport, ReplicaState } from '../../read-routing'

/*
 * One read replica of the PostgreSQL store (postgres/replicas/replicas.ts routes the reads): its pool, its
 * poll connection and its state.
 */

/** A poll not answered within this is a replica down (or a primary not sampled): it is not waited for. */
export const PROBE_TIMEOUT_MS = 1000

/** Told that a replica went from `previous` to the state its report shows. */
export type ReplicaStateListener = (replica: ReplicaReport, previous: ReplicaState) => void

/** host:port/database of a postgres:// URL: no user, no password. */
export function replicaName(url: string): string {
  const parsed = new URL(url)
  const database = parsed.pathname.replace(/^\//, '') || parsed.searchParams.get('dbname') || ''
  return `${parsed.hostname}:${parsed.port || '5432'}/${database}`
}

class ProbeTimeout extends Error {}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ProbeTimeout(`${what} did not answer within ${ms} ms`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/** One poll connection: replaced after a poll that timed out, since its connection may hang for good. */
export class Probe {
  private sql: SQL
  busy = false

  constructor(
    private readonly url: string,
    private readonly options: SQL.PostgresOrMySQLOptions,
  ) {
    this.sql = new SQL(url, options)
  }

  async ask<T>(query: (sql: SQL) => Promise<T>, what: string): Promise<T> {
    const sql = this.sql
    try {
      return await withTimeout(query(sql), PROBE_TIMEOUT_MS, what)
    } catch (error) {
      // Not answered in time: its connection may hang for good. A refused one is tried again as it is.
      if (error instanceof ProbeTimeout && this.sql === sql) {
        this.sql = new SQL(this.url, this.options)
        void sql.close({ timeout: 0 }).catch(() => {})
      }
      throw error
    }
  }

  close(): Promise<void> {
    return this.sql.close({ timeout: 1 })
  }
}

export class Replica {
  private current: ReplicaState = 'starting'
  /** Its replay position when last polled; it only grows, so a read finds it there or further on. */
  replay = -1
  lagMs: number | null = null
  reads = 0
  fallbacks = 0
  /** What a `foreign` replica reaches and what it should (ReplicaReport.foreign); set before the state. */
  foreign: ReplicaReport['foreign'] = undefined
  /** Replaced when the replica is found down: see down(). */
  private pool: SQL

  constructor(
    readonly name: string,
    private readonly url: string,
    private readonly options: SQL.PostgresOrMySQLOptions,
    readonly probe: Probe,
    private readonly onStateChange: ReplicaStateListener | undefined,
  ) {
    this.pool = new SQL(url, options)
  }

  get state(): ReplicaState {
    return this.current
  }

  set state(next: ReplicaState) {
    const previous = this.current
    if (next === previous) return
    this.current = next
    this.onStateChange?.(this.report(), previous)
  }

  run<T>(work: (sql: SQL) => Promise<T>): Promise<T> {
    return work(this.pool)
  }

  /**
   * Not read from until a poll answers again. Its pool is closed at once and a new one opened for
   * later: every read waiting on it fails now (and is read on the primary) rather than wait for a
   * replica that may never answer, at no cost to a read while the replica is up.
   */
  down(): void {
    if (this.state === 'down' || this.closed) return
    this.state = 'down'
    const lost = this.pool
    this.pool = new SQL(this.url, this.options)
    void lost.close({ timeout: 0 }).catch(() => {})
  }

  /** Closed with the store: a poll that answers later changes nothing. */
  private closed = false

  close(): Promise<void> {
    this.closed = true
    return Promise.all([this.probe.close(), this.pool.close({ timeout: 5 })]).then(() => {})
  }

  /** Its lag in whole milliseconds (poll times are fractional; /ready and the log show 1.602, not 1.6018027959999999). */
  report(): ReplicaReport {
    const { name, state, reads, fallbacks } = this
    const lagSeconds = this.lagMs === null ? null : Math.round(this.lagMs) / 1000
    return { name, state, lagSeconds, reads, fallbacks, ...(state === 'foreign' ? { foreign: this.foreign } : {}) }
  }
}
