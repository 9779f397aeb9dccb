import type { Change } from '../model/changes'
import type { ChangeLog } from '../store/change-log'

/** One follower of the live feed: a stream. */
export interface ChangeSubscriber {
  /** The next changes after its position, in the feed's order. */
  deliver(changes: readonly Change[]): void
  /** Its position was pruned before it was read past (it fell 7 days behind): it ends. */
  lost(): void
}

/** How often the feed is read while streams are open: what other processes commit shows within it. */
export const POLL_MS = 100
/** Changes read at once for one position: a stream far behind catches up this many a round. */
const BATCH = 1000

/**
 * The live feed of one process: every open stream of the process, grouped by the position each
 * has reached. A round reads the feed once per distinct position (streams that are caught up share
 * one), hands each group what follows, and moves the group on: streams converge on the newest
 * position and then cost one read a round together, however many there are. Rounds run at once
 * after a write of this process (and another instance's, where the store can hear of it), and
 * every POLL_MS while any stream is open; none without streams.
 */
export class ChangeHub {
  private readonly groups = new Map<string, Set<ChangeSubscriber>>()
  private timer: ReturnType<typeof setInterval> | null = null
  private unwatch: (() => void) | null = null
  private reading = false
  private again = false

  constructor(
    private readonly log: ChangeLog,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  get size(): number {
    let n = 0
    for (const group of this.groups.values()) n += group.size
    return n
  }

  /** Follows the feed after `position` for `subscriber` until the returned function is called. */
  add(position: string, subscriber: ChangeSubscriber): () => void {
    this.join(position, subscriber)
    if (!this.timer) {
      this.timer = setInterval(() => this.round(), POLL_MS)
      this.unwatch = this.log.watch(() => this.round())
    }
    this.round()
    return () => this.remove(subscriber)
  }

  private join(position: string, subscriber: ChangeSubscriber): void {
    const group = this.groups.get(position) ?? new Set<ChangeSubscriber>()
    group.add(subscriber)
    this.groups.set(position, group)
  }

  private remove(subscriber: ChangeSubscriber): void {
    for (const [position, group] of this.groups) {
      if (group.delete(subscriber) && group.size === 0) this.groups.delete(position)
    }
    if (this.groups.size === 0 && this.timer) {
      clearInterval(this.timer)
      this.timer = null
      this.unwatch?.()
      this.unwatch = null
    }
  }

  /** Reads on from each position; one round at a time, and one more if asked meanwhile. */
  private round(): void {
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
          this.round()
        }
      })
  }

  private async readAll(): Promise<void> {
    for (const position of [...this.groups.keys()]) {
      const read = await this.log.read({ after: position, types: null, size: BATCH })
      const group = this.groups.get(position)
      if (!group) continue
      this.groups.delete(position)
      if (read.kind === 'gone') {
        for (const subscriber of group) subscriber.lost()
        continue
      }
      if (read.changes.length === BATCH) this.again = true
      for (const subscriber of group) this.join(read.next, subscriber)
      if (read.changes.length > 0) for (const subscriber of group) subscriber.deliver(read.changes)
    }
  }
}
