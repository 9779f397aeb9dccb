import type { PrimaryTimeline } from './wal-positions'

/**
 * The most clients remembered at once: some 250 bytes each with a token name of 20 characters
 * (the entry and its place in the queue), about 12 MB at most (test/store/replica-positions.test.ts).
 * 50,000 clients each writing within REPLICA_MAX_LAG (5 s) is 10,000 writes a second: more than one
 * instance takes.
 */
export const MAX_REMEMBERED_CLIENTS = 50_000

/**
 * When each client's last commit was answered (performance.now()), for as long as a replica in use
 * may not have replayed it: a replica may answer the client once it has replayed what the primary's
 * first poll after that moment saw (PrimaryTimeline.positionAfter). A commit therefore costs a Map
 * entry, and no query.
 *
 * Bounded in time: an entry goes once every replica still in use must have replayed it, that is,
 * once the primary's position REPLICA_MAX_LAG ago is past it (about REPLICA_MAX_LAG plus a poll
 * after the commit). Bounded in memory: past `capacity` clients (or 2 × `capacity` commits not yet
 * forgotten), the oldest goes into a floor that holds for every client (the latest commit time
 * pushed out), so that a client pushed out still reads its writes; the floor goes as an entry does.
 */
export class RecentCommits {
  /** Each client's last commit. */
  private readonly latest = new Map<string, number>()
  /**
   * Every commit in the order answered, from `head` on: the oldest is taken from here, not from the
   * Map, whose iteration in JavaScriptCore steps over every entry deleted before it (taking the
   * oldest entry again and again grew quadratic: 250,000 clients took 9 s). An entry whose client
   * has committed since is skipped when it comes out.
   */
  private clients: string[] = []
  private times: number[] = []
  private head = 0
  private floor: number | null = null

  constructor(
    private readonly timeline: PrimaryTimeline,
    private readonly capacity = MAX_REMEMBERED_CLIENTS,
  ) {}

  /** Clients remembered now. */
  get size(): number {
    return this.latest.size
  }

  /** `client`'s write was answered at `time` (performance.now(), never less than the one before). */
  committed(client: string, time: number): void {
    this.latest.set(client, time)
    this.clients.push(client)
    this.times.push(time)
    // Past the capacity, or a queue of repeat commits twice as long: the oldest go into the floor.
    while (this.latest.size > this.capacity || this.clients.length - this.head > 2 * this.capacity) {
      const pushed = this.takeOldest()
      if (pushed !== null) this.floor = Math.max(this.floor ?? pushed, pushed)
    }
    this.compact()
  }

  /**
   * The WAL position a replica must have replayed to answer `client`: 0 for a client with no commit
   * remembered, Infinity while the primary has not been polled since its commit (the primary answers).
   */
  required(client: string): number {
    const own = this.latest.get(client)
    const floor = this.floor === null ? 0 : (this.timeline.positionAfter(this.floor) ?? Number.POSITIVE_INFINITY)
    if (own === undefined) return floor
    return Math.max(floor, this.timeline.positionAfter(own) ?? Number.POSITIVE_INFINITY)
  }

  /**
   * Forgets the commits every replica in use has replayed: those at or before `replayedByAll`, the
   * position a replica must have replayed to be used at all (PrimaryTimeline.required).
   */
  forget(replayedByAll: number): void {
    const done = (time: number) => {
      const position = this.timeline.positionAfter(time)
      return position !== undefined && position <= replayedByAll
    }
    if (this.floor !== null && done(this.floor)) this.floor = null
    while (this.head < this.clients.length && done(this.times[this.head] as number)) this.takeOldest()
    this.compact()
  }

  /** Takes the oldest commit out; its time if it was its client's last (the client is then forgotten), else null. */
  private takeOldest(): number | null {
    const client = this.clients[this.head] as string
    const time = this.times[this.head] as number
    this.head++
    if (this.latest.get(client) !== time) return null
    this.latest.delete(client)
    return time
  }

  /** Drops the taken part of the queue once it is most of it. */
  private compact(): void {
    if (this.head < 1024 || this.head * 2 < this.clients.length) return
    this.clients = this.clients.slice(this.head)
    this.times = this.times.slice(this.head)
    this.head = 0
  }
}
