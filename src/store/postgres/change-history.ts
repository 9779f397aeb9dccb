import type { SQL } from 'bun'

/**
 * Which history of which database a PostgreSQL change position belongs to: the first ten hex
 * digits of an MD5 of what no copy of the data carries along.
 *
 * A position is a transaction id and a sequence, and transaction ids are one server's: a
 * `pg_dump` restored onto another server, a database dropped and made again, a promoted standby
 * all go on with ids that a client's old position may already name, or that will pass it, and a
 * follower would skip what it never saw. So the position carries the identity of the history it
 * was read in, and a read compares it with the current one, computed in the same statement (a
 * restore under a running service, a pooler that now reaches another server):
 * - the server's system identifier (`initdb`'s; a replica shares its primary's): another server;
 * - the database's OID: a database dropped and made again under the same name;
 * - the `changes` table's OID: a `pg_restore` (even `--clean` into the same database) and
 *   `catalogue import --create` make the table anew;
 * - the WAL timeline: a promoted standby, or a point-in-time recovery, starts a new one, after
 *   which commits the old primary acknowledged may be missing and their ids are handed out again.
 * `pg_upgrade` gives the server a new system identifier, so its followers read the lists again too.
 * The timeline is read from the current WAL position, which moves to the new timeline the moment
 * a standby is promoted (the control file's follows only at the next checkpoint). Reads of the
 * feed go to the primary, where `pg_current_wal_lsn()` answers; a standby (a DATABASE_URL that
 * reaches one) has no timeline of its own here, so its history is another, and adopting it fails
 * as a write there does (25006, read-only: a 503), not with an error of our SQL.
 */
export const HISTORY_SQL = `substr(md5(concat_ws('/',
    (SELECT system_identifier FROM pg_control_system()),
    (SELECT oid FROM pg_database WHERE datname = current_database()),
    'changes'::regclass::oid,
    CASE WHEN NOT pg_is_in_recovery() THEN substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) END)), 1, 10)`

/**
 * Where a history adopted by a restored or promoted database begins (PostgresChangeLog.adopt):
 * above the start of the feed ("0", which a client of an empty feed holds), below every
 * transaction id a change can have (3 is the first normal one).
 */
export const HISTORY_START = { xid: '1', seq: 1 } as const

/** A position of `history`: `<history>.<xid>.<seq>`, or the start of the feed. */
export function positionOf(history: string, xid: string, seq: string): string {
  return xid === '0' ? '0' : `${history}.${xid}.${seq}`
}

/** A position's parts; the start of the feed is (its history unknown) transaction 0. */
export function partsOf(position: string): { history: string | null; xid: string; seq: string } {
  const [history = '', xid = '0', seq = '0'] = position.split('.')
  return position === '0' ? { history: null, xid: '0', seq: '0' } : { history, xid, seq }
}

/**
 * Makes the database's current history the feed's, once it differs from the one stored: this
 * database is a restore, a copy or a promoted standby of the one the changes were recorded in.
 * Their transaction ids are another server's or another timeline's, and may be above the ids to
 * come: the changes go, and the horizon moves to HISTORY_START, which every position given before
 * (the start of the feed included) is below. No position of the new history is handed out before
 * this: every read compares first. The lock waits for the writes in flight, and holds new ones
 * until it commits. `untimed`: not held to the statement timeout (a start). Whether it changed
 * anything (another instance may have adopted it first).
 */
export function adoptHistory(sql: SQL, untimed: boolean): Promise<boolean> {
  return sql.begin(async (tx) => {
    if (untimed) await tx.unsafe('SET LOCAL statement_timeout = 0')
    await tx.unsafe('LOCK TABLE changes IN EXCLUSIVE MODE')
    const [row] = (await tx.unsafe(`SELECT history = ${HISTORY_SQL} AS adopted FROM change_horizon FOR UPDATE`)) as {
      adopted: boolean
    }[]
    // Adopted by another instance's read first; or no horizon row at all (a restore under way).
    if (row === undefined || row.adopted) return false
    await tx.unsafe('DELETE FROM changes')
    await tx.unsafe(
      `UPDATE change_horizon SET xid = '${HISTORY_START.xid}', seq = ${HISTORY_START.seq}, history = ${HISTORY_SQL}`,
    )
    return true
  })
}

/**
 * At an instance's start: whether the history stored differs from the database's (one look,
 * nothing locked, no statement timeout), and the next sequence number moved past the time in
 * microseconds. A copy of the cluster put back without a new timeline (a file system or VM
 * snapshot, a base backup started as it is) keeps its history, but its sequence and transaction ids
 * went back with it, and would hand out again the positions its lost commits had: past every
 * sequence number given before (an earlier start's time, and fewer than a million changes a second
 * since), no new change takes one, and a read finds no row for it (gone) for good. Instances that
 * went on running across such a restore do not do this: they are to be started again
 * (docs/postgres.md, "Backups and the change feed").
 */
export function startHistory(sql: SQL): Promise<{ moved: boolean }> {
  return sql.begin(async (tx) => {
    await tx.unsafe('SET LOCAL statement_timeout = 0')
    const [row] = (await tx.unsafe(`SELECT history <> ${HISTORY_SQL} AS moved FROM change_horizon`)) as {
      moved: boolean
    }[]
    await tx.unsafe(
      `SELECT setval(s, GREATEST(nextval(s), (extract(epoch FROM clock_timestamp()) * 1000000)::bigint))
         FROM CAST(pg_get_serial_sequence('changes', 'seq') AS regclass) AS s`,
    )
    return { moved: row?.moved === true }
  })
}
