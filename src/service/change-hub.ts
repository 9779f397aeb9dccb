import type { Change } from '../model/changes'
import type { ChangeLog } from '../store/change-log'

/** One follower of the live feed: a stream. */
export interface ChangeSubscriber {
  /**
   * Whether it has room for more now. One that has none is passed over and keeps its position: it
   * is fed at the pace its client reads, and calls ChangeHub.wake once it has room again.
   */
  ready(): boolean
  /**
   * The next changes after its position: `window` from index `from` on. A window is one read of
   * the feed, the same array for every follower it serves.
   */
  deliver(window: readonly Change[], from: number): void
  /** Its position was pruned before it was read past (it fell 7 days behind): it ends. */
  lost(): void
}

/** How often the feed is read while streams are open: what other processes commit shows within it. */
export const POLL_MS = 100
/**
 * After a wake-up, one more round this much later: on PostgreSQL a change just committed is final
 * only once every older transaction has ended, which under load is a few milliseconds later.
 */
export const SETTLE_MS = 20
/** Changes one read takes: a follower far behind gets up to this many each time it has room. */
const BATCH = 1000

/**
 * Streams handed a window before the round lets requests run: handing one a window writes to its
 * socket at once, and a thousand of them in a row held the event loop for over 100 ms.
 */
const DELIVERIES_A_TURN = 64

type Group = Set<ChangeSubscriber>

/**
 * The live feed of one process: every open stream of the process, grouped by the position each
 * has reached. A round reads the feed from one group's position and serves, from that one read,
 * every group whose position lies inside it; then the next group not yet served. Followers at
 * nearby positions thus share reads (and the events the streams make of them), converge on the
 * newest position, and then cost one read a round together, however many there are.
 *
 * A follower is fed only while it has room (its client reads): a backlog of any size goes out at
 * the pace of the reader, and waits in the database meanwhile, not in memory. Between two reads a
 * round lets the event loop run, so that a thousand streams catching up leave requests their
 * turn. Rounds run at once after a write of this process (and another instance's, where the store
 * can hear of it), when a follower has room again, and every POLL_MS while any stream is open.
 */
export class ChangeHub {
  private readonly groups = new Map<string, Group>()
  /** Where each follower is: its group's position. */
  private readonly positions = new Map<ChangeSubscriber, string>()
  private timer: ReturnType<typeof setInterval> | null = null
  private unwatch: (() => void) | null = null
  private reading = false
  private again = false
  private settle: ReturnType<typeof setTimeout> | null = null

  constructor(
    private readonly log: ChangeLog,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  get size(): number {
    return this.positions.size
  }

  /** Follows the feed after `position` for `subscriber` until the returned function is called. */
  add(position: string, subscriber: ChangeSubscriber): () => void {
    this.join(position, subscriber)
    if (!this.timer) {
      this.timer = setInterval(() => this.wake(), POLL_MS)
      this.unwatch = this.log.watch(() => this.woken())
    }
    this.wake()
    return () => this.remove(subscriber)
  }

  /** Reads on from each position; one round at a time, and one more if asked meanwhile. */
  wake(): void {
    if (this.reading) {
      this.again = true
      return
    }
    this.reading = true
    this.readAll()
      .catch(this.onError)
      .finally(() => {
        this.reading = false
        if (this.again && this.groups.size > 0) {
          this.again = false
          this.wake()
        }
      })
  }

  private join(position: string, subscriber: ChangeSubscriber): void {
    const group = this.groups.get(position) ?? new Set<ChangeSubscriber>()
    group.add(subscriber)
    this.groups.set(position, group)
    this.positions.set(subscriber, position)
  }

  private leave(subscriber: ChangeSubscriber): void {
    const position = this.positions.get(subscriber)
    if (position === undefined) return
    this.positions.delete(subscriber)
    const group = this.groups.get(position)
    if (group?.delete(subscriber) && group.size === 0) this.groups.delete(position)
  }

  private remove(subscriber: ChangeSubscriber): void {
    this.leave(subscriber)
    if (this.groups.size === 0 && this.timer) {
      clearInterval(this.timer)
      this.timer = null
      if (this.settle) clearTimeout(this.settle)
      this.settle = null
      this.unwatch?.()
      this.unwatch = null
    }
  }

  /** A write may have committed: a round now, and one a little later. */
  private woken(): void {
    this.wake()
    this.settle ??= setTimeout(() => {
      this.settle = null
      this.wake()
    }, SETTLE_MS)
  }

  private async readAll(): Promise<void> {
    const served = new Set<string>()
    let delivered = 0
    for (const position of [...this.groups.keys()]) {
      if (served.has(position) || !this.anyReady(position)) continue
      if (served.size > 0) await nextTurn()
      const read = await this.log.read({ after: position, types: null, size: BATCH })
      served.add(position)
      if (read.kind === 'gone') {
        for (const subscriber of [...(this.groups.get(position) ?? [])]) {
          this.leave(subscriber)
          subscriber.lost()
        }
        continue
      }
      if (read.changes.length === BATCH) this.again = true
      // Where each position inside the window starts in it: the one read from, and each change's.
      const starts = new Map<string, number>([[position, 0]])
      for (const [index, change] of read.changes.entries()) starts.set(change.id, index + 1)
      for (const [at, group] of [...this.groups]) {
        const from = starts.get(at)
        if (from === undefined) continue
        served.add(at)
        for (const subscriber of [...group]) {
          // Still there (it may have gone while the round let others run), and with room.
          if (this.positions.get(subscriber) !== at || !subscriber.ready()) continue
          this.leave(subscriber)
          this.join(read.next, subscriber)
          if (from === read.changes.length) continue
          subscriber.deliver(read.changes, from)
          if (++delivered % DELIVERIES_A_TURN === 0) await nextTurn()
        }
      }
    }
  }

  private anyReady(position: string): boolean {
    for (const subscriber of this.groups.get(position) ?? []) if (subscriber.ready()) return true
    return false
  }
}

/** Lets timers and I/O run: requests are answered between two reads of a round. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}
