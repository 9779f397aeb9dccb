import { expect } from 'bun:test'
import { type ChangeRecord, ChangeStream, Follower } from './feed-follower'
import type { ExpectedChange, Op, Write } from './feed-ledger'
import { Writer } from './feed-writers'

/*
 * The change feed's concurrency scenario (many writers, followers, a stream, all at once) and what
 * the tests check of what it recorded: FEED-SPEC.md's guarantees, each as a list of violations that
 * must be empty, so that a failure names the writes concerned.
 */

export interface Scenario {
  /** Every write in the order its acknowledgement (or refusal) arrived. */
  readonly writes: Write[]
  /** What each follower read, in its order. */
  readonly feeds: ChangeRecord[][]
  /** How many changes each follower had read when the last write was acknowledged. */
  readonly readWhileWriting: number[]
  /** Each follower's meta.latest on the first page it asked for once every write was acknowledged. */
  readonly latestAtFinish: (string | null | undefined)[]
  readonly stream: ChangeStream
  /** A second stream, opened with the first, closed after 30 events and resumed by Last-Event-ID. */
  readonly resumed: { readonly before: ChangeStream; readonly after: ChangeStream }
}

/**
 * Seeds four shared authors, then `writers` loops of `writesEach` writes each, sent to `apis` in turn,
 * while a follower walks the feed on each of `followerApis`; once 40 writes are acknowledged a stream
 * opens on `streamApi`, and another that is closed after 30 events and resumed. When the writers are
 * done, the followers walk on to meta.latest (and for a while to as many changes as the acknowledged
 * writes made), and the streams are waited for until they have the last change.
 */
export async function writeWhileFollowing(options: {
  readonly apis: readonly string[]
  readonly followerApis: readonly string[]
  readonly streamApi: string
  readonly writers: number
  readonly writesEach: number
}): Promise<Scenario> {
  const followers = options.followerApis.map((api) => new Follower(api))
  try {
    const writes: Write[] = []
    const seed = new Writer(0, options.apis, [], writes)
    const shared: string[] = []
    for (let n = 0; n < 4; n++) shared.push(await seed.createAuthor())
    const writers = Array.from({ length: options.writers }, (_, n) => new Writer(n + 1, options.apis, shared, writes))
    let failure: unknown
    const running = Promise.all(writers.map((writer) => writer.run(options.writesEach))).catch((error) => {
      failure = error
    })
    let written = false
    running.then(() => {
      written = true
    })
    while (writes.length < 40 && !written) await Bun.sleep(5)
    const stream = await ChangeStream.open(options.streamApi)
    const before = await ChangeStream.open(options.streamApi)
    await before.waitForEvents(30, () => written)
    before.close()
    const seen = before.events.at(-1)?.id
    const after = await ChangeStream.open(options.streamApi, seen === undefined ? {} : { 'last-event-id': seen })
    await running
    if (failure !== undefined) throw failure
    const readWhileWriting = followers.map((follower) => follower.changes.length)
    const expected = acknowledged(writes).flatMap((write) => write.changes).length
    await Promise.all(followers.map((follower) => follower.finish(expected)))
    const last = followers[0]?.changes.at(-1)
    if (last) await Promise.all([stream.waitFor(last.id), after.waitFor(last.id)])
    return {
      writes,
      feeds: followers.map((follower) => follower.changes),
      readWhileWriting,
      latestAtFinish: followers.map((follower) => follower.latestAtFinish),
      stream,
      resumed: { before, after },
    }
  } finally {
    for (const follower of followers) follower.stop()
  }
}

const keyOf = (type: string, id: string) => `${type}/${id}`
const recordOf = (change: ChangeRecord) =>
  keyOf(change.relationships.resource.data.type, change.relationships.resource.data.id)
const acknowledged = (writes: readonly Write[]) => writes.filter((write) => write.changes.length > 0)

/** The change ids that occur more than once. */
export function repeatedIds(feed: readonly ChangeRecord[]): string[] {
  const seen = new Set<string>()
  return feed.map((change) => change.id).filter((id) => seen.has(id) || !seen.add(id))
}

/** Per record (`books/12`), its ops in the order of the feed. */
export function opsByRecord(feed: readonly ChangeRecord[]): Record<string, Op[]> {
  return grouped(feed.map((change) => [recordOf(change), change.attributes.op]))
}

function grouped(pairs: readonly (readonly [string, Op])[]): Record<string, Op[]> {
  const ops: Record<string, Op[]> = {}
  for (const [key, op] of pairs) ops[key] = [...(ops[key] ?? []), op]
  return ops
}

/** Per record, the ops its acknowledged writes made, in the order its (one) writer made them. */
export function expectedOpsByRecord(
  writes: readonly Write[],
  more: readonly ExpectedChange[] = [],
): Record<string, Op[]> {
  const changes = [...acknowledged(writes).flatMap((write) => write.changes), ...more]
  return grouped(changes.map((change) => [keyOf(change.type, change.id), change.op]))
}

/**
 * Where each acknowledged write's changes are in the feed: a record's n-th expected change is its
 * n-th change there (meaningful once opsByRecord matches expectedOpsByRecord).
 */
export function positionsOf(feed: readonly ChangeRecord[], writes: readonly Write[]): Map<Write, number[]> {
  const places = new Map<string, number[]>()
  feed.forEach((change, place) => {
    const key = recordOf(change)
    places.set(key, [...(places.get(key) ?? []), place])
  })
  const taken = new Map<string, number>()
  const positions = new Map<Write, number[]>()
  for (const write of acknowledged(writes)) {
    positions.set(
      write,
      write.changes.map((change) => {
        const key = keyOf(change.type, change.id)
        const n = taken.get(key) ?? 0
        taken.set(key, n + 1)
        return places.get(key)?.[n] ?? Number.NaN
      }),
    )
  }
  return positions
}

const described = (write: Write) =>
  `writer ${write.writer}'s ${write.what} (${write.changes.map((c) => `${c.op} ${c.type}/${c.id}`).join(', ')})`

/** Pairs of writes where one was acknowledged before the other was sent, but its changes come after. */
export function orderViolations(feed: readonly ChangeRecord[], writes: readonly Write[]): string[] {
  const positions = positionsOf(feed, writes)
  const done = acknowledged(writes)
  const violations: string[] = []
  for (const before of done) {
    const last = Math.max(...(positions.get(before) as number[]))
    for (const after of done) {
      if (before.ackAt < after.sentAt && !(last < Math.min(...(positions.get(after) as number[])))) {
        violations.push(`${described(before)} was acknowledged before ${described(after)} was sent, but comes after`)
      }
    }
  }
  return violations.slice(0, 10)
}

/** Atomic batches whose changes are not together in the feed, in their order. */
export function splitBatches(feed: readonly ChangeRecord[], writes: readonly Write[]): string[] {
  const positions = positionsOf(feed, writes)
  return acknowledged(writes)
    .filter((write) => write.batch)
    .filter((write) => {
      const places = positions.get(write) as number[]
      return places.some((place, n) => place !== (places[0] as number) + n)
    })
    .map((write) => `${described(write)} at ${positions.get(write)?.join(', ')}`)
}

/**
 * Checks the stream against the feed: its events are the feed's changes from one on, without a gap,
 * as the same records, and it has every write sent after it opened. With `commitOrder` (SQLite, one
 * writer at a time: the feed is in the order of the commits) it also has none acknowledged before it
 * was asked for. On PostgreSQL the feed is in the order of transaction ids, and a stream's start can
 * only be the horizon of the transactions running as it opens: a write acknowledged before then may
 * come after one still running, in the stream with it. Returns where in the feed the stream starts.
 */
export function expectStreamFromOpening(
  stream: ChangeStream,
  feed: readonly ChangeRecord[],
  writes: readonly Write[],
  options: { readonly commitOrder: boolean },
) {
  expect(stream.events.length).toBeGreaterThan(0)
  for (const event of stream.events) {
    expect({ event: event.event, id: event.id }).toEqual({ event: 'change', id: event.data.id })
  }
  const first = feed.findIndex((change) => change.id === stream.events[0]?.id)
  expect(first).toBeGreaterThanOrEqual(0)
  expect(stream.events.map((event) => event.data)).toEqual(feed.slice(first))
  const positions = positionsOf(feed, writes)
  const where = (write: Write) => positions.get(write) as number[]
  const done = acknowledged(writes)
  const missed = done.filter((write) => write.sentAt > stream.openedAt && where(write).some((place) => place < first))
  const early = done.filter((write) => write.ackAt < stream.requestedAt && where(write).some((place) => place >= first))
  const extra = options.commitOrder ? early : []
  expect({ missed: missed.map(described), extra: extra.map(described) }).toEqual({ missed: [], extra: [] })
  return first
}

/** The events of a stream closed and resumed by Last-Event-ID: together, the feed from the first on, once each. */
export function expectResumedWithoutGap(
  resumed: { readonly before: ChangeStream; readonly after: ChangeStream },
  feed: readonly ChangeRecord[],
) {
  const events = [...resumed.before.events, ...resumed.after.events]
  expect(resumed.before.events.length).toBeGreaterThan(0)
  expect(resumed.after.events.length).toBeGreaterThan(0)
  const first = feed.findIndex((change) => change.id === events[0]?.id)
  expect(first).toBeGreaterThanOrEqual(0)
  expect(events.map((event) => event.data)).toEqual(feed.slice(first))
}

/** For each write sent to `instance` after the stream opened: ms from its acknowledgement to its last change's arrival. */
export function streamDelays(
  stream: ChangeStream,
  feed: readonly ChangeRecord[],
  writes: readonly Write[],
  instance: number,
) {
  const positions = positionsOf(feed, writes)
  const arrivals = new Map(stream.events.map((event) => [event.id, event.at]))
  return acknowledged(writes)
    .filter((write) => write.instance === instance && write.sentAt > stream.openedAt)
    .map((write) => {
      const last = feed[Math.max(...(positions.get(write) as number[]))] as ChangeRecord
      return (arrivals.get(last.id) as number) - write.ackAt
    })
}
