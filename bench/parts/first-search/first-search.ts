/**
 * `bun run bench -- first-search [--backends sqlite,postgres]`: what an operator's first minute
 * shows. A catalogue of one book (imported by `catalogue import --create`), the service started as
 * a process (from the source, `bun src/cli.ts`, and the compiled executable of `bun run build`),
 * and, from another process started beforehand (bench/parts/first-search/client.ts), the first
 * `GET /api/v1/books?filter[search]=hobbit` sent the moment the service has logged `listening`,
 * then a second search. BENCH_RUNS runs (5 by default) of each, each on a fresh catalogue and a
 * fresh process; the report gives the median and every run of the start (spawn to `listening`),
 * the first search and the second.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createDatabase, dropDatabase } from '../../data/postgres-databases'
import { compiledExecutable } from '../../harness/executable'
import { startServer, stopServer, waitUntilListening } from '../../harness/servers'

const RUNS = Number(process.env.BENCH_RUNS) > 0 ? Number(process.env.BENCH_RUNS) : 5
const repoRoot = new URL('../../..', import.meta.url).pathname
const clientPath = join(import.meta.dir, 'client.ts')

type Backend = 'sqlite' | 'postgres'

interface Sample {
  readonly startMs: number
  /** CPU time (user + system, every thread) the process had used by then: what a loaded machine does not blur. */
  readonly startCpuMs: number
  readonly firstMs: number
  readonly secondMs: number
}

/** A fresh catalogue of one book on `backend`: its URL, and how to remove it. */
async function oneBookCatalogue(backend: Backend, dir: string, run: number) {
  const csv = join(dir, 'book.csv')
  writeFileSync(csv, 'title,author,collection\nThe Hobbit,J. R. R. Tolkien,\n')
  const database =
    backend === 'postgres' ? await createDatabase() : { name: '', url: `sqlite://${join(dir, `catalogue-${run}.db`)}` }
  const imported = Bun.spawnSync(['bun', 'src/cli.ts', 'import', '--create', csv], {
    cwd: repoRoot,
    env: { ...process.env, DATABASE_URL: database.url },
    stdout: 'ignore',
    stderr: 'pipe',
  })
  if (imported.exitCode !== 0) throw new Error(`catalogue import failed: ${imported.stderr.toString()}`)
  return { url: database.url, remove: () => (backend === 'postgres' ? dropDatabase(database.name) : Promise.resolve()) }
}

/** One start of `command` over `url`, and its first two searches, sent from the client process. */
async function oneRun(command: readonly string[], url: string): Promise<Sample> {
  const client = Bun.spawn(['bun', clientPath], { stdin: 'pipe', stdout: 'pipe', stderr: 'inherit' })
  // The client's own start (a Bun process) is over before the service's begins.
  await Bun.sleep(300)
  const spawned = performance.now()
  const server = startServer('service', command, { HOST: '127.0.0.1', DATABASE_URL: url })
  try {
    await waitUntilListening(server)
    const startMs = performance.now() - spawned
    const startCpuMs = processCpuMs(server.process.pid)
    client.stdin.write(`${server.origin}\n`)
    await client.stdin.flush()
    const answer = JSON.parse((await new Response(client.stdout).text()).trim()) as { first: number; second: number }
    if ((await client.exited) !== 0) throw new Error('the search client failed')
    return { startMs, startCpuMs, firstMs: answer.first, secondMs: answer.second }
  } finally {
    client.kill()
    await stopServer(server)
  }
}

/** User + system CPU milliseconds of every thread of the process, from /proc (10 ms ticks). */
function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN
}

function cell(values: readonly number[]): string {
  const shown = (v: number) => (v >= 100 ? v.toFixed(0) : v.toFixed(1))
  return `**${shown(median(values))}** (${values.map(shown).join(', ')})`
}

export async function firstSearchBench(argv: readonly string[]): Promise<number> {
  const asked = argv.indexOf('--backends')
  const backends = (asked === -1 ? 'sqlite,postgres' : (argv[asked + 1] ?? '')).split(',') as Backend[]
  if (backends.some((b) => b !== 'sqlite' && b !== 'postgres')) {
    console.error('bench first-search: --backends takes sqlite, postgres or both')
    return 2
  }
  const programs: [string, readonly string[]][] = [
    ['`bun src/cli.ts`', ['bun', 'src/cli.ts']],
    ['compiled executable', [compiledExecutable()]],
  ]
  const dir = mkdtempSync(join(tmpdir(), 'catalogue-first-search-'))
  const rows: string[] = []
  try {
    for (const backend of backends) {
      for (const [program, command] of programs) {
        const samples: Sample[] = []
        for (let run = 1; run <= RUNS; run++) {
          process.stderr.write(`${backend}, ${program}: run ${run}/${RUNS}\n`)
          const catalogue = await oneBookCatalogue(backend, dir, run)
          try {
            samples.push(await oneRun(command, catalogue.url))
          } finally {
            await catalogue.remove()
          }
        }
        rows.push(
          `| ${backend} | ${program} | ${cell(samples.map((s) => s.startMs))} | ${cell(samples.map((s) => s.startCpuMs))} | ${cell(samples.map((s) => s.firstMs))} | ${cell(samples.map((s) => s.secondMs))} |`,
        )
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  const report = [
    '## The first search after a start, on a catalogue of one book',
    '',
    `Bun ${Bun.version}, ${navigator.hardwareConcurrency} cores; times in ms, the median in bold, then each of ${RUNS} runs (a fresh catalogue and process each). Start: from spawning the service to its \`listening\` line; its CPU: the CPU time (user and system, every thread, in 10 ms ticks) the process had used by then, which a loaded machine blurs less. First search: \`GET /api/v1/books?filter[search]=hobbit\` sent from another process the moment that line is written, to the last byte of its answer; second: \`filter[search]=ring\` right after.`,
    '',
    '| backend | program | start | its CPU | first search | second search |',
    '|---|---|--:|--:|--:|--:|',
    ...rows,
    '',
  ].join('\n')
  console.log(report)
  writeFileSync(join(import.meta.dir, '..', '..', 'results', 'first-search.md'), report)
  return 0
}
