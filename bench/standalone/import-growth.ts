/**
 * `bun bench/standalone/import-growth.ts [SIZES...] [--rounds N] [--keep DIR]`: the SQLite half of
 * the search bench's import growth (bench/parts/search/load.ts) alone, in a few minutes instead of
 * the whole search bench: `catalogue import --create` of the search catalogue's CSV (written once
 * per size into BENCH_DATA_DIR) into a fresh file, timed from spawn to exit as the bench times it,
 * with the command's CPU time (user, system) and the bytes it wrote to disk (/proc's io count), and
 * the growth of each size against the size a tenth of it (medians over the rounds). Sizes default
 * to 100000 and 1000000. On a shared machine the CPU time moves less than the wall time; both are
 * printed with the load.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { catalogueCsv } from '../parts/search/load'

const args = Bun.argv.slice(2)
const option = (name: string): string | undefined => {
  const at = args.indexOf(name)
  if (at < 0) return undefined
  const [, value] = args.splice(at, 2)
  return value
}
const rounds = Number(option('--rounds') ?? 1)
const keep = option('--keep')
const sizes = (args.length > 0 ? args : ['100000', '1000000']).map(Number)
const dir = keep ?? mkdtempSync(join(tmpdir(), 'import-growth-'))
const repoRoot = new URL('../..', import.meta.url).pathname
const load = () => loadavg()[0]?.toFixed(1)
const removeFile = (file: string) => {
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true })
}

interface Run {
  readonly wall: number
  readonly user: number
  readonly system: number
  readonly writtenMb: number
  readonly peakRssMb: number
}

/** One import, in a shell that prints its children's io count once the import has exited. */
async function importOnce(csv: string, file: string): Promise<Run> {
  const started = performance.now()
  const script = 'bun src/cli.ts import --create --database-url "$1" "$2" >/dev/null || exit 1; cat /proc/$$/io'
  const child = Bun.spawn(['sh', '-c', script, 'sh', `sqlite://${file}`, csv], {
    cwd: repoRoot,
    env: { ...process.env, LOG_LEVEL: 'warn' },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [io, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  const wall = (performance.now() - started) / 1000
  if (code !== 0) throw new Error(`catalogue import exited with ${code}: ${stderr.trim().slice(-600)}`)
  if (stderr.trim()) console.log(stderr.trim())
  const usage = child.resourceUsage()
  const written = Number(/write_bytes: (\d+)/.exec(io)?.[1] ?? 0)
  return {
    wall,
    user: Number(usage?.cpuTime.user ?? 0) / 1e6,
    system: Number(usage?.cpuTime.system ?? 0) / 1e6,
    writtenMb: written / 2 ** 20,
    peakRssMb: (usage?.maxRSS ?? 0) / 2 ** 20,
  }
}

const runs = new Map<number, Run[]>()
for (let round = 0; round < rounds; round++) {
  for (const books of sizes) {
    const csv = await catalogueCsv(books)
    const file = join(dir, `import-${books}.db`)
    removeFile(file)
    const before = load()
    const run = await importOnce(csv, file)
    runs.set(books, [...(runs.get(books) ?? []), run])
    const mb = (statSync(file).size / 2 ** 20).toFixed(0)
    console.log(
      `round ${round + 1}: ${books.toLocaleString('en-US')} books: ${run.wall.toFixed(1)} s wall, CPU ${run.user.toFixed(1)} s user + ${run.system.toFixed(1)} s system, ${run.writtenMb.toFixed(0)} MB written, file ${mb} MB, peak RSS ${run.peakRssMb.toFixed(0)} MB (load ${before} before, ${load()} after)`,
    )
    if (!keep) removeFile(file)
  }
}
const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN
for (const books of sizes) {
  const tenth = runs.get(books / 10)
  const own = runs.get(books)
  if (!tenth || !own) continue
  const of = (pick: (run: Run) => number) => (median(own.map(pick)) / median(tenth.map(pick))).toFixed(1)
  console.log(
    `${books.toLocaleString('en-US')} / ${(books / 10).toLocaleString('en-US')} books: ${of((r) => r.wall)}x wall (medians ${median(own.map((r) => r.wall)).toFixed(1)} s / ${median(tenth.map((r) => r.wall)).toFixed(1)} s), ${of((r) => r.user + r.system)}x CPU, ${of((r) => r.writtenMb)}x written`,
  )
}
if (!keep) rmSync(dir, { recursive: true, force: true })
