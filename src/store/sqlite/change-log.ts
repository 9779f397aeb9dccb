import type { Database, Statement } from 'bun:sqlite'
import { type Change, type ChangeOp, type ChangeRead, type ChangeWindow, START_OF_FEED } from '../../model/changes'
import { type ChangeLog, isChangePosition, POSITION_FORMS } from '../change-log'
import type { ChangeSignal } from '../change-signal'
import { restartFeed, START_OP } from './change-history'

/** How many changes a batch of pruning reads and deletes: one short write each. */
const PRUNE_BATCH = 5000

interface ChangeRow {
  readonly id: number
  readonly type: string
  readonly record_id: number
  readonly op: ChangeOp | typeof START_OP
}

/** What the change log needs of the store: reads and writes on its connection, as its own go. */
export interface SqliteChangeAccess {
  readonly db: Database
  read<T>(work: () => T): Promise<T>
  write<T>(work: () => T): Promise<T>
  readonly signal: ChangeSignal
}

/**
 * The change feed on SQLite (src/store/change-log.ts). One writer at a time, and the id handed out
 * in the writing transaction: a reader's snapshot holds every change up to the newest it sees,
 * so the id is a position no later commit can come before.
 */
export class SqliteChangeLog implements ChangeLog {
  private readonly after: Statement<ChangeRow, [number, number]>
  private readonly newest: Statement<{ id: number | null }, []>
  private readonly held: Statement<{ found: number }, [number]>
  private readonly horizon: Statement<{ pruned: number }, []>
  private readonly oldest: Statement<{ id: number; at: number }, [number]>
  private readonly remove: Statement<unknown, [number]>
  private readonly moveHorizon: Statement<unknown, [number]>

  constructor(private readonly access: SqliteChangeAccess) {
    const { db } = access
    this.after = db.prepare('SELECT id, type, record_id, op FROM changes WHERE id > ? ORDER BY id LIMIT ?')
    this.newest = db.prepare('SELECT MAX(id) AS id FROM changes')
    this.held = db.prepare('SELECT 1 AS found FROM changes WHERE id = ?')
    this.horizon = db.prepare('SELECT pruned FROM change_horizon')
    this.oldest = db.prepare('SELECT id, at FROM changes ORDER BY id LIMIT ?')
    // The newest row stays, even pruned (then at the horizon, never read): the next id follows it.
    this.remove = db.prepare('DELETE FROM changes WHERE id <= ? AND id < (SELECT MAX(id) FROM changes)')
    this.moveHorizon = db.prepare('UPDATE change_horizon SET pruned = MAX(pruned, ?)')
  }

  isPosition(text: string): boolean {
    return isChangePosition(text)
  }

  read(window: ChangeWindow): Promise<ChangeRead> {
    const types = window.types && new Set(window.types)
    // Another backend's (a catalogue moved from PostgreSQL): no position of this feed.
    if (window.after !== null && window.after !== START_OF_FEED && !POSITION_FORMS.sqlite.test(window.after)) {
      return Promise.resolve({ kind: 'gone' })
    }
    return this.access.read(() => {
      // The rows first, the horizon after: a prune between the two can only make the answer
      // `gone` needlessly, never drop changes silently (the horizon only moves forward).
      const asked = window.after === null ? null : Number(window.after)
      const start = asked ?? this.prunedUpTo()
      const rows = this.after.all(start, window.size)
      // Pruned past it, or no row of this file (an id a copy put back in its place never held, or
      // ahead of every change): read the lists again (sqlite/change-history.ts).
      const pruned = this.prunedUpTo()
      if (asked !== null && (asked < pruned || (asked !== pruned && this.held.get(asked) === null))) {
        return { kind: 'gone' }
      }
      const changes: Change[] = []
      for (const row of rows) {
        // An opening's place holder moves `next` past it, and is no change.
        if (row.op === START_OP) continue
        if (!types || types.has(row.type)) {
          changes.push({ id: String(row.id), type: row.type, recordId: row.record_id, op: row.op })
        }
      }
      const last = rows.at(-1)
      return { kind: 'page', changes, next: last ? String(last.id) : String(start), rows: rows.length }
    })
  }

  latest(): Promise<string | null> {
    return this.access.read(() => {
      const newest = this.newest.get()?.id ?? this.prunedUpTo()
      return newest > 0 ? String(newest) : null
    })
  }

  async prune(seconds: number): Promise<number> {
    let removed = 0
    for (;;) {
      const cutoff = Math.floor(Date.now() / 1000) - seconds
      const batch = await this.access.write(() => {
        const rows = this.oldest.all(PRUNE_BATCH)
        let last = -1
        let count = 0
        for (const row of rows) {
          if (row.at >= cutoff) break
          last = row.id
          count++
        }
        if (count > 0) {
          this.remove.run(last)
          this.moveHorizon.run(last)
        }
        return { count, full: count === PRUNE_BATCH }
      })
      removed += batch.count
      if (!batch.full) return removed
    }
  }

  /** The restore's changes go, and the feed goes on past every id an earlier feed can have reached. */
  startOver(): Promise<void> {
    return this.access.write(() => restartFeed(this.access.db))
  }

  watch(wake: () => void): () => void {
    return this.access.signal.listen(wake)
  }

  /** Before the connection closes. */
  close(): void {
    for (const statement of [
      this.after,
      this.newest,
      this.held,
      this.horizon,
      this.oldest,
      this.remove,
      this.moveHorizon,
    ]) {
      statement.finalize()
    }
  }

  private prunedUpTo(): number {
    return this.horizon.get()?.pruned ?? 0
  }
}
