import type { Database } from 'bun:sqlite'

/*
 * The SQLite change feed across copies of its file (docs/changes.md, "Restores, copies and
 * failovers"). A position is the id of a row of `changes`. A copy of the file put back in its
 * place (a backup restored, a `cp` over it, a snapshot) holds the rows up to the moment it was
 * taken; the ids the file handed out after that are lost with their changes, and the copy would
 * hand them out again for other changes: a follower holding one would skip those.
 *
 * So every opening that may write (a start of the service, a worker, a command) first moves the
 * next id past the time of the opening in microseconds, past any id handed out before it (a count
 * of changes, or an earlier opening's time and fewer than a million changes a second since), and a
 * position is taken only if it is a row the file holds (or its horizon): a lost id is no row of the
 * copy, and no later row ever takes it, so it is gone (410) for good, while a position the copy
 * holds goes on, its changes being the copy's own. Nothing outside the file is needed, whatever
 * way the copy was made and put back, provided the file is opened before anything writes to it.
 */

/** A row that holds the place of the ids an opening skipped: never a change a client sees. */
export const START_OP = 'start'

/** Microseconds since the epoch: past every id an earlier opening can have handed out. */
function nowMicros(): number {
  return Math.floor((performance.timeOrigin + performance.now()) * 1000)
}

function newestId(db: Database): number {
  return db.query<{ id: number | null }, []>('SELECT MAX(id) AS id FROM changes').get()?.id ?? 0
}

/** The row that makes the next id come after `start`: SQLite gives one more than the largest. */
function placeHolder(db: Database, start: number): void {
  db.run(`INSERT INTO changes (id, type, record_id, op, at) VALUES (?, '', 0, '${START_OP}', unixepoch())`, [start])
}

/**
 * At an opening that may write an existing file: the next id past the opening's time (see
 * above). In a write transaction of its own; across processes opening the file at once, each
 * moves it past its own time, which is harmless.
 */
export function skipToNow(db: Database): void {
  db.run('BEGIN IMMEDIATE')
  try {
    const newest = newestId(db)
    placeHolder(db, Math.max(newest + 1, nowMicros()))
    db.run('COMMIT')
  } catch (error) {
    db.run('ROLLBACK')
    throw error
  }
}

/**
 * Forgets every change so far (a restore into an empty database, Store.changes.startOver): the
 * changes go, the feed goes on past the time of this in microseconds, and the horizon moves there,
 * so every earlier position is gone (410). The newest row holds the place. In the caller's
 * transaction.
 */
export function restartFeed(db: Database): void {
  const start = Math.max(newestId(db), nowMicros())
  db.run('DELETE FROM changes')
  placeHolder(db, start)
  db.run('UPDATE change_horizon SET pruned = MAX(pruned, ?)', [start])
}
