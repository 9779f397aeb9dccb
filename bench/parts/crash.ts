/**
 * `bun run bench -- crash`: the crash test's harness (test/support/crash.ts) for many more rounds.
 * The service runs on one temporary file under concurrent writers and is SIGKILLed at a random
 * moment, restarted on the file and checked, round after round; then a summary. DURABILITY, when
 * set, is passed on to the service.
 */
import { type CrashRound, CrashRun, type CrashTotals, crashTotals } from '../../test/support/crash'
import { markdownTable } from '../harness/tables'

const KILLS = 20
const WRITERS = 16
const WRITE_MS: readonly [number, number] = [1_000, 3_000]
/** Problems printed in full after the summary; the counts say how many there were. */
const SHOWN = 20

const count = (n: number) => n.toLocaleString('en-US')

function problemsOf(round: CrashRound): string[] {
  const { check } = round
  return [
    ...check.lost,
    ...check.halfApplied,
    ...check.unaccounted,
    ...check.searchMisses,
    ...check.totalMismatches,
    ...round.unexpected,
    ...(check.integrity === 'ok' ? [] : [`PRAGMA integrity_check: ${check.integrity}`]),
    ...(check.foreignKeyViolations === 0 ? [] : [`PRAGMA foreign_key_check: ${check.foreignKeyViolations} rows`]),
  ]
}

function progress(round: CrashRound, seconds: number): string {
  const { check } = round
  const records = check.records.authors + check.records.book_collections + check.records.books
  const problems = problemsOf(round).length
  return `round ${round.round}/${KILLS}: ${count(round.acknowledged)} writes acknowledged in ${(round.writeMs / 1000).toFixed(1)} s, ${check.inFlight} in flight at the kill (${check.appliedInFlight} stored); ${count(records)} records, ${count(check.searched)} searched for; ${problems === 0 ? 'all checks pass' : `${problems} problems`} (${seconds.toFixed(1)} s)\n`
}

/** Runs the rounds and prints the summary; 1 when any check failed. */
export async function crashBench(): Promise<number> {
  const durability = process.env.DURABILITY
  const env: Record<string, string> = durability === undefined ? {} : { DURABILITY: durability }
  const run = new CrashRun({ writers: WRITERS, writeMs: WRITE_MS, env })
  const started = performance.now()
  const rounds: CrashRound[] = []
  try {
    await run.start()
    for (let i = 0; i < KILLS; i++) {
      const roundStarted = performance.now()
      const round = await run.round()
      rounds.push(round)
      process.stderr.write(progress(round, (performance.now() - roundStarted) / 1000))
    }
  } finally {
    await run.stop()
  }
  const totals = crashTotals(rounds)
  const problems = rounds.flatMap(problemsOf)
  const setting = durability === undefined ? 'the default durability' : `DURABILITY=${durability}`
  console.log(
    [
      '',
      `## Crash test: ${KILLS} SIGKILLs under ${WRITERS} concurrent writers (${setting})`,
      '',
      `Bun ${Bun.version}, ${new Date().toISOString().slice(0, 10)}; writes for ${WRITE_MS[0] / 1000}-${WRITE_MS[1] / 1000} s before each kill; the whole run took ${Math.round((performance.now() - started) / 1000)} s.`,
      '',
      crashTable(totals),
      ...(problems.length === 0
        ? []
        : ['', `First ${Math.min(SHOWN, problems.length)} problems:`, ...problems.slice(0, SHOWN)]),
      '',
    ].join('\n'),
  )
  return problems.length === 0 ? 0 : 1
}

/** The crash run's totals: what must be 0 says so, and PASS or FAIL on each such line. */
export function crashTable(totals: CrashTotals): string {
  const n = (value: number) => value.toLocaleString('en-US')
  const mustBe = (ok: boolean) => (ok ? 'PASS' : 'FAIL')
  const zero = (value: number) => [n(value), mustBe(value === 0)]
  const rows = [
    ['kills (SIGKILL, then a restart on the same file)', n(totals.kills), ''],
    ['writes acknowledged (2xx)', n(totals.acknowledged), ''],
    ['writes in flight at a kill', n(totals.inFlight), ''],
    ['in-flight writes found stored after the restart', n(totals.appliedInFlight), ''],
    ['records searched for through the API', n(totals.searched), ''],
    ['acknowledged writes lost', ...zero(totals.lost)],
    ['atomic batches half-applied', ...zero(totals.halfApplied)],
    ['records stored that no writer sent', ...zero(totals.unaccounted)],
    ['search misses (current name not found, former name found)', ...zero(totals.searchMisses)],
    ['meta.total differing from the lists', ...zero(totals.totalMismatches)],
    ['writes answered with an error', ...zero(totals.unexpected)],
    ['PRAGMA integrity_check ok after every kill', totals.integrityOk ? 'yes' : 'no', mustBe(totals.integrityOk)],
    ['PRAGMA foreign_key_check rows', ...zero(totals.foreignKeyViolations)],
  ]
  return markdownTable(['check', 'count', 'verdict'], rows)
}
