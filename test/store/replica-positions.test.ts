import { describe, expect, it } from 'bun:test'
import { MAX_REMEMBERED_CLIENTS, RecentCommits } from '../../src/store/postgres/replicas/recent-commits'
import { Probe, Replica } from '../../src/store/postgres/replicas/replica'
import {
  DEFAULT_WAL_GEOMETRY,
  PrimaryTimeline,
  parseLsn,
  recordEnd,
} from '../../src/store/postgres/replicas/wal-positions'

/*
 * What read replicas are judged by (docs/postgres.md, "Read replicas"): the primary's WAL positions
 * over time, and each client's last commit, remembered for a bounded time and a bounded memory.
 */

const PAGE = DEFAULT_WAL_GEOMETRY.blockSize
const SEGMENT = DEFAULT_WAL_GEOMETRY.segmentSize

describe('WAL positions', () => {
  it('reads an LSN as the byte offset it stands for', () => {
    expect(parseLsn('0/0')).toBe(0)
    expect(parseLsn('0/3430CA0')).toBe(0x3430ca0)
    expect(parseLsn('16/B374D848')).toBe(0x16 * 2 ** 32 + 0xb374d848)
  })

  it("takes an insert position just past a page's header as the end of the record before it", () => {
    expect(recordEnd(3 * PAGE + 24, DEFAULT_WAL_GEOMETRY)).toBe(3 * PAGE)
    expect(recordEnd(2 * SEGMENT + 40, DEFAULT_WAL_GEOMETRY)).toBe(2 * SEGMENT)
    expect(recordEnd(3 * PAGE + 200, DEFAULT_WAL_GEOMETRY)).toBe(3 * PAGE + 200)
  })
})

describe('PrimaryTimeline', () => {
  it('knows no position after a time until a poll sent after it has answered', () => {
    const timeline = new PrimaryTimeline(10_000)
    expect(timeline.positionAfter(0)).toBeUndefined()
    timeline.observe(100, 5000, 5000)
    expect(timeline.positionAfter(50)).toBe(5000)
    expect(timeline.positionAfter(100)).toBe(5000)
    // A commit answered at 150: no poll has been sent since.
    expect(timeline.positionAfter(150)).toBeUndefined()
    timeline.observe(200, 5000, 5000)
    expect(timeline.positionAfter(150)).toBe(5000)
    timeline.observe(300, 9000, 9000)
    expect(timeline.positionAfter(250)).toBe(9000)
    expect(timeline.positionAfter(200)).toBe(5000)
  })

  it('asks a standby for where the primary was REPLICA_MAX_LAG ago, and no more than it has flushed', () => {
    const timeline = new PrimaryTimeline(6000)
    expect(timeline.required(0, 5000)).toBe(Number.POSITIVE_INFINITY)
    for (let t = 0; t <= 10_000; t += 100) timeline.observe(t, 1000 + t, 1000 + t)
    // At 10 s, with 5 s allowed: the position of the poll at 5 s.
    expect(timeline.required(10_000, 5000)).toBe(6000)
    expect(timeline.lagMs(10_000, 6000)).toBe(4900)
    expect(timeline.lagMs(10_000, 11_000)).toBe(0)
    // A record inserted but never flushed (a page pruned by a read, no commit after it) is not waited for.
    timeline.observe(10_100, 20_000, 11_000)
    expect(timeline.required(30_000, 5000)).toBe(11_000)
    expect(timeline.lagMs(30_000, 11_000)).toBe(0)
  })

  it('keeps the positions of REPLICA_MAX_LAG and a little more, however long it runs', () => {
    const timeline = new PrimaryTimeline(6000)
    for (let t = 0; t <= 3_600_000; t += 100) timeline.observe(t, t, t)
    expect(timeline.required(3_600_000, 5000)).toBe(3_595_000)
    // Older than any kept: the oldest kept answers, which is later (a standby is asked for more, never less).
    expect(timeline.positionAfter(0)).toBeGreaterThanOrEqual(3_594_000 - 100)
  })
})

describe('RecentCommits', () => {
  it('asks nothing of a replica for a client that has not written, and the primary alone until a poll follows its commit', () => {
    const timeline = new PrimaryTimeline(6000)
    const commits = new RecentCommits(timeline)
    timeline.observe(0, 1000, 1000)
    expect(commits.required('token:reader')).toBe(0)
    commits.committed('token:writer', 50)
    expect(commits.required('token:writer')).toBe(Number.POSITIVE_INFINITY)
    timeline.observe(100, 1500, 1500)
    expect(commits.required('token:writer')).toBe(1500)
    expect(commits.required('token:reader')).toBe(0)
  })

  it('forgets a commit once every replica in use must have replayed it: about REPLICA_MAX_LAG after it', () => {
    const timeline = new PrimaryTimeline(6000)
    const commits = new RecentCommits(timeline)
    timeline.observe(0, 1000, 1000)
    commits.committed('address:10.0.0.1', 10)
    for (let t = 100; t <= 5000; t += 100) {
      timeline.observe(t, 1000 + t, 1000 + t)
      commits.forget(timeline.required(t, 5000))
    }
    expect(commits.size).toBe(1)
    for (let t = 5100; t <= 5200; t += 100) {
      timeline.observe(t, 1000 + t, 1000 + t)
      commits.forget(timeline.required(t, 5000))
    }
    expect(commits.size).toBe(0)
    expect(commits.required('address:10.0.0.1')).toBe(0)
  })

  it(`remembers at most ${MAX_REMEMBERED_CLIENTS.toLocaleString('en-US')} clients, in under 20 MB, and a client pushed out still reads its writes`, () => {
    const timeline = new PrimaryTimeline(6000)
    const commits = new RecentCommits(timeline)
    timeline.observe(0, 1000, 1000)
    Bun.gc(true)
    const before = process.memoryUsage().heapUsed
    for (let i = 0; i < 2.5 * MAX_REMEMBERED_CLIENTS; i++)
      commits.committed(`address:10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, 1 + i / 1e6)
    Bun.gc(true)
    const grown = process.memoryUsage().heapUsed - before
    expect(commits.size).toBe(MAX_REMEMBERED_CLIENTS)
    expect(grown).toBeLessThan(20 * 1024 * 1024)
    timeline.observe(100, 7000, 7000)
    // The first client's entry was pushed out: the floor still holds it to its commit's position.
    expect(commits.required('address:10.0.0.0')).toBe(7000)
    // And so, while the floor lasts, every client: a replica must have what was pushed out.
    expect(commits.required('address:192.168.0.1')).toBe(7000)
    timeline.observe(5200, 9000, 9000)
    commits.forget(timeline.required(5200, 5000))
    expect(commits.size).toBe(0)
    expect(commits.required('address:192.168.0.1')).toBe(0)
  })

  it('holds one entry for a client however often it writes', () => {
    const timeline = new PrimaryTimeline(6000)
    const commits = new RecentCommits(timeline)
    Bun.gc(true)
    const before = process.memoryUsage().heapUsed
    for (let i = 0; i < 1_000_000; i++) commits.committed('token:busy', 1 + i / 1e6)
    Bun.gc(true)
    expect(commits.size).toBe(1)
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(20 * 1024 * 1024)
  })
})

describe('Replica report', () => {
  // No server is reached: a pool connects on its first query, and this asks none.
  const url = 'postgres://catalogue@127.0.0.1:1/none'
  const replica = (): Replica => new Replica('127.0.0.1:1/none', url, {}, new Probe(url, {}), undefined)

  it('shows the lag in seconds to the millisecond, as /ready and the log print it', () => {
    const lagging = replica()
    // Poll times are fractional milliseconds: the lag they give is too.
    lagging.lagMs = 1601.8027959999999
    expect(lagging.report().lagSeconds).toBe(1.602)
    expect(JSON.stringify({ lag_seconds: lagging.report().lagSeconds })).toBe('{"lag_seconds":1.602}')
    lagging.lagMs = 0.4
    expect(lagging.report().lagSeconds).toBe(0)
  })

  it('shows no lag before the first poll', () => {
    expect(replica().report().lagSeconds).toBeNull()
  })
})
