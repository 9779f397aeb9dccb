/**
 * Positions in PostgreSQL's write-ahead log (LSNs) as numbers, and the primary's positions over
 * time, against which a replica's replay is judged (src/store/postgres/replicas/replicas.ts).
 *
 * An LSN is a byte offset in the WAL; a number holds it exactly up to 2^53 bytes (8 PiB of WAL).
 */

/** `16/B374D848` as a number. */
export function parseLsn(text: string): number {
  const slash = text.indexOf('/')
  return Number.parseInt(text.slice(0, slash), 16) * 2 ** 32 + Number.parseInt(text.slice(slash + 1), 16)
}

/** A page's header in the WAL: the short one, and the long one at the start of a segment. */
const SHORT_PAGE_HEADER = 24
const LONG_PAGE_HEADER = 40

/** The sizes of the primary's WAL pages and segments (`wal_block_size`, `wal_segment_size`). */
export interface WalGeometry {
  readonly blockSize: number
  readonly segmentSize: number
}

export const DEFAULT_WAL_GEOMETRY: WalGeometry = { blockSize: 8192, segmentSize: 16 * 1024 * 1024 }

/**
 * The end of the last record inserted, from `pg_current_wal_insert_lsn()`: that function gives
 * where the next record will start, which past a page boundary is after the next page's header,
 * while a standby's `pg_last_wal_replay_lsn()` gives where the last record it replayed ended.
 * Taken as it is, a position at a page's start would never be reached by a standby.
 */
export function recordEnd(insertLsn: number, { blockSize, segmentSize }: WalGeometry): number {
  if (insertLsn % segmentSize === LONG_PAGE_HEADER) return insertLsn - LONG_PAGE_HEADER
  if (insertLsn % blockSize === SHORT_PAGE_HEADER) return insertLsn - SHORT_PAGE_HEADER
  return insertLsn
}

interface Sample {
  /** The end of the last record the primary had inserted, as polls saw it. */
  readonly lsn: number
  /** When the first poll that saw it was sent, and when the last one was. */
  readonly at: number
  seen: number
}

/**
 * The primary's position as polls saw it: the end of its last inserted record (a position a
 * standby can replay to exactly), each with when the polls that saw it were sent, and how far it
 * has flushed (what a standby can have received). A poll sent after a commit was answered sees a
 * position at or past that commit's record: so a client's commit needs no query of its own.
 *
 * A position counts once the primary has flushed past it: a record inserted but not flushed (a
 * read's page pruning with no commit after it) cannot reach a standby, and waiting for it would
 * call every standby late.
 */
export class PrimaryTimeline {
  private samples: Sample[] = []
  private flushed = 0

  /** `keepMs`: how far back positions are kept; more than the longest lag asked about. */
  constructor(private readonly keepMs: number) {}

  /**
   * A poll of the primary, sent at `sentAt` (performance.now()), saw its last record's end and its
   * flush position. Polls are reported in the order they were sent.
   */
  observe(sentAt: number, recordEndLsn: number, flushLsn: number): void {
    const newest = this.samples.at(-1)
    // Behind what it was: another server answers at the primary's address now. Start again.
    if (newest && recordEndLsn < newest.lsn) {
      this.samples = []
      this.flushed = 0
    }
    this.flushed = Math.max(this.flushed, flushLsn)
    const last = this.samples.at(-1)
    if (last && last.lsn === recordEndLsn) last.seen = sentAt
    else this.samples.push({ lsn: recordEndLsn, at: sentAt, seen: sentAt })
    // The oldest go once the next is old enough to answer for the oldest time asked about; the
    // last counted stays, as where an idle primary is.
    const counted = this.lastCounted()
    let drop = 0
    while (drop < this.samples.length - 1) {
      const next = this.samples[drop + 1] as Sample
      if (next.at > sentAt - this.keepMs || this.samples[drop] === counted) break
      drop++
    }
    if (drop > 0) this.samples = this.samples.slice(drop)
  }

  private lastCounted(): Sample | undefined {
    for (let i = this.samples.length - 1; i >= 0; i--) {
      const sample = this.samples[i] as Sample
      if (sample.lsn <= this.flushed) return sample
    }
    return undefined
  }

  /**
   * What the first poll sent at or after `time` saw: a position at or past every commit answered
   * by then. Undefined while no poll has been sent since (a commit just answered).
   */
  positionAfter(time: number): number | undefined {
    for (let i = this.samples.length - 1; i >= 0; i--) {
      const sample = this.samples[i] as Sample
      if (sample.at > time) continue
      if (time <= sample.seen) return sample.lsn
      return this.samples[i + 1]?.lsn
    }
    // Older than every position kept: the oldest is past it.
    return this.samples[0]?.lsn
  }

  /**
   * The position a standby must have replayed at `now` to lag by no more than `maxLagMs`: where
   * the primary was by `now - maxLagMs` (as the first poll after saw it), but no further than its
   * last counted position. Infinity before any poll.
   */
  required(now: number, maxLagMs: number): number {
    const counted = this.lastCounted()
    if (!counted) return Number.POSITIVE_INFINITY
    return Math.min(this.positionAfter(now - maxLagMs) ?? counted.lsn, counted.lsn)
  }

  /**
   * About how far a standby at `replayLsn` lags, in milliseconds: how long ago the primary first
   * had a counted position past it (0 when it has replayed every one; no more than the positions
   * kept tell for one further behind); null before any poll.
   */
  lagMs(now: number, replayLsn: number): number | null {
    const counted = this.lastCounted()
    if (!counted) return null
    if (replayLsn >= counted.lsn) return 0
    const first = this.samples.find((sample) => sample.lsn > replayLsn)
    return first ? Math.max(0, now - first.at) : 0
  }
}
