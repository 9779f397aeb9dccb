/**
 * `bun run bench -- search [--sizes 100000,1000000] [--backends sqlite,postgres] [--seed N] [--quick]`:
 * issue 34's search bench. For each backend and size: a generated catalogue
 * (bench/parts/search/catalogue.ts) imported by `catalogue import --create` into a fresh SQLite
 * file or temporary PostgreSQL database (load.ts); its words read back and a query family drawn
 * from them with the seed (catalogue-words.ts, family.ts); the reference's index built
 * (reference-index.ts); then the real service and the reference (reference.ts) each asked every
 * query's first page ranked and sorted (pages.ts), typo recall (recall.ts), and four of the worst
 * page at once beside a fifth client (concurrency.ts). Prints the report (report.ts); a full run
 * (both backends, both sizes, not --quick) also writes it to bench/results/search.md.
 */
import { writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { QUICK } from '../../harness/measure'
import type { RunningServer } from '../../harness/servers'
import { readCatalogueWords } from './catalogue-words'
import { crowdRound } from './concurrency'
import { familyHash, queryFamily } from './family'
import { loadCatalogue, type SearchBackend } from './load'
import { pagesOf, timePasses } from './pages'
import { typoRecall } from './recall'
import { buildReferenceIndex } from './reference-index'
import { cellLine, searchSection } from './report'
import { budgetOf, type SearchCell } from './report-format'
import { referenceUnderTest, type ServerUnderTest, serviceUnderTest } from './under-test'

type Track = (server: RunningServer) => void

const say = (line: string) => process.stderr.write(`search: ${line}\n`)
const count = (n: number) => n.toLocaleString('en-US')

const SIZES = [100_000, 1_000_000] as const
const BACKENDS = ['sqlite', 'postgres'] as const
/** Passes over every page: a page's figure is their median. */
const PASSES = QUICK ? 1 : 3
/**
 * A page over this many times its budget, and over ONCE_OVER_LEAST_MS, the first time is not asked
 * again (pages.ts): so that a page of seconds is not asked three times, but a spike of the shared
 * machine on a cheap page is.
 */
const ONCE_OVER_BUDGETS = 4
const ONCE_OVER_LEAST_MS = 1000
/** Pages the fifth client asks beside the crowd. */
const CROWD_SAMPLE = QUICK ? 10 : 30

interface SearchChoice {
  readonly sizes: number[]
  readonly backends: SearchBackend[]
  readonly seed: number
}

/** Today's date as a number (20261204): the default seed, so the family changes from day to day. */
const dailySeed = () => Number(new Date().toISOString().slice(0, 10).replaceAll('-', ''))

function sizeOf(text: string): number | undefined {
  const match = /^([0-9]+)([km]?)$/i.exec(text.trim())
  if (!match) return undefined
  const unit = match[2]?.toLowerCase()
  return Number(match[1]) * (unit === 'k' ? 1000 : unit === 'm' ? 1_000_000 : 1)
}

export function searchChoice(argv: readonly string[]): SearchChoice | string {
  const values = new Set(['--sizes', '--backends', '--seed'])
  for (const [i, arg] of argv.entries()) {
    if (arg !== '--quick' && !values.has(arg) && !values.has(argv[i - 1] ?? '')) {
      return `unknown option "${arg}" of search (--sizes 100000,1000000, --backends sqlite,postgres, --seed N, --quick)`
    }
  }
  const value = (flag: string) => {
    const i = argv.indexOf(flag)
    return i === -1 ? undefined : (argv[i + 1] ?? '')
  }
  const sizes = (value('--sizes') ?? SIZES.join(',')).split(',').map(sizeOf)
  if (sizes.some((size) => size === undefined || size < 1000))
    return '--sizes takes book counts of 1000 or more, as 100000 or 100k'
  const backends = (value('--backends') ?? BACKENDS.join(',')).split(',')
  if (backends.some((b) => b !== 'sqlite' && b !== 'postgres')) return '--backends takes sqlite and postgres'
  const seedText = value('--seed')
  const seed = seedText === undefined ? dailySeed() : Number(seedText)
  if (!Number.isSafeInteger(seed) || seed < 0) return '--seed takes a whole number'
  return {
    sizes: [...new Set(sizes as number[])].sort((a, b) => a - b),
    backends: [...new Set(backends as SearchBackend[])],
    seed,
  }
}

async function measureCell(
  backend: SearchBackend,
  books: number,
  seed: number,
  dir: string,
  track: Track,
): Promise<SearchCell> {
  const started = performance.now()
  const loadAtStart = loadavg()[0] ?? 0
  const catalogue = await loadCatalogue(backend, books, dir)
  const servers: ServerUnderTest[] = []
  let removeReference = () => {}
  try {
    say(`  import ${catalogue.importRun.seconds.toFixed(1)} s; reading its words`)
    const words = await readCatalogueWords(catalogue.url, books)
    if (words.books !== books) throw new Error(`the import left ${words.books} books of ${books}`)
    const family = queryFamily(words, seed)
    const hash = familyHash(family)
    say(`  family of ${family.length} queries with seed ${seed} (fingerprint ${hash}); building the reference's index`)
    const referenceIndex = await buildReferenceIndex(catalogue)
    removeReference = referenceIndex.remove
    say(`  reference index ${referenceIndex.seconds.toFixed(1)} s; timing ${family.length * 3} pages x ${PASSES}`)
    const service = await serviceUnderTest(catalogue.url, track)
    servers.push(service)
    const reference = await referenceUnderTest(referenceIndex.env, track)
    servers.push(reference)
    const pages = pagesOf(family)
    const onceOverMs = Math.max(ONCE_OVER_LEAST_MS, ONCE_OVER_BUDGETS * budgetOf(books))
    const timings = await timePasses([service, reference], pages, PASSES, seed, onceOverMs, (line) => say(`  ${line}`))
    say('  typo recall')
    const recall = await typoRecall(service, family)
    const serviceTimings = timings.get(service) ?? []
    say(`  four of the worst page at once beside ${CROWD_SAMPLE} others`)
    const crowd = await crowdRound(service, serviceTimings, CROWD_SAMPLE, seed)
    const cell: SearchCell = {
      backend,
      books,
      catalogue: {
        authors: words.authors.length,
        collections: words.collections.length,
        titleWords: words.titleWords.size,
      },
      family,
      familyHash: hash,
      importRun: catalogue.importRun,
      ...(catalogue.vacuumSeconds === undefined ? {} : { vacuumSeconds: catalogue.vacuumSeconds }),
      referenceSeconds: referenceIndex.seconds,
      service: serviceTimings,
      reference: timings.get(reference) ?? [],
      recall,
      ...(crowd === undefined ? {} : { crowd }),
      restarts: { service: service.restarts, reference: reference.restarts },
      load: { start: loadAtStart, end: loadavg()[0] ?? 0 },
      seconds: (performance.now() - started) / 1000,
    }
    say(`  ${count(books)} books on ${backend} took ${Math.round(cell.seconds)} s: ${cellLine(cell)}`)
    return cell
  } finally {
    await Promise.all(servers.map((server) => server.stop()))
    removeReference()
    await catalogue.remove()
  }
}

/** The commit measured, and whether the tree differs from it. */
function buildName(): string {
  const git = (...args: string[]) =>
    Bun.spawnSync(['git', ...args], { cwd: import.meta.dir })
      .stdout.toString()
      .trim()
  const commit = git('rev-parse', '--short', 'HEAD') || 'unknown'
  return git('status', '--porcelain', '--untracked-files=no') === '' ? commit : `${commit} with changes`
}

export async function searchBench(argv: readonly string[], dir: string, track: Track): Promise<number> {
  const choice = searchChoice(argv)
  if (typeof choice === 'string') {
    console.error(`bench: ${choice}`)
    return 2
  }
  say(`seed ${choice.seed} (--seed ${choice.seed} repeats this family); ${PASSES} pass(es)`)
  const started = performance.now()
  const cells: SearchCell[] = []
  for (const backend of choice.backends) {
    for (const books of choice.sizes) {
      say(`${backend} at ${count(books)} books`)
      cells.push(await measureCell(backend, books, choice.seed, dir, track))
    }
  }
  const report = searchSection({
    build: buildName(),
    seed: choice.seed,
    passes: PASSES,
    onceOverMs: choice.sizes.map((books) => Math.max(ONCE_OVER_LEAST_MS, ONCE_OVER_BUDGETS * budgetOf(books))),
    crowdSample: CROWD_SAMPLE,
    cells,
    seconds: (performance.now() - started) / 1000,
  })
  console.log(`\n${report}`)
  const full =
    !QUICK && BACKENDS.every((b) => choice.backends.includes(b)) && SIZES.every((s) => choice.sizes.includes(s))
  // A quick or partial run is for trying the bench out: the published results stay as they were.
  if (full) writeFileSync(join(import.meta.dir, '..', '..', 'results', 'search.md'), `${report}\n`)
  // A 4xx is a query the family should not have made; no answer or a 503 is what was measured.
  const refused = cells.flatMap((cell) => cell.service.filter((t) => t.status >= 400 && t.status < 500))
  if (refused.length > 0) {
    console.error(`search: ${refused.length} pages refused, first: ${refused[0]?.page.path} (${refused[0]?.status})`)
    return 1
  }
  return 0
}
