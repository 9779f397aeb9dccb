/**
 * `bun run bench -- change-latency [--cases latency,catch-up] [--backends sqlite,postgres]
 * [--streams 1,50] [--rate 50] [--seconds 20] [--rounds 2] [--shapes one,two] [--backlog 20000]
 * [--deadline 30] [--quick]`: the change feed's streams (issues 26 and 33), in two cases.
 *
 * `latency`: how long a change takes to reach the streams. For each backend and shape
 * (bench/parts/change-latency/setups.ts: one process or instance; `--workers 2` on SQLite, two
 * instances on PostgreSQL), the service runs on a copy of 10,000 seeded books; each round opens N
 * streams (`Accept: text/event-stream` on `GET /api/v1/changes`), sends 1 s of unmeasured writes,
 * then POSTs a book and PATCHes it, alternately, at `--rate` writes a second for `--seconds`
 * (bench/parts/change-latency/round.ts), and matches each event to its write by the record and the
 * operation. Rounds alternate the stream counts. Prints a markdown table (p50, p99 and max from the
 * write's answer and from its sending, the share within 1 s) and writes it to
 * bench/results/change-latency.md unless `--quick` (5 s, one round).
 *
 * `catch-up`: how fast a stream far behind is fed. For each backend, a catalogue of `--backlog`
 * books seeded at once (about 120 changes more), the service (one process or instance) and its
 * reference (bench/parts/change-latency/reference-feed.ts); at each stream count (`--streams`,
 * here 1,50,200 unless given), N streams from the feed's start, each read until it has every
 * change once and in order or `--deadline` seconds passed, with GET one book meanwhile
 * (bench/parts/change-latency/catch-up.ts). Writes bench/results/change-catch-up.md unless `--quick`.
 */
import { writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { pinning } from '../harness/measure'
import type { RunningServer } from '../harness/servers'
import { type CatchUpBackend, catchUpBackend } from '../parts/change-latency/catch-up'
import { catchUpSection } from '../parts/change-latency/catch-up-report'
import { startCatchUp } from '../parts/change-latency/catch-up-setup'
import { type Cell, latencySection } from '../parts/change-latency/report'
import { measureRound, type RoundResult } from '../parts/change-latency/round'
import { type Backend, type Shape, seedFor, startSetup } from '../parts/change-latency/setups'

type Case = 'latency' | 'catch-up'

interface Options {
  readonly cases: readonly Case[]
  readonly backends: readonly Backend[]
  readonly shapes: readonly Shape[]
  readonly streams: readonly number[]
  readonly catchUpStreams: readonly number[]
  readonly backlog: number
  readonly deadlineSeconds: number
  readonly rate: number
  readonly seconds: number
  readonly rounds: number
  readonly quick: boolean
}

const VALUED = [
  '--cases',
  '--backends',
  '--shapes',
  '--streams',
  '--rate',
  '--seconds',
  '--rounds',
  '--backlog',
  '--deadline',
]

function options(argv: readonly string[]): Options | string {
  for (const [i, arg] of argv.entries()) {
    if (VALUED.includes(argv[i - 1] ?? '')) continue
    if (!VALUED.includes(arg) && arg !== '--quick')
      return `change-latency: unknown option "${arg}" (${VALUED.join(', ')}, --quick)`
  }
  const value = (name: string) => {
    const at = argv.indexOf(name)
    return at === -1 ? undefined : argv[at + 1]
  }
  const list = (name: string, fallback: string) => (value(name) ?? fallback).split(',').filter((v) => v !== '')
  const quick = argv.includes('--quick')
  const cases = list('--cases', 'latency,catch-up')
  if (cases.length === 0 || cases.some((c) => c !== 'latency' && c !== 'catch-up'))
    return '--cases takes latency, catch-up or both'
  const backends = list('--backends', process.env.BENCH_BACKENDS ?? 'sqlite,postgres')
  if (backends.length === 0 || backends.some((b) => b !== 'sqlite' && b !== 'postgres'))
    return '--backends takes sqlite, postgres or both'
  const shapes = list('--shapes', 'one,two')
  if (shapes.length === 0 || shapes.some((s) => s !== 'one' && s !== 'two')) return '--shapes takes one, two or both'
  const counts = (fallback: string) => list('--streams', fallback).map(Number)
  const streams = counts('1,50')
  const catchUpStreams = counts('1,50,200')
  if ([...streams, ...catchUpStreams].some((n) => !Number.isInteger(n) || n < 1 || n > 900) || streams.length === 0)
    return '--streams takes counts from 1 to 900'
  // More would not all be open at once: Bun's fetch keeps 256 connections, the others wait.
  if (cases.includes('catch-up') && catchUpStreams.some((n) => n > 256))
    return '--streams: the catch-up case opens at most 256 streams at once'
  const number = (name: string, fallback: number) => Number(value(name) ?? fallback)
  const rate = number('--rate', 50)
  const seconds = number('--seconds', quick ? 5 : 20)
  const rounds = number('--rounds', quick ? 1 : 2)
  if (!(rate > 0 && rate <= 2000)) return '--rate takes writes a second, up to 2000'
  if (!(seconds > 0) || !Number.isInteger(rounds) || rounds < 1) return '--seconds and --rounds take positive numbers'
  const backlog = number('--backlog', 20_000)
  const deadlineSeconds = number('--deadline', 30)
  if (!Number.isInteger(backlog) || backlog < 1 || backlog > 1_000_000) return '--backlog takes books, 1 to 1000000'
  if (!(deadlineSeconds > 0)) return '--deadline takes seconds'
  return {
    cases: cases as Case[],
    backends: backends as Backend[],
    shapes: shapes as Shape[],
    streams,
    catchUpStreams,
    backlog,
    deadlineSeconds,
    rate,
    seconds,
    rounds,
    quick,
  }
}

const machine = () =>
  `Bun ${Bun.version}, ${cpus().length} CPU cores (${cpus()[0]?.model.trim() ?? 'unknown'}), ${new Date().toISOString().slice(0, 10)}`

/** The commit the run measured, the one that last changed src/, and whether src/ has changes not committed. */
function build(): string {
  const git = (...args: string[]) =>
    Bun.spawnSync(['git', ...args], { stderr: 'ignore' })
      .stdout.toString()
      .trim()
  const head = git('rev-parse', '--short', 'HEAD') || 'unknown'
  const source = git('log', '-1', '--format=%h', '--', 'src')
  const changed = git('status', '--porcelain', 'src') !== ''
  return `${head}${source !== '' && source !== head ? ` (src/ as of ${source})` : ''}${changed ? ', with changes to src/ not committed' : ''}`
}

async function latencyCase(chosen: Options, dir: string, track: (server: RunningServer) => void): Promise<number> {
  const started = performance.now()
  const cells: Cell[] = []
  for (const backend of chosen.backends) {
    const seeded = await seedFor(backend, dir)
    for (const shape of chosen.shapes) {
      const setup = await startSetup(seeded, shape, dir, track)
      try {
        const rounds = new Map<number, RoundResult[]>(chosen.streams.map((n) => [n, []]))
        for (let round = 0; round < chosen.rounds; round++) {
          const order = round % 2 === 0 ? chosen.streams : [...chosen.streams].reverse()
          for (const streams of order) {
            const result = await measureRound({
              writeOrigin: setup.writeOrigin,
              streamOrigin: setup.streamOrigin,
              streams,
              rate: chosen.rate,
              seconds: chosen.seconds,
              warmupSeconds: 1,
              drainMs: 5000,
              ...(setup.watchOthers === undefined ? {} : { watchOthers: setup.watchOthers }),
            })
            rounds.get(streams)?.push(result)
            const exited = setup.exited()
            if (exited.length > 0) throw new Error(`${setup.name}, ${streams} streams: ${exited.join('; ')}`)
            const arrived = result.fromAckMs.length
            process.stderr.write(
              `change-latency: ${setup.name}, ${streams} streams, round ${round + 1}: ${arrived}/${result.expected} arrived, ${result.writeErrors} writes failed${result.longestOtherMs === undefined ? '' : `, longest other transaction on the cluster ${Math.round(result.longestOtherMs)} ms`}${result.firstWriteError === undefined ? '' : ` (${result.firstWriteError})`}\n`,
            )
          }
        }
        for (const [streams, results] of rounds) cells.push({ setup: setup.name, streams, rounds: results })
      } finally {
        await setup.stop()
      }
    }
  }
  const intro = [
    '# The change feed: how long a change takes to reach a stream (bun run bench -- change-latency)',
    '',
    `${machine()}; the whole run took ${Math.round((performance.now() - started) / 1000)} s. The service (\`bun src/cli.ts serve\`, LOG_LEVEL=info, as operators run it) on 10,000 seeded books; ${pinning.note}; \`--workers 2\` on both cores. Each round opens the streams (\`Accept: text/event-stream\` on \`GET /api/v1/changes\`, from now), sends 1 s of unmeasured writes, then ${chosen.rate} writes a second for ${chosen.seconds} s, open loop: POST a book, then PATCH that book, alternately. An event is matched to its write by \`attributes.op\` and \`relationships.resource.data\`. "From answer": from the write's answer received to the event read on a stream (negative where the event came first); "from sending": from the write's request sent. Percentiles over every (write, stream) pair of a round; then the median of ${chosen.rounds} round${chosen.rounds === 1 ? '' : 's'} (lowest to highest). The streams and the writer are one Bun process on core 1: with 50 streams, its own reading is part of the figures. On PostgreSQL the last column is the longest time another transaction anywhere on the cluster (in another database too) held a transaction id during the measured writes (pg_stat_activity, every 100 ms): the feed shows a change once every transaction begun before it has ended, so such a transaction holds the streams back.`,
  ].join('\n')
  const text = `${latencySection(cells, intro)}\n`
  console.log(`\n${text}`)
  if (!chosen.quick) writeFileSync(join(import.meta.dir, '..', 'results', 'change-latency.md'), text)
  const failed = cells.some((cell) =>
    cell.rounds.some((r) => r.writeErrors > 0 || r.missing > 0 || r.streamEnded !== undefined),
  )
  return failed ? 1 : 0
}

async function catchUpCase(chosen: Options, dir: string, track: (server: RunningServer) => void): Promise<number> {
  const started = performance.now()
  const backends: CatchUpBackend[] = []
  for (const backend of chosen.backends) {
    const setup = await startCatchUp(backend, chosen.backlog, dir, track)
    try {
      process.stderr.write(
        `change-latency: catch-up on ${backend}: ${setup.expected.length} changes in the feed, seeded in ${Math.round(setup.seededMs)} ms\n`,
      )
      backends.push(await catchUpBackend(setup, chosen.catchUpStreams, chosen.deadlineSeconds * 1000))
    } finally {
      await setup.stop()
    }
  }
  const changes = backends.map((b) => `${b.changes.toLocaleString('en-US')} on ${b.backend}`).join(', ')
  const intro = [
    '# The change feed: how fast a stream far behind catches up (bun run bench -- change-latency --cases catch-up)',
    '',
    `${machine()}; commit ${build()}; the whole case took ${Math.round((performance.now() - started) / 1000)} s. A catalogue of ${chosen.backlog.toLocaleString('en-US')} books, seeded at once through the store (changes in its feed: ${changes}), the service (\`bun src/cli.ts serve\`, LOG_LEVEL=info, one process or instance) and beside it the reference (bench/parts/change-latency/reference-feed.ts: plain Bun.serve over bun:sqlite or Bun's \`SQL\`, the same events read 1,000 rows at a time, one read shared by the streams at one position, and written with backpressure); ${pinning.note}. At each stream count, N streams are opened at once with \`Accept: text/event-stream\` on \`GET /api/v1/changes?page[after]=0\` (the feed's start) and read as fast as the client can, each until it has every change, every id the one the feed's JSON pages list at that place (once, in order), or ${chosen.deadlineSeconds} s passed. "Changes/s a stream": the changes over the time from its request sent to its last change read, of the streams that got them all; "all streams": every change read over the case's time. Meanwhile a process of its own sends GET /api/v1/books/1, one request at a time (bench/parts/change-latency/book-probe.ts); the rows of 0 streams are the same GET for 1 s with nothing else running. The streams are read by the bench, one Bun process on core 1, which the GET's process shares: with 200 streams, the client's reading is part of the figures (the reference's too).`,
  ].join('\n')
  const text = `${catchUpSection(backends, intro)}\n`
  console.log(`\n${text}`)
  if (!chosen.quick) writeFileSync(join(import.meta.dir, '..', 'results', 'change-catch-up.md'), text)
  const incomplete = backends.some((b) => b.cases.some((c) => c.results.some((r) => r.outcome !== 'complete')))
  return incomplete ? 1 : 0
}

export async function changeLatencyBench(
  argv: readonly string[],
  dir: string,
  track: (server: RunningServer) => void,
): Promise<number> {
  const chosen = options(argv)
  if (typeof chosen === 'string') {
    console.error(`bench: ${chosen}`)
    return 2
  }
  let code = 0
  // Catch-up first: its cases are the shorter, and a failure there does not stop the latency rounds.
  if (chosen.cases.includes('catch-up')) code = Math.max(code, await catchUpCase(chosen, dir, track))
  if (chosen.cases.includes('latency')) code = Math.max(code, await latencyCase(chosen, dir, track))
  return code
}
