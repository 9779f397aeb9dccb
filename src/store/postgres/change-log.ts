import { SQL } from 'bun'
import type { Change, ChangeOp, ChangeRead, ChangeWindow } from '../../model/changes'
import { START_OF_FEED } from '../../model/changes'
import { type ChangeLog, isChangePosition, POSITION_FORMS } from '../change-log'
import type { ChangeSignal } from '../change-signal'
import { StoreUnavailableError } from '../faults'
import { adoptHistory, HISTORY_SQL, partsOf, positionOf } from './change-history'
import { storeError } from './faults'

/** The channel other instances are woken on (LISTEN/NOTIFY, on a direct connection). */
const CHANNEL = 'catalogue_changes'
/** At most one NOTIFY per this many milliseconds: its queue lock is one every notifier takes. */
const NOTIFY_EVERY_MS = 50
/** How many changes a batch of pruning deletes: one short transaction each. */
const PRUNE_BATCH = 5000
/** The advisory lock one instance prunes under (others skip that round): no write ever takes it. */
const PRUNE_LOCK = 'catalogue change pruning'

/**
 * The bound below which rows are final: every transaction with an older id has ended (committed or
 * not), as of the statement's snapshot. That is the snapshot's oldest running transaction, less
 * those that write no change here: another database's sessions (xids are the whole server's) and
 * the server's own processes (autovacuum's ANALYZE takes an id, for a second on a large table). A
 * long transaction elsewhere on a shared server does not hold the feed back. A running transaction not found in pg_stat_activity (ended meanwhile, prepared, or not
 * shown to this user) counts, so the bound is never too high; it may be lower in one read than in
 * the one before (another database's transaction that ended between the snapshot and the read of
 * pg_stat_activity), which only delays what a read returns.
 */
const BOUND = `(SELECT COALESCE(MIN(x), pg_snapshot_xmax(pg_current_snapshot()))
  FROM pg_snapshot_xip(pg_current_snapshot()) AS x
  WHERE NOT EXISTS (
    SELECT 1 FROM pg_stat_activity a WHERE a.backend_xid = x::xid
      AND (a.datname IS DISTINCT FROM current_database() OR a.backend_type <> 'client backend')))`

/** Rows below the bound: final. */
const FINAL = `xid < ${BOUND}`

/**
 * The feed's horizon row is missing (or will not take the database's history): the database is
 * being restored or changed under the service (a `pg_restore` into it while it runs). A fault of
 * the database, not of our SQL: 503, and the service goes on once the row is back.
 */
function horizonMissing(): StoreUnavailableError {
  return new StoreUnavailableError(
    'unavailable',
    'FEED_HORIZON_MISSING',
    "the change feed's horizon row is missing: the database is being restored or changed under the service",
  )
}

interface ChangeRow {
  readonly xid: string
  readonly seq: string
  readonly type: string
  readonly record_id: string
  readonly op: ChangeOp
}

/** What the change log tells its opener, for the log. */
export interface ChangeLogEvents {
  /** The feed started over in a new history (adopt). */
  readonly restarted?: () => void
  /** LISTEN failed: streams rely on polling. */
  readonly listenFailed?: (error: unknown) => void
}

/**
 * The change feed on PostgreSQL (src/store/change-log.ts, postgres/feed-ddl.ts). Reads go to the
 * primary: a replica's snapshot horizon is the primary's as it replays, and a follower must not see
 * the feed go back when its next request lands elsewhere.
 */
export class PostgresChangeLog implements ChangeLog {
  private listener: { sql: SQL; unlisten: () => Promise<void> } | null = null
  private listening: Promise<void> | null = null
  private readonly wakes = new Set<() => void>()
  private notifyTimer: ReturnType<typeof setTimeout> | null = null
  /** When the last NOTIFY went (performance.now()). */
  private lastNotify = Number.NEGATIVE_INFINITY

  constructor(
    private readonly sql: SQL,
    private readonly signal: ChangeSignal,
    /** A direct connection's URL for LISTEN (not through PgBouncer); null: polling alone. */
    private readonly listenUrl: string | null,
    /** Told of what the service logs: the feed starting over in a new history, LISTEN failing. */
    private readonly told: ChangeLogEvents = {},
  ) {
    // Other instances' streams wake on this one's writes.
    signal.listen(() => this.notifySoon())
  }

  isPosition(text: string): boolean {
    return isChangePosition(text)
  }

  async read(window: ChangeWindow, adopted = false): Promise<ChangeRead> {
    // SQLite's form (a catalogue moved from SQLite), or one of a build before positions carried
    // their history: no position of this feed.
    const { after } = window
    if (after !== null && after !== START_OF_FEED && !POSITION_FORMS.postgres.test(after)) return { kind: 'gone' }
    const asked = after === null ? null : partsOf(after)
    // One statement, one snapshot: the history, the horizon, whether the position is a row, the rows
    // after it (or after the horizon) and the bound below which they are final. The horizon is read
    // with LIMIT 1: without statistics the planner takes the table for 1,060 rows, costs the read
    // past jit_above_cost, and compiling it took 40-50 ms of each read of 1,000 changes.
    const rows = (await this.query(
      `SELECT here.history, h.history AS stored, h.xid::text AS hxid, h.seq::text AS hseq, c.xid::text AS xid, c.seq::text AS seq, c.type, c.record_id::text AS record_id, c.op,
          EXISTS (SELECT 1 FROM changes WHERE xid = $1::xid8 AND seq = $2::bigint) AS held
         FROM (SELECT * FROM change_horizon LIMIT 1) h
         CROSS JOIN (SELECT ${HISTORY_SQL} AS history) here
         LEFT JOIN LATERAL (
           SELECT xid, seq, type, record_id, op FROM changes
             WHERE (xid, seq) > (COALESCE($1::xid8, h.xid), COALESCE($2::bigint, h.seq)) AND ${FINAL}
             ORDER BY xid, seq LIMIT $3
         ) c ON true`,
      [asked?.xid ?? null, asked?.seq ?? null, window.size],
    )) as (ChangeRow & {
      history: string
      stored: string
      hxid: string
      hseq: string
      held: boolean
    })[]
    const first = rows[0]
    if (!first) throw horizonMissing()
    const { history } = first
    if (first.stored !== history) {
      if (adopted) throw horizonMissing()
      await this.adopt()
      return this.read(window, true)
    }
    const horizon = positionOf(history, first.hxid, first.hseq)
    if (asked !== null) {
      // Another history's (the database was restored, re-created or promoted since); else the start
      // of the feed once pruned past, or no row of this database (pruned, ahead of every change, a
      // commit lost with a copy of the cluster put back: change-history.ts): read the lists again.
      if (asked.history !== null && asked.history !== history) return { kind: 'gone' }
      const valid = after === horizon || (after === START_OF_FEED ? horizon === START_OF_FEED : first.held)
      if (!valid) return { kind: 'gone' }
    }
    const types = window.types && new Set(window.types)
    const changes: Change[] = []
    let last: string | null = null
    let read = 0
    for (const row of rows) {
      if (row.xid === null) continue
      read++
      last = positionOf(history, row.xid, row.seq)
      if (!types || types.has(row.type)) {
        changes.push({ id: last, type: row.type, recordId: Number(row.record_id), op: row.op })
      }
    }
    return { kind: 'page', changes, next: last ?? after ?? horizon, rows: read }
  }

  async latest(adopted = false): Promise<string | null> {
    const [row] = (await this.query(
      `SELECT ${HISTORY_SQL} AS history, (SELECT history FROM change_horizon) AS stored, COALESCE(
          (SELECT xid::text || '.' || seq FROM changes WHERE ${FINAL} ORDER BY xid DESC, seq DESC LIMIT 1),
          (SELECT CASE WHEN xid = '0' THEN NULL ELSE xid::text || '.' || seq END FROM change_horizon)
        ) AS id`,
      [],
    )) as { history: string; stored: string; id: string | null }[]
    if (row && row.stored !== row.history) {
      if (adopted) throw horizonMissing()
      await this.adopt()
      return this.latest(true)
    }
    return row?.id ? `${row.history}.${row.id}` : null
  }

  async prune(seconds: number): Promise<number> {
    let removed = 0
    for (;;) {
      const count = await this.pruneBatch(seconds)
      removed += count ?? 0
      if (count !== PRUNE_BATCH) return removed
    }
  }

  async startOver(): Promise<void> {
    try {
      await this.sql.begin(async (tx) => {
        const [newest] = (await tx.unsafe(
          // By the columns: the text aliases would sort '99' after '100'.
          `SELECT xid::text AS xid, seq::text AS seq FROM changes WHERE ${FINAL} ORDER BY changes.xid DESC, changes.seq DESC LIMIT 1`,
        )) as { xid: string; seq: string }[]
        if (!newest) return
        await tx.unsafe('DELETE FROM changes WHERE (xid, seq) <= ($1::xid8, $2::bigint)', [newest.xid, newest.seq])
        await tx.unsafe('UPDATE change_horizon SET xid = $1::xid8, seq = $2::bigint', [newest.xid, newest.seq])
      })
    } catch (error) {
      throw storeError(error)
    }
  }

  /** Adopts the database's current history, once it differs from the one stored (change-history.ts). */
  private async adopt(untimed = false): Promise<void> {
    try {
      if (await adoptHistory(this.sql, untimed)) this.told.restarted?.()
    } catch (error) {
      throw storeError(error)
    }
  }

  /**
   * At an instance's start, before its first write: adopts the database's history if the start
   * found it changed (startHistory, on the start's connection). Not held to STATEMENT_TIMEOUT, as
   * the rest of a start is not (migrations, the schema check).
   */
  async adoptAtStart(moved: boolean): Promise<void> {
    if (moved) await this.adopt(true)
  }

  watch(wake: () => void): () => void {
    const local = this.signal.listen(wake)
    this.wakes.add(wake)
    if (this.listenUrl && !this.listening) this.listening = this.listen(this.listenUrl)
    return () => {
      local()
      this.wakes.delete(wake)
    }
  }

  async close(): Promise<void> {
    if (this.notifyTimer) clearTimeout(this.notifyTimer)
    const listener = this.listener
    this.listener = null
    if (listener) {
      await listener.unlisten().catch(() => {})
      await listener.sql.close({ timeout: 1 }).catch(() => {})
    }
  }

  /**
   * The oldest final changes while older than `seconds`, deleted and the horizon moved past them,
   * in one transaction; null when another instance is pruning.
   */
  private async pruneBatch(seconds: number): Promise<number | null> {
    try {
      return await this.sql.begin(async (tx) => {
        const [lock] = await tx`SELECT pg_try_advisory_xact_lock(hashtext(${PRUNE_LOCK})) AS locked`
        if (!lock?.locked) return null
        const rows = (await tx.unsafe(
          `SELECT xid::text AS xid, seq::text AS seq, at < now() - make_interval(secs => $1) AS old
             FROM changes WHERE ${FINAL} ORDER BY changes.xid, changes.seq LIMIT ${PRUNE_BATCH}`,
          [seconds],
        )) as { xid: string; seq: string; old: boolean }[]
        const end = rows.findIndex((row) => !row.old)
        const count = end === -1 ? rows.length : end
        const last = rows[count - 1]
        if (!last) return 0
        await tx.unsafe('DELETE FROM changes WHERE (xid, seq) <= ($1::xid8, $2::bigint)', [last.xid, last.seq])
        await tx.unsafe('UPDATE change_horizon SET xid = $1::xid8, seq = $2::bigint', [last.xid, last.seq])
        return count
      })
    } catch (error) {
      throw storeError(error)
    }
  }

  private async query(text: string, values: unknown[]): Promise<unknown[]> {
    try {
      return await this.sql.unsafe(text, values)
    } catch (error) {
      throw storeError(error)
    }
  }

  /** One NOTIFY for the writes of the last few milliseconds, outside every write's transaction. */
  private notifySoon(): void {
    if (this.notifyTimer) return
    // At once after a quiet spell; within a busy one, once per NOTIFY_EVERY_MS for all its writes.
    const wait = this.lastNotify + NOTIFY_EVERY_MS - performance.now()
    if (wait <= 0) {
      this.notifyNow()
      return
    }
    this.notifyTimer = setTimeout(() => {
      this.notifyTimer = null
      this.notifyNow()
    }, wait)
  }

  private notifyNow(): void {
    this.lastNotify = performance.now()
    this.sql`SELECT pg_notify(${CHANNEL}, '')`.catch(() => {
      // Other instances poll as well: a lost wake-up only delays them.
    })
  }

  /** LISTEN on a connection of its own; on failure the streams rely on polling, and the service says so. */
  private async listen(url: string): Promise<void> {
    const sql = new SQL(url, { max: 1 })
    try {
      const subscription = await sql.listen(CHANNEL, () => {
        for (const wake of this.wakes) wake()
      })
      this.listener = { sql, unlisten: () => subscription.unlisten() }
    } catch (error) {
      this.told.listenFailed?.(error)
      await sql.close({ timeout: 1 }).catch(() => {})
    }
  }
}
