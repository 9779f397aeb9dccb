/**
 * `bun run bench -- machinery [--only PIECE,...]`: whether each piece of the SQLite backend's
 * optional machinery earns its place (issue 25). For each case of cases.ts two
 * services run side by side on copies of the same file, one as it always runs and one started with
 * CATALOGUE_WITHOUT=<piece> (src/store/sqlite/commits/switches.ts), and wrk loads them in alternating
 * rounds (with, without, then without, with...), BENCH_ROUNDS each (3 by default) of BENCH_SECONDS
 * (3). Prints a markdown table of medians, spreads and ratios, and writes it to
 * bench/results/machinery.md. (The supervisor's remote writes and the backup thread were measured
 * the same way and removed: their figures are in docs/performance.md.)
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type MachineryPiece, machineryPieces, WITHOUT_ENV } from '../../../src/store/sqlite/commits/switches'
import { SEED, seed } from '../../data/seed'
import { summarize } from '../../harness/load'
import { pinning } from '../../harness/measure'
import { cpuSeconds } from '../../harness/process-tree'
import { copiesFor, type RunningServer, stopServer, waitUntilReady } from '../../harness/servers'
import { median } from '../../harness/statistics'
import { markdownTable } from '../../harness/tables'
import { type Load, type MachineryCase, machineryCases } from './cases'
import { fixed, loadRound, spread, startService } from './service'

const ROUNDS = Number(process.env.BENCH_ROUNDS) > 0 ? Number(process.env.BENCH_ROUNDS) : 3
const ROUND_MS = 1000 * (Number(process.env.BENCH_SECONDS) > 0 ? Number(process.env.BENCH_SECONDS) : 3)
const WARMUP_MS = 1000

type Variant = 'with' | 'without'

/** One round of one variant: each part's rate and p99, the server's CPU per answered request. */
interface Round {
  readonly parts: readonly { readonly perSecond: number; readonly p99Ms: number; readonly errors: number }[]
  readonly cpuUsPerRequest: number
}

async function measure(server: RunningServer, load: Load): Promise<Round> {
  const before = cpuSeconds(server.process.pid) ?? 0
  const rounds = await loadRound(server, load, ROUND_MS)
  const after = cpuSeconds(server.process.pid) ?? 0
  const answered = rounds.reduce((sum, round) => sum + round.answered, 0)
  return {
    parts: rounds.map((round) => {
      const { perSecond, p99Ms, errors } = summarize([round])
      return { perSecond, p99Ms, errors }
    }),
    cpuUsPerRequest: answered > 0 ? ((after - before) * 1e6) / answered : Number.NaN,
  }
}

async function runCase(
  one: MachineryCase,
  pristine: string,
  dir: string,
  index: number,
  track: (server: RunningServer) => void,
): Promise<string[][]> {
  const files = copiesFor(pristine, dir, `machinery-${index}`, ['with', 'without'] as const)
  const env = { DURABILITY: one.durability }
  const servers: Record<Variant, RunningServer> = {
    with: startService('with', files.with, env, one.workers, track),
    without: startService('without', files.without, { ...env, [WITHOUT_ENV]: one.piece }, one.workers, track),
  }
  const rounds: Record<Variant, Round[]> = { with: [], without: [] }
  try {
    await Promise.all(Object.values(servers).map((server) => waitUntilReady(server, '/api/v1/books/1')))
    for (const server of Object.values(servers)) await loadRound(server, one.load, WARMUP_MS)
    for (let round = 0; round < ROUNDS; round++) {
      const order: Variant[] = round % 2 === 0 ? ['with', 'without'] : ['without', 'with']
      for (const variant of order) rounds[variant].push(await measure(servers[variant], one.load))
    }
  } finally {
    await Promise.all(Object.values(servers).map(stopServer))
  }
  const setting = `DURABILITY=${one.durability}${one.workers > 1 ? `, --workers ${one.workers}` : ''}`
  const rows: string[][] = []
  one.load.parts.forEach((part, i) => {
    const of = (variant: Variant, pick: (p: Round['parts'][number]) => number) =>
      rounds[variant].map((r) => pick(r.parts[i] as Round['parts'][number]))
    const rate = { with: of('with', (p) => p.perSecond), without: of('without', (p) => p.perSecond) }
    const p99 = { with: of('with', (p) => p.p99Ms), without: of('without', (p) => p.p99Ms) }
    const errors = [...of('with', (p) => p.errors), ...of('without', (p) => p.errors)].reduce((a, b) => a + b, 0)
    const rateGain = median(rate.with) / median(rate.without)
    const p99Gain = median(p99.without) / median(p99.with)
    rows.push([
      one.piece,
      `${one.load.name}: ${part.label}`,
      setting,
      spread(rate.with),
      spread(rate.without),
      rateGain.toFixed(2),
      spread(p99.with),
      spread(p99.without),
      p99Gain.toFixed(2),
      i === 0
        ? `${fixed(median(rounds.with.map((r) => r.cpuUsPerRequest)))} / ${fixed(median(rounds.without.map((r) => r.cpuUsPerRequest)))}`
        : '',
      Math.max(rateGain, p99Gain) >= 1.1 ? 'gains' : 'no gain',
      String(errors),
    ])
  })
  process.stderr.write(`machinery: ${one.piece}, ${setting}, ${one.load.name} measured\n`)
  return rows
}

const HEADER = [
  'piece',
  'scenario',
  'setting',
  'req/s with',
  'req/s without',
  'rate ratio',
  'p99 ms with',
  'p99 ms without',
  'p99 ratio (without / with)',
  'CPU µs/req with / without',
  '10 % line',
  'errors',
]

/** `--only wal-flush,checkpointer`: the pieces to measure (all by default). */
function chosenPieces(argv: readonly string[]): readonly MachineryPiece[] | string {
  const at = argv.indexOf('--only')
  if (at === -1) return machineryPieces
  const names = (argv[at + 1] ?? '').split(',').filter((name) => name !== '')
  const unknown = names.find((name) => !(machineryPieces as readonly string[]).includes(name))
  if (unknown !== undefined || names.length === 0) return `--only takes some of ${machineryPieces.join(', ')}`
  return names as MachineryPiece[]
}

export async function machineryBench(
  argv: readonly string[],
  dir: string,
  track: (server: RunningServer) => void,
): Promise<number> {
  const pieces = chosenPieces(argv)
  if (typeof pieces === 'string') {
    console.error(`bench: ${pieces}`)
    return 2
  }
  const started = performance.now()
  const pristine = join(dir, 'machinery-pristine.db')
  await seed(pristine, SEED)
  const rows: string[][] = []
  const cases = machineryCases.filter((one) => pieces.includes(one.piece))
  for (const [index, one] of cases.entries()) rows.push(...(await runCase(one, pristine, dir, index, track)))
  const sections = [
    `# Machinery with and without (bun run bench -- machinery)\n\nBun ${Bun.version}, ${new Date().toISOString().slice(0, 10)}; ${SEED.books.toLocaleString('en-US')} books; wrk at 32 connections (the mixed load: 16 reading, 16 writing at once); ${ROUNDS} alternating rounds of ${ROUND_MS / 1000} s a variant after ${WARMUP_MS / 1000} s of warm-up; medians (min-max) of the rounds. One process: pinned to core 0 (${pinning.note}); --workers 2: spread over both cores. "without": CATALOGUE_WITHOUT=<piece>. A ratio is the gain the piece gives: rate with / without, p99 without / with. CPU is the whole process tree's per answered request.\n`,
  ]
  if (rows.length > 0) sections.push(markdownTable(HEADER, rows))
  sections.push(`The whole run took ${Math.round((performance.now() - started) / 1000)} s.`)
  const text = `${sections.join('\n\n')}\n`
  console.log(text)
  writeFileSync(join(import.meta.dir, '../../results/machinery.md'), text)
  return 0
}
