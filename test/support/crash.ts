import { join } from 'node:path'
import { checkFile, checkSearch, checkTotals, listAll } from './crash-checks'
import { CRASH_TYPES, type CrashType, type KnownRecord, Ledger, type PendingWrite } from './crash-ledger'
import { runWriter } from './crash-writers'
import { type ChildProcess, spawnChild, tempDir, WAIT_MS, withTimeout } from './process'

/*
 * The crash harness: runs the real service (`bun src/cli.ts`) on a SQLite file, has concurrent
 * writers write to it over HTTP, SIGKILLs it at a random moment, starts it again on the same file
 * and checks that every acknowledged write is there with its effect, that no atomic batch is half
 * stored, that the file is sound and that the search finds what the tables hold. Rounds repeat on
 * the same file, so later rounds also check what earlier ones wrote.
 */

const CLI = join(import.meta.dir, '..', '..', 'src', 'cli.ts')
const REPO = join(import.meta.dir, '..', '..')
/** Records that every check searches for at random, besides those written just before the kill. */
const SAMPLE = 50
/** Records written this long before the kill are all searched for. */
const RECENT_MS = 1_000

export interface CrashOptions {
  /** Concurrent writer loops. */
  readonly writers: number
  /** Each round writes for a random time in this range (ms) before the SIGKILL. */
  readonly writeMs: readonly [min: number, max: number]
  /** Extra environment for the service, as a durability setting: `{ DURABILITY: 'normal' }`. */
  readonly env?: Readonly<Record<string, string>>
  /** Bound on each writer's writes in a round, should the kill never come. */
  readonly maxWritesPerWriter?: number
}

/** What a check after a restart found; every list is empty when nothing is wrong. */
export interface CrashCheck {
  readonly lost: readonly string[]
  readonly halfApplied: readonly string[]
  readonly unaccounted: readonly string[]
  readonly searchMisses: readonly string[]
  readonly totalMismatches: readonly string[]
  /** `PRAGMA integrity_check`'s rows, joined: "ok" when the file is sound. */
  readonly integrity: string
  readonly foreignKeyViolations: number
  /** Records searched for. */
  readonly searched: number
  /** Records the lists returned, by type. */
  readonly records: Readonly<Record<CrashType, number>>
  /** Writes in flight at the kill, and how many of them turned out stored. */
  readonly inFlight: number
  readonly appliedInFlight: number
}

export interface CrashRound {
  readonly round: number
  /** How long the writers wrote before the kill. */
  readonly writeMs: number
  /** Writes answered with a 2xx in this round. */
  readonly acknowledged: number
  /** Answers other than a 2xx, and failures while the service was up. */
  readonly unexpected: readonly string[]
  readonly check: CrashCheck
}

/** What the writers left when the kill came. */
export interface Killed {
  readonly at: number
  readonly writeMs: number
  readonly acknowledged: number
  readonly pending: readonly PendingWrite[]
  readonly unexpected: readonly string[]
}

const randomBetween = (min: number, max: number) => min + Math.random() * (max - min)

/** `size` distinct records drawn at random (all of them when there are fewer). */
function randomSample<T>(records: readonly T[], size: number): T[] {
  const pool = [...records]
  const count = Math.min(size, pool.length)
  for (let i = 0; i < count; i++) {
    const j = i + Math.floor(Math.random() * (pool.length - i))
    ;[pool[i], pool[j]] = [pool[j] as T, pool[i] as T]
  }
  return pool.slice(0, count)
}

export class CrashRun {
  readonly ledger = new Ledger()
  readonly dbPath: string
  private service: { child: ChildProcess; base: string } | null = null
  private rounds = 0

  constructor(private readonly options: CrashOptions) {
    this.dbPath = join(tempDir('catalogue-crash-'), 'catalogue.db')
  }

  /** Starts the service on the run's file and waits until it listens. */
  async start(): Promise<void> {
    const child = spawnChild(['bun', CLI], REPO, {
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: `sqlite://${this.dbPath}`,
      LOG_LEVEL: 'info',
      ...this.options.env,
    })
    const listening = await child.waitForLog((line) => line.msg === 'listening')
    this.service = { child, base: `http://127.0.0.1:${new URL(String(listening.url)).port}` }
  }

  /** One round: writes, a SIGKILL at a random moment, a restart on the same file, and the checks. */
  async round(): Promise<CrashRound> {
    const killed = await this.writeAndKill()
    const check = await this.restartAndCheck(killed)
    return {
      round: this.rounds,
      writeMs: killed.writeMs,
      acknowledged: killed.acknowledged,
      unexpected: killed.unexpected,
      check,
    }
  }

  /** The writers write until the service is SIGKILLed under them, then settle. */
  async writeAndKill(): Promise<Killed> {
    const service = this.running()
    this.rounds++
    const [min, max] = this.options.writeMs
    const writeMs = randomBetween(min, max)
    let killed = false
    const writers = Array.from({ length: this.options.writers }, (_, owner) =>
      runWriter({
        base: service.base,
        ledger: this.ledger,
        owner,
        killed: () => killed,
        maxWrites: this.options.maxWritesPerWriter ?? 100_000,
        deadline: performance.now() + writeMs + WAIT_MS,
      }),
    )
    await Bun.sleep(writeMs)
    service.child.proc.kill('SIGKILL')
    const at = performance.now()
    killed = true
    this.service = null
    await withTimeout(service.child.proc.exited, 'the killed service to exit')
    const outcomes = await withTimeout(Promise.all(writers), 'the writers to stop after the kill')
    return {
      at,
      writeMs,
      acknowledged: outcomes.reduce((sum, o) => sum + o.acknowledged, 0),
      pending: outcomes.flatMap((o) => (o.pending ? [o.pending] : [])),
      unexpected: outcomes.flatMap((o) => o.unexpected),
    }
  }

  /**
   * Starts the service again on the file and checks it against the ledger; `alsoSearch` adds
   * records to those searched for.
   */
  async restartAndCheck(killed: Killed, alsoSearch: readonly KnownRecord[] = []): Promise<CrashCheck> {
    await this.start()
    const { base } = this.running()
    const listed = await listAll(base)
    const found = this.ledger.reconcile(listed, killed.pending, killed.at)
    const live = this.ledger.live()
    const recent = live.filter((r) => r.touchedAt >= killed.at - RECENT_MS)
    const sample = new Set([...randomSample(live, SAMPLE), ...recent, ...alsoSearch.filter((r) => !r.deleted)])
    const [searchMisses, totalMismatches] = await Promise.all([
      checkSearch(base, this.ledger, [...sample]),
      checkTotals(base, listed),
    ])
    const file = checkFile(this.dbPath)
    return {
      ...found,
      searchMisses,
      totalMismatches,
      ...file,
      searched: sample.size,
      records: Object.fromEntries(CRASH_TYPES.map((t) => [t, listed[t].size])) as Record<CrashType, number>,
      inFlight: killed.pending.length,
    }
  }

  /** Stops the service if it runs (SIGKILL: the checks are done, and it is the harness's own child). */
  async stop(): Promise<void> {
    const service = this.service
    this.service = null
    if (!service) return
    service.child.proc.kill('SIGKILL')
    await withTimeout(service.child.proc.exited, 'the service to exit')
  }

  private running(): { child: ChildProcess; base: string } {
    if (!this.service) throw new Error('the service is not running: call start() first')
    return this.service
  }
}

/** The totals of a run's rounds, for a summary. */
export interface CrashTotals {
  readonly kills: number
  readonly acknowledged: number
  readonly lost: number
  readonly halfApplied: number
  readonly unaccounted: number
  readonly searchMisses: number
  readonly totalMismatches: number
  readonly unexpected: number
  readonly integrityOk: boolean
  readonly foreignKeyViolations: number
  readonly inFlight: number
  readonly appliedInFlight: number
  readonly searched: number
}

export function crashTotals(rounds: readonly CrashRound[]): CrashTotals {
  const sum = (of: (round: CrashRound) => number) => rounds.reduce((total, round) => total + of(round), 0)
  return {
    kills: rounds.length,
    acknowledged: sum((r) => r.acknowledged),
    lost: sum((r) => r.check.lost.length),
    halfApplied: sum((r) => r.check.halfApplied.length),
    unaccounted: sum((r) => r.check.unaccounted.length),
    searchMisses: sum((r) => r.check.searchMisses.length),
    totalMismatches: sum((r) => r.check.totalMismatches.length),
    unexpected: sum((r) => r.unexpected.length),
    integrityOk: rounds.every((r) => r.check.integrity === 'ok'),
    foreignKeyViolations: sum((r) => r.check.foreignKeyViolations),
    inFlight: sum((r) => r.check.inFlight),
    appliedInFlight: sum((r) => r.check.appliedInFlight),
    searched: sum((r) => r.check.searched),
  }
}
