/**
 * `bun run bench -- change-latency [--backends sqlite,postgres] [--streams 1,50] [--rate 50]
 * [--seconds 20] [--rounds 2] [--shapes one,two] [--quick]`: how long a change takes to reach the
 * streams of the change feed (issue 26). For each backend and shape (bench/parts/change-latency/
 * setups.ts: one process or instance; `--workers 2` on SQLite, two instances on PostgreSQL), the
 * service runs on a copy of 10,000 seeded books; each round opens N streams (`Accept:
 * text/event-stream` on `GET /api/v1/changes`), sends 1 s of unmeasured writes, then POSTs a book
 * and PATCHes it, alternately, at `--rate` writes a second for `--seconds`
 * (bench/parts/change-latency/round.ts), and matches each event to its write by the record and the
 * operation. Rounds alternate the stream counts. Prints a markdown table (p50, p99 and max from the
 * write's answer and from its sending, the share within 1 s) and writes it to
 * bench/results/change-latency.md unless `--quick` (5 s, one round).
 */
import { writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { pinning } from '../harness/measure'
import type { RunningServer } from '../harness/servers'
import { type Cell, latencySection } from '../parts/change-latency/report'
import { measureRound, type RoundResult } from '../parts/change-latency/round'
import { type Backend, type Shape, seedFor, startSetup } from '../parts/change-latency/setups'

interface Options {
  readonly backends: readonly Backend[]
  readonly shapes: readonly Shape[]
  readonly streams: readonly number[]
  readonly rate: number
  readonly seconds: number
  readonly rounds: number
  readonly quick: boolean
}

const VALUED = ['--backends', '--shapes', '--streams', '--rate', '--seconds', '--rounds']

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
  const backends = list('--backends', process.env.BENCH_BACKENDS ?? 'sqlite,postgres')
  if (backends.length === 0 || backends.some((b) => b !== 'sqlite' && b !== 'postgres'))
    return '--backends takes sqlite, postgres or both'
  const shapes = list('--shapes', 'one,two')
  if (shapes.length === 0 || shapes.some((s) => s !== 'one' && s !== 'two')) return '--shapes takes one, two or both'
  const streams = list('--streams', '1,50').map(Number)
  if (streams.length === 0 || streams.some((n) => !Number.isInteger(n) || n < 1 || n > 900))
    return '--streams takes counts from 1 to 900'
  const number = (name: string, fallback: number) => Number(value(name) ?? fallback)
  const rate = number('--rate', 50)
  const seconds = number('--seconds', quick ? 5 : 20)
  const rounds = number('--rounds', quick ? 1 : 2)
  if (!(rate > 0 && rate <= 2000)) return '--rate takes writes a second, up to 2000'
  if (!(seconds > 0) || !Number.isInteger(rounds) || rounds < 1) return '--seconds and --rounds take positive numbers'
  return {
    backends: backends as Backend[],
    shapes: shapes as Shape[],
    streams,
    rate,
    seconds,
    rounds,
    quick,
  }
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
  const cpu = cpus()[0]?.model.trim() ?? 'unknown'
  const intro = [
    '# The change feed: how long a change takes to reach a stream (bun run bench -- change-latency)',
    '',
    `Bun ${Bun.version}, ${cpus().length} CPU cores (${cpu}), ${new Date().toISOString().slice(0, 10)}; the whole run took ${Math.round((performance.now() - started) / 1000)} s. The service (\`bun src/cli.ts serve\`, LOG_LEVEL=info, as operators run it) on 10,000 seeded books; ${pinning.note}; \`--workers 2\` on both cores. Each round opens the streams (\`Accept: text/event-stream\` on \`GET /api/v1/changes\`, from now), sends 1 s of unmeasured writes, then ${chosen.rate} writes a second for ${chosen.seconds} s, open loop: POST a book, then PATCH that book, alternately. An event is matched to its write by \`attributes.op\` and \`relationships.resource.data\`. "From answer": from the write's answer received to the event read on a stream (negative where the event came first); "from sending": from the write's request sent. Percentiles over every (write, stream) pair of a round; then the median of ${chosen.rounds} round${chosen.rounds === 1 ? '' : 's'} (lowest to highest). The streams and the writer are one Bun process on core 1: with 50 streams, its own reading is part of the figures. On PostgreSQL the last column is the longest time another transaction anywhere on the cluster (in another database too) held a transaction id during the measured writes (pg_stat_activity, every 100 ms): the feed shows a change once every transaction begun before it has ended, so such a transaction holds the streams back.`,
  ].join('\n')
  const text = `${latencySection(cells, intro)}\n`
  console.log(`\n${text}`)
  if (!chosen.quick) writeFileSync(join(import.meta.dir, '..', 'results', 'change-latency.md'), text)
  const failed = cells.some((cell) =>
    cell.rounds.some((r) => r.writeErrors > 0 || r.missing > 0 || r.streamEnded !== undefined),
  )
  return failed ? 1 : 0
}
