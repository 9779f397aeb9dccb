import type { PrimaryTimeline } from './wal-positions'

/** The most clients remembered at once: about 100 bytes each, some 10 MB at most. */
export const MAX_REMEMBERED_CLIENTS = 100_000

/**
 * When each client's last commit was answered (performance.now()), for as long as a replica in use
 * may not have replayed it: a replica may answer the client once it has replayed what the primary's
 * first poll after that moment saw (PrimaryTimeline.positionAfter). A commit therefore costs a Map
 * entry, and no query.
 *
 * Bounded in time: an entry goes once every replica still in use must have replayed it, that is,
 * once the primary's position REPLICA_MAX_LAG ago is past it (about REPLICA_MAX_LAG plus a poll
 * after the commit). Bounded in memory: past `capacity` clients, the oldest entry goes into a
 * floor that holds for every client (the latest commit time pushed out), so that a client pushed
 * out still reads its writes; the floor goes as an entry does.
 */
export class RecentCommits {
  /** Oldest first: an entry is moved to the end at each commit. */
  private readonly byClient = new Map<string, number>()
  private floor: number | null = null

  constructor(
    private readonly timeline: PrimaryTimeline,
    private readonly capacity = MAX_REMEMBERED_CLIENTS,
  ) {}

  /** Clients remembered now. */
  get size(): number {
    return this.byClient.size
  }

  /** `client`'s write was answered at `time`. */
  committed(client: string, time: number): void {
    this.byClient.delete(client)
    this.byClient.set(client, time)
    if (this.byClient.size <= this.capacity) return
    const [oldest, at] = this.byClient.entries().next().value as [string, number]
    this.byClient.delete(oldest)
    this.floor = Math.max(this.floor ?? at, at)
  }

  /**
   * The WAL position a replica must have replayed to answer `client`: 0 for a client with no commit
   * remembered, Infinity while the primary has not been polled since its commit (the primary answers).
   */
  required(client: string): number {
    const own = this.byClient.get(client)
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
    for (const [client, time] of this.byClient) {
      if (!done(time)) return
      this.byClient.delete(client)
    }
  }
}
