import type { Database } from 'bun:sqlite'
import { fileIdentity } from './file-guard'

/*
 * Which file the SQLite change feed's positions were handed out in (docs/changes.md, "Restores,
 * copies and failovers"). An id is a row of one file: a copy put in its place (a backup restored,
 * a `cp`) hands out again ids the file it came from had already given clients for other changes,
 * and a follower would skip them. So the feed remembers its file, by device and inode, and one that
 * is not that file starts over, past every id the feed it came from can have reached.
 */

/** What `catalogue backup` writes in its copy: a copy, whatever file it becomes. */
export const COPY_MARK = 'copy'

/**
 * Forgets every change so far: the changes go, and the feed goes on past the time of this in
 * microseconds, an id no feed this file came from can have reached (a count of changes, or another
 * restart's time and fewer than a million changes a second since), so every earlier position is
 * gone (410). The newest row holds the place: the next id follows it. In the caller's transaction.
 */
export function restartFeed(db: Database): void {
  const newest = db.query<{ id: number | null }, []>('SELECT MAX(id) AS id FROM changes').get()?.id ?? 0
  const start = Math.max(newest, Math.floor((performance.timeOrigin + performance.now()) * 1000))
  db.run('DELETE FROM changes')
  db.run("INSERT INTO changes (id, type, record_id, op, at) VALUES (?, '', 0, 'start', unixepoch())", [start])
  db.run('UPDATE change_horizon SET pruned = MAX(pruned, ?)', [start])
}

/** What a writable opening found: its own file, a file to take as its own, or a copy. */
export type FileAdoption = 'same' | 'recorded' | 'restarted'

/**
 * At a writable opening of `path`: the feed's file compared with the one it recorded. None recorded
 * (a new database, or one from before the feed recorded its file): this one is taken. Another one,
 * or a copy's mark: the feed restarts (restartFeed) and takes this file. Across processes opening
 * the file at once (workers), the first does it and the others find it done.
 */
export function adoptFile(db: Database, path: string): FileAdoption {
  // Its device and inode, which a copy, a move across devices or a restore change.
  const identity = fileIdentity(path)
  if (identity === null) throw new Error(`the database file ${path} is gone`)
  const recorded = () => db.query<{ history: string }, []>('SELECT history FROM change_horizon').get()?.history
  if (recorded() === identity) return 'same'
  db.run('BEGIN IMMEDIATE')
  try {
    const history = recorded()
    const outcome: FileAdoption = history === identity ? 'same' : history === '' ? 'recorded' : 'restarted'
    if (outcome === 'restarted') restartFeed(db)
    if (outcome !== 'same') db.run('UPDATE change_horizon SET history = ?', [identity])
    db.run('COMMIT')
    return outcome
  } catch (error) {
    db.run('ROLLBACK')
    throw error
  }
}

/** Marks the database at `path` (a backup's copy, before it gets its name) as a copy. */
export function markAsCopy(db: Database): void {
  const columns = db.query<{ name: string }, []>("SELECT name FROM pragma_table_info('change_horizon')").all()
  // A copy of a database from before the feed recorded its file: taken as it is, as that one was.
  if (columns.some((c) => c.name === 'history')) db.run('UPDATE change_horizon SET history = ?', [COPY_MARK])
}
