import type { ChangeRead, ChangeWindow } from '../model/changes'

/**
 * The forms a change id takes, one per backend, written once: each backend takes the others as
 * change ids too, of another catalogue's feed (one moved between backends, or from an older
 * build), and answers them gone.
 */
export const POSITION_FORMS = {
  /** SQLite: the id of the changes row. */
  sqlite: /^[1-9][0-9]{0,15}$/,
  /**
   * PostgreSQL: `<history>.<xid>.<seq>`, the history ten hex digits of the database's identity
   * (src/store/postgres/change-history.ts), xid and seq below 2^63.
   */
  postgres: /^[0-9a-f]{10}\.[1-9][0-9]{0,17}\.[1-9][0-9]{0,17}$/,
  /** PostgreSQL before positions carried their history: `<xid>.<seq>`. Gone: of no known history. */
  postgresUnmarked: /^[1-9][0-9]{0,17}\.[1-9][0-9]{0,17}$/,
} as const

/** Whether `text` is a change id of any form, or the start of the feed ("0"). */
export function isChangePosition(text: string): boolean {
  return text === '0' || Object.values(POSITION_FORMS).some((form) => form.test(text))
}

/**
 * The change feed's storage: every write records its changes in its own transaction (triggers the
 * schema generators write for every type, src/store/sqlite/feed-ddl.ts and postgres/feed-ddl.ts),
 * so a change is stored exactly when its write commits, on every path (REST, relationship
 * endpoints, atomic batches, a foreign key's ON DELETE SET NULL, imports). Each backend reads them
 * in an order that never lets a later commit appear before a position already handed out:
 * - SQLite: one writer at a time, so the id of the changes row is commit order. A position is a row
 *   of the file, and each opening moves the next id past its time: a copy put back never hands
 *   out again an id the file gave (sqlite/change-history.ts).
 * - PostgreSQL: (transaction id, sequence), read only below the oldest transaction still running
 *   (pg_snapshot_xmin): positions below it can no longer be filled in. No lock any write takes.
 *   Transaction ids are one server's, and a restored or re-created database reuses them: each
 *   position carries the history it belongs to, and one of another history is gone.
 */
export interface ChangeLog {
  /** Whether `text` is a position this backend writes (START_OF_FEED included). */
  isPosition(text: string): boolean
  /**
   * The changes after a position, oldest first; `gone` when changes after it were pruned, or it is
   * not of this feed (ahead of every change, another backend's, another history's).
   */
  read(window: ChangeWindow): Promise<ChangeRead>
  /** The newest change that can be read, or null when there is none. */
  latest(): Promise<string | null>
  /**
   * Deletes the oldest changes while they are older than `seconds`, a batch at a time, and
   * remembers the newest position deleted (reads after an older one are `gone`). Returns how many.
   */
  prune(seconds: number): Promise<number>
  /**
   * Forgets every change so far, as if pruned: a position given before is `gone` from now on. For a
   * catalogue restored into an empty database: its records' creates are no history a client has
   * followed, and a client's position from the database it came from must not pass for one here.
   */
  startOver(): Promise<void>
  /**
   * Calls `wake` when changes may have been committed: at once after this process's writes, and
   * after other processes' where the backend can be told (PostgreSQL's LISTEN). Returns a function
   * that stops it. Other processes' changes are also found by polling (src/service/change-hub.ts).
   */
  watch(wake: () => void): () => void
}
