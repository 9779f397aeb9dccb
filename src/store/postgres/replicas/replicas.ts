import { AsyncLocalStorage } from 'node:async_hooks'
import type { SQL } from 'bun'
import type { ReadRouting, ReplicaReport, RequestKind } from '../../read-routing'
import { sqlState, storeError } from '../faults'
import { RecentCommits } from './recent-commits'
import { Probe, Replica, type ReplicaStateListener, replicaName } from './replica'
import { DEFAULT_WAL_GEOMETRY, PrimaryTimeline, parseLsn, recordEnd, type WalGeometry } from './wal-positions'

/** How often the primary's WAL position and each replica's replay position are asked for. */
export const POLL_MS = 100
/** REPLICA_MAX_LAG's default: 5 seconds. */
export const DEFAULT_REPLICA_MAX_LAG_MS = 5000
/** Seconds to wait for a connection to a replica: a replica that does not answer costs no longer. */
const REPLICA_CONNECT_TIMEOUT_SECONDS = 2

export interface ReplicaSetOptions {
  readonly urls: readonly string[]
  /** A replica further behind than this is not read from (REPLICA_MAX_LAG; DEFAULT_REPLICA_MAX_LAG_MS). */
  readonly maxLagMs?: number
  /** How the primary's pool is set up (postgresClientOptions): each replica's pool is set up alike. */
  readonly clientOptions: SQL.PostgresOrMySQLOptions
  /** The most clients whose last commit is remembered (RecentCommits). */
  readonly capacity?: number
  /** Told each time a replica changes state, for the log (the state it left, then its report). */
  readonly onStateChange?: ReplicaStateListener
}

/**
 * Which database a connection reaches: its cluster's system identifier, and the database's oid and
 * name. A physical standby replays the primary's catalog, so each of its databases has the
 * primary's oid and name; a standby's other database (another catalogue, say) shares the cluster
 * but not the oid.
 */
interface DatabaseIdentity {
  readonly system: string
  readonly oid: string
  readonly name: string
}

/** The columns of a DatabaseIdentity, in a poll's query. */
const IDENTITY_COLUMNS = `(SELECT system_identifier::text FROM pg_control_system()) AS system,
  (SELECT oid::text FROM pg_database WHERE datname = current_database()) AS database_oid,
  current_database() AS database_name`

function identityOf(row: Record<string, unknown> | undefined): DatabaseIdentity {
  return { system: String(row?.system), oid: String(row?.database_oid), name: String(row?.database_name) }
}

function sameDatabase(a: DatabaseIdentity, b: DatabaseIdentity): boolean {
  return a.system === b.system && a.oid === b.oid && a.name === b.name
}

/** As the log shows it: `catalogue (oid 16384) in cluster 7391...`. */
function shownIdentity(identity: DatabaseIdentity): string {
  return `${identity.name} (oid ${identity.oid}) in cluster ${identity.system}`
}

/** What one request's reads run on: chosen at its first read, then kept. */
interface Scope {
  readonly client: string
  readonly kind: RequestKind
  node: Replica | 'primary' | undefined
}

/**
 * The primary and its read replicas (docs/postgres.md, "Read replicas"). A request's reads go to
 * one node, chosen at its first read and kept for the rest (a streamed list, its version and every
 * batch): a replica whose replay has passed the client's last commit and that lags by no more than
 * REPLICA_MAX_LAG, else the primary. Writes, and the reads of a request that writes, go to the
 * primary. A read that fails on a replica is read again on the primary, within the request.
 *
 * Every POLL_MS one small query on a connection of its own asks the primary for its WAL position
 * and each replica for its replay position; a replica that does not answer within
 * PROBE_TIMEOUT_MS, or whose read failed, is down until a poll answers again.
 */
export class ReplicaSet implements ReadRouting {
  private readonly scopes = new AsyncLocalStorage<Scope>()
  private readonly timeline: PrimaryTimeline
  private readonly commits: RecentCommits
  private readonly replicaList: Replica[]
  private primaryCount = 0
  private closed = false
  private next = 0
  private timer: ReturnType<typeof setInterval> | undefined

  private constructor(
    private readonly primaryProbe: Probe,
    private readonly geometry: WalGeometry,
    /** The primary's database; polled again, since a restore may make it anew under the same name. */
    private primaryDatabase: DatabaseIdentity,
    replicas: Replica[],
    private readonly maxLagMs: number,
    capacity: number | undefined,
  ) {
    this.replicaList = replicas
    // A second more than the lag asked about, so that a position that old is always known.
    this.timeline = new PrimaryTimeline(maxLagMs + 1000)
    this.commits = new RecentCommits(this.timeline, capacity)
  }

  /**
   * Opens a pool per replica, asks the primary for what judging them needs, and polls every node
   * once before resolving (a replica down at the start only starts as `down`). Rejects when the
   * primary does not answer.
   */
  static async start(primaryUrl: string, options: ReplicaSetOptions): Promise<ReplicaSet> {
    const connectionTimeout = Math.min(
      REPLICA_CONNECT_TIMEOUT_SECONDS,
      Number(options.clientOptions.connectionTimeout ?? REPLICA_CONNECT_TIMEOUT_SECONDS),
    )
    const probeOptions = { ...options.clientOptions, max: 1, connectionTimeout }
    const primaryProbe = new Probe(primaryUrl, probeOptions)
    let row: Record<string, unknown> | undefined
    try {
      ;[row] = await primaryProbe.ask(
        (sql) =>
          sql.unsafe(`SELECT current_setting('wal_block_size')::int AS block,
            (SELECT setting::bigint FROM pg_settings WHERE name = 'wal_segment_size') AS segment, ${IDENTITY_COLUMNS}`),
        'the primary',
      )
    } catch (error) {
      await primaryProbe.close().catch(() => {})
      throw storeError(error)
    }
    const geometry: WalGeometry = {
      blockSize: Number(row?.block ?? DEFAULT_WAL_GEOMETRY.blockSize),
      segmentSize: Number(row?.segment ?? DEFAULT_WAL_GEOMETRY.segmentSize),
    }
    const replicas = options.urls.map(
      (url) =>
        new Replica(
          replicaName(url),
          url,
          { ...options.clientOptions, connectionTimeout },
          new Probe(url, probeOptions),
          options.onStateChange,
        ),
    )
    const maxLagMs = options.maxLagMs ?? DEFAULT_REPLICA_MAX_LAG_MS
    const set = new ReplicaSet(primaryProbe, geometry, identityOf(row), replicas, maxLagMs, options.capacity)
    await set.poll()
    set.timer = setInterval(() => void set.poll(), POLL_MS)
    set.timer.unref?.()
    return set
  }

  forClient<T>(client: string, kind: RequestKind, work: () => T): T {
    return this.scopes.run({ client, kind, node: undefined }, work)
  }

  primaryReads(): number {
    return this.primaryCount
  }

  replicas(): readonly ReplicaReport[] {
    return this.replicaList.map((replica) => replica.report())
  }

  /**
   * Runs a read on the request's node (`primary`: the primary's pool), choosing it at the
   * request's first read. Outside any request, or in one that writes, the primary answers.
   */
  async read<T>(primary: SQL, work: (sql: SQL) => Promise<T>): Promise<T> {
    const scope = this.scopes.getStore()
    if (scope === undefined || scope.kind === 'write') return this.onPrimary(primary, work)
    scope.node ??= this.choose(scope.client)
    const node = scope.node
    if (node === 'primary') return this.onPrimary(primary, work)
    try {
      const answer = await node.run(work)
      node.reads++
      return answer
    } catch (error) {
      // Cancelled by its own STATEMENT_TIMEOUT: it would take as long on the primary.
      if (sqlState(error) === '57014') throw error
      node.fallbacks++
      // A connection that failed: no more reads there until a poll answers.
      if ((storeError(error) as { reason?: string }).reason === 'unavailable') node.down()
      scope.node = 'primary'
      return this.onPrimary(primary, work)
    }
  }

  /** A write `settled`: the client of the request it was made for (if any) reads the primary until a replica has it. */
  afterWrite<T>(write: Promise<T>): Promise<T> {
    const scope = this.scopes.getStore()
    if (scope === undefined) return write
    const remember = () => this.commits.committed(scope.client, performance.now())
    write.then(remember, remember)
    return write
  }

  async close(): Promise<void> {
    clearInterval(this.timer)
    this.closed = true
    await Promise.all([this.primaryProbe.close(), ...this.replicaList.map((replica) => replica.close())]).catch(
      () => {},
    )
  }

  private onPrimary<T>(primary: SQL, work: (sql: SQL) => Promise<T>): Promise<T> {
    this.primaryCount++
    return work(primary)
  }

  /** The next replica in turn that may answer `client`, else the primary. */
  private choose(client: string): Replica | 'primary' {
    const required = this.commits.required(client)
    const count = this.replicaList.length
    for (let i = 0; i < count; i++) {
      const at = (this.next + i) % count
      const replica = this.replicaList[at] as Replica
      if (replica.state === 'streaming' && replica.replay >= required) {
        this.next = (at + 1) % count
        return replica
      }
    }
    return 'primary'
  }

  /** One round of polls: the primary's position, then each replica's, none waiting on another that has not answered yet. */
  private async poll(): Promise<void> {
    await Promise.all([this.pollPrimary(), ...this.replicaList.map((replica) => this.pollReplica(replica))])
  }

  private async pollPrimary(): Promise<void> {
    const probe = this.primaryProbe
    if (probe.busy) return
    probe.busy = true
    const sentAt = performance.now()
    try {
      const [row] = await probe.ask(
        (sql) =>
          sql.unsafe(
            `SELECT pg_current_wal_insert_lsn()::text AS insert, pg_current_wal_flush_lsn()::text AS flush, ${IDENTITY_COLUMNS}`,
          ),
        'the primary',
      )
      this.primaryDatabase = identityOf(row)
      this.timeline.observe(sentAt, recordEnd(parseLsn(String(row.insert)), this.geometry), parseLsn(String(row.flush)))
      this.commits.forget(this.timeline.required(performance.now(), this.maxLagMs))
    } catch {
      // Not sampled this round: the replicas are judged against what is known; the writes fail on their own.
    } finally {
      probe.busy = false
    }
  }

  private async pollReplica(replica: Replica): Promise<void> {
    const probe = replica.probe
    if (probe.busy) return
    probe.busy = true
    try {
      const [row] = await probe.ask(
        (sql) =>
          sql.unsafe(
            `SELECT pg_is_in_recovery() AS standby, pg_last_wal_replay_lsn()::text AS replay, ${IDENTITY_COLUMNS}`,
          ),
        `the replica ${replica.name}`,
      )
      if (this.closed) return
      const database = identityOf(row)
      if (!sameDatabase(database, this.primaryDatabase)) {
        // Another cluster, or another database of it: its answers would be another catalogue's.
        replica.foreign = { database: shownIdentity(database), expected: shownIdentity(this.primaryDatabase) }
        replica.state = 'foreign'
      } else if (row.standby !== true) replica.state = 'not-standby'
      // A standby that has replayed nothing yet.
      else if (row.replay === null) replica.state = 'lagging'
      else {
        const now = performance.now()
        replica.replay = parseLsn(String(row.replay))
        replica.lagMs = this.timeline.lagMs(now, replica.replay)
        replica.state = replica.replay >= this.timeline.required(now, this.maxLagMs) ? 'streaming' : 'lagging'
      }
    } catch {
      replica.down()
    } finally {
      probe.busy = false
    }
  }
}
