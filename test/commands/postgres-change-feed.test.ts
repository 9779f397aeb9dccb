import { expect, setDefaultTimeout } from 'bun:test'
import { SQL } from 'bun'
import { type Service, startService } from '../support/commands'
import {
  expectedOpsByRecord,
  expectResumedWithoutGap,
  expectStreamFromOpening,
  opsByRecord,
  orderViolations,
  repeatedIds,
  type Scenario,
  splitBatches,
  streamDelays,
  writeWhileFollowing,
} from '../support/feed-checks'
import { ChangeStream, Follower } from '../support/feed-follower'
import type { Write } from '../support/feed-ledger'
import { Writer } from '../support/feed-writers'
import { afterAll, beforeAll, describe, it, POSTGRES_SERVER } from '../support/postgres-tests'
import { removeTempDirs, stopChildren } from '../support/process'
import { scratchDatabases } from '../support/test-database'

// Processes and databases on a machine that may be busy (2 cores): Bun's 5 s default is far too short.
setDefaultTimeout(60_000)

/*
 * The change feed under concurrency on PostgreSQL: two instances of the service, each its own
 * process, on one database. Eight writers send their writes to both in turn while a follower walks
 * GET /api/v1/changes on each and a stream is open on the first; then the feed is held to
 * FEED-SPEC.md's guarantees, on both followers alike. And a transaction left open outside the
 * service does not make a follower skip its change.
 */

const JSON_API = 'application/vnd.api+json'
/** The writers and the scenario: several hundred writes on a 2-core machine. */
const SCENARIO_MS = 300_000
/** A change acknowledged by one instance reaches a stream on the other within 1 s (FEED-SPEC.md); margin for a loaded machine. */
const STREAM_DELAY_MS = 2_000

const scratch = scratchDatabases(POSTGRES_SERVER)

afterAll(async () => {
  await stopChildren()
  removeTempDirs()
  await scratch.dropAll()
})

describe('GET /api/v1/changes with two instances on one PostgreSQL database, eight writers at once', () => {
  let url: string
  let a: Service
  let b: Service
  let run: Scenario

  beforeAll(async () => {
    url = await scratch.fresh()
    // The first migrates the empty database; the second starts on it.
    a = await startService({ DATABASE_URL: url })
    b = await startService({ DATABASE_URL: url })
    run = await writeWhileFollowing({
      apis: [a.api, b.api],
      followerApis: [a.api, b.api],
      streamApi: a.api,
      writers: 8,
      writesEach: 60,
    })
  }, SCENARIO_MS)

  afterAll(() => {
    run?.stream.close()
    run?.resumed.after.close()
    // An instance that died midway shows in the tests as ECONNRESET: say which, and how it ended.
    for (const { child } of [a, b].filter(Boolean)) {
      const { pid, exitCode, signalCode } = child.proc
      if (exitCode !== null || signalCode !== null) console.error({ pid, exitCode, signalCode, stderr: child.stderr })
    }
  })

  it('took writes of every kind on both instances, some refused', () => {
    expect(new Set(run.writes.map((write) => write.what)).size).toBeGreaterThanOrEqual(15)
    expect(run.writes.filter((write) => write.status >= 400).length).toBeGreaterThan(0)
    expect(new Set(run.writes.map((write) => write.instance))).toEqual(new Set([0, 1]))
  })

  it('gives the followers on both instances the same changes in the same order, each once', () => {
    const [first, second] = run.feeds as [Scenario['feeds'][0], Scenario['feeds'][0]]
    expect(first.length).toBeGreaterThan(300)
    // Both walked while the writers wrote, not only after them.
    for (const read of run.readWhileWriting) expect(read).toBeGreaterThan(40)
    expect(repeatedIds(first)).toEqual([])
    expect(second.map((change) => change.id)).toEqual(first.map((change) => change.id))
    expect(second).toEqual(first)
  })

  it('names on both instances the newest change in meta.latest once the writes are acknowledged: a follower that reaches it has them all', () => {
    expect(run.latestAtFinish).toEqual(run.feeds.map((feed) => feed.at(-1)?.id))
  })

  it("holds exactly the acknowledged writes' changes, per record in its writer's order, and none of a refused write", () => {
    for (const feed of run.feeds) expect(opsByRecord(feed)).toEqual(expectedOpsByRecord(run.writes))
  })

  it('puts a write acknowledged before another was sent before it, whichever instance took each', () => {
    for (const feed of run.feeds) expect(orderViolations(feed, run.writes)).toEqual([])
  })

  it("keeps an atomic batch's changes together, in its order", () => {
    expect(run.writes.some((write) => write.batch && write.status === 200)).toBe(true)
    for (const feed of run.feeds) expect(splitBatches(feed, run.writes)).toEqual([])
  })

  it('sends the stream on one instance exactly the changes of the feed from the moment it opened', () => {
    expect(expectStreamFromOpening(run.stream, run.feeds[0] ?? [], run.writes, { commitOrder: false })).toBeGreaterThan(
      0,
    )
  })

  it('resumes a stream closed midway by Last-Event-ID with exactly the changes it missed', () => {
    expectResumedWithoutGap(run.resumed, run.feeds[0] ?? [])
  })

  it('brings the stream on one instance the changes the other acknowledged within a second', () => {
    const delays = streamDelays(run.stream, run.feeds[0] ?? [], run.writes, 1).sort((x, y) => x - y)
    expect(delays.length).toBeGreaterThan(20)
    const p50 = delays[Math.floor(delays.length / 2)] as number
    const max = delays.at(-1) as number
    console.log(`changes acknowledged by B on A's stream: p50 ${p50.toFixed(0)} ms, max ${max.toFixed(0)} ms`)
    expect(max).toBeLessThan(STREAM_DELAY_MS)
  })

  it('finds the change of a transaction left open outside the service once it commits, never skipping it', async () => {
    const direct = new SQL(url, { max: 1 })
    const connection = await direct.reserve()
    try {
      const now = await fetch(`${a.api}/changes?page[size]=1`, { headers: { accept: JSON_API } })
      const { latest } = ((await now.json()) as { meta: { latest: string | null } }).meta
      const writes: Write[] = []
      // The book's author is one no writer deletes, which would wait for the open transaction.
      const author = await new Writer(0, [a.api], [], writes).createAuthor()
      const writer = new Writer(9, [a.api, b.api], [author], writes)
      const follower = new Follower(a.api, `/api/v1/changes?page[after]=${latest ?? '0'}&page[size]=5`)
      await connection`BEGIN`
      const [held] = (await connection`
        INSERT INTO books (name, author_id) VALUES ('Held back', ${author}) RETURNING id`) as { id: string }[]
      // Other writes through both instances, and the follower walks on, while the transaction is open.
      await writer.run(30)
      await Bun.sleep(1_000)
      const readBeforeCommit = follower.changes.length
      await connection`COMMIT`
      await follower.finish(writes.flatMap((write) => write.changes).length + 1)
      console.log(
        `long transaction: the follower had read ${readBeforeCommit} of ${follower.changes.length} changes before it committed`,
      )

      const book = String(held?.id)
      expect(follower.changes.slice(0, readBeforeCommit).map((c) => c.relationships.resource.data)).not.toContainEqual({
        type: 'books',
        id: book,
      })
      expect(repeatedIds(follower.changes)).toEqual([])
      expect(opsByRecord(follower.changes)).toEqual(
        expectedOpsByRecord(writes, [{ type: 'books', id: book, op: 'create' }]),
      )
    } finally {
      await connection`ROLLBACK`.catch(() => {})
      connection.release()
      await direct.close()
    }
  })

  it('brings a stream a change within a second while a transaction is open in another database of the server', async () => {
    // Unrelated to the catalogue: another application's transaction, with a transaction id of its own.
    const elsewhere = new SQL(await scratch.fresh(), { max: 1 })
    const connection = await elsewhere.reserve()
    const stream = await ChangeStream.open(a.api)
    try {
      await connection`BEGIN`
      await connection`SELECT pg_current_xact_id()`
      const writes: Write[] = []
      const author = await new Writer(10, [b.api], [], writes).createAuthor()
      const acknowledged = performance.now()
      // Fails with "... did not reach the stream in 5000 ms" when it is held back until the other ends.
      const arrived = await stream.arrivalOf('authors', author, 5_000)
      expect(arrived - acknowledged).toBeLessThan(STREAM_DELAY_MS)
    } finally {
      stream.close()
      await connection`ROLLBACK`.catch(() => {})
      connection.release()
      await elsewhere.close()
    }
  })
})
