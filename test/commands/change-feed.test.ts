import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { type Service, startService, tempDatabase } from '../support/commands'
import {
  expectedOpsByRecord,
  expectResumedWithoutGap,
  expectStreamFromOpening,
  opsByRecord,
  orderViolations,
  repeatedIds,
  type Scenario,
  splitBatches,
  writeWhileFollowing,
} from '../support/feed-checks'
import { removeTempDirs, stopChildren } from '../support/process'

// Processes on a machine that may be busy (2 cores): Bun's 5 s default is far too short.
setDefaultTimeout(60_000)

/*
 * The change feed under concurrency on SQLite, as an operator runs it: `catalogue --workers 2`, a
 * supervisor and two worker processes sharing one port. Eight writers send a few hundred writes of
 * every kind through that port while a follower walks GET /api/v1/changes by links.next and a
 * stream (Accept: text/event-stream) is open; then the feed is held to FEED-SPEC.md's guarantees.
 */

/** The writers and the scenario: several hundred writes on a 2-core machine. */
const SCENARIO_MS = 300_000

describe('GET /api/v1/changes with catalogue --workers 2 on SQLite, eight writers at once', () => {
  let service: Service
  let run: Scenario

  beforeAll(async () => {
    service = await startService({ WORKERS: '2', DATABASE_URL: tempDatabase().url })
    for (const worker of [1, 2]) {
      await service.child.waitForLog((line) => line.msg === 'worker listening' && line.worker === worker)
    }
    run = await writeWhileFollowing({
      apis: [service.api],
      followerApis: [service.api],
      streamApi: service.api,
      writers: 8,
      writesEach: 60,
    })
  }, SCENARIO_MS)

  afterAll(async () => {
    run?.stream.close()
    run?.resumed.after.close()
    await stopChildren()
    removeTempDirs()
  })

  it('answers every write of both workers: the writes were of every kind, some refused', () => {
    const kinds = new Set(run.writes.map((write) => write.what))
    expect(kinds.size).toBeGreaterThanOrEqual(15)
    expect(run.writes.filter((write) => write.status >= 400).length).toBeGreaterThan(0)
    const workers = new Set(
      service.child.logs.filter((line) => line.msg === 'request' && line.method !== 'GET').map((line) => line.worker),
    )
    expect(workers).toEqual(new Set([1, 2]))
  })

  it('gives the follower each change once: no change id twice', () => {
    expect(run.feeds[0]?.length).toBeGreaterThan(300)
    // It walked while the writers wrote, not only after them.
    expect(run.readWhileWriting[0]).toBeGreaterThan(40)
    expect(repeatedIds(run.feeds[0] ?? [])).toEqual([])
  })

  it('names the newest change in meta.latest once the writes are acknowledged: a follower that reaches it has them all', () => {
    expect(run.latestAtFinish).toEqual(run.feeds.map((feed) => feed.at(-1)?.id))
  })

  it("holds exactly the acknowledged writes' changes, per record in its writer's order, and none of a refused write", () => {
    expect(opsByRecord(run.feeds[0] ?? [])).toEqual(expectedOpsByRecord(run.writes))
  })

  it('puts a write acknowledged before another was sent before it, whichever worker took each', () => {
    expect(orderViolations(run.feeds[0] ?? [], run.writes)).toEqual([])
  })

  it("keeps an atomic batch's changes together, in its order", () => {
    expect(run.writes.some((write) => write.batch && write.status === 200)).toBe(true)
    expect(splitBatches(run.feeds[0] ?? [], run.writes)).toEqual([])
  })

  it('sends the stream exactly the changes of the feed from the moment it opened, through either worker', () => {
    const first = expectStreamFromOpening(run.stream, run.feeds[0] ?? [], run.writes, { commitOrder: true })
    expect(first).toBeGreaterThan(0)
  })

  it('resumes a stream closed midway by Last-Event-ID with exactly the changes it missed', () => {
    expectResumedWithoutGap(run.resumed, run.feeds[0] ?? [])
  })
})
