/**
 * The service against an earlier build of itself, in the same run: `bun run bench -- before-after
 * --tree DIR [--backends sqlite,postgres] [--rounds N] [--cases NAME,...] [--books N]`. DIR is a checkout of the earlier commit
 * with its packages installed (`git worktree add DIR <commit> && (cd DIR && bun install)`). Both
 * builds serve copies of the same data, seeded by the earlier build's code (the later one migrates
 * its copy forward as it starts: a build that adds a table, as the change feed does, still runs
 * beside the one before it), one process each, pinned to core 0 in turn; every scenario
 * runs on the earlier build, then on this one, `--rounds` times (default 3), alternating, so that a
 * noisy neighbour weighs on both. It prints each scenario's median req/s of both and their ratio
 * (this build / the earlier): a restructuring that must not slow the service shows no ratio below
 * 0.95.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { createDatabase, dropDatabases } from '../data/postgres-databases'
import { SEED } from '../data/seed'
import { type LoadPlan, summarize } from '../harness/load'
import { runWrk, wrkPath } from '../harness/load-wrk'
import { pinning } from '../harness/measure'
import { deleteBook, getBook, pageOfBooks, patchBook, postBook } from '../harness/requests'
import {
  copiesFor,
  type RunningServer,
  startServer,
  stopServer,
  UNCAPPED_LONG_ANSWERS,
  waitUntilReady,
} from '../harness/servers'
import { WRITE_SET } from './comparison/scenarios'
import { MATRIX_SEARCH } from './matrix/matrix'

type Plan = Omit<LoadPlan, 'origin' | 'concurrency' | 'warmupMs' | 'durationMs'>
interface Case {
  readonly name: string
  readonly plan: Plan
  readonly concurrency: number
}

const get = (path: string, randomMax = 1): Plan => ({ method: 'GET', path, randomMax, expectStatus: 200 })

/**
 * The reads and writes users run most, at the concurrency the comparison uses, on the write runs'
 * data (10,000 books and the 250,000 DELETE takes): the whole list is left to the main bench,
 * whose 10,000 books answer within a round.
 */
const cases: readonly Case[] = [
  { name: 'GET one book', plan: getBook(SEED), concurrency: 32 },
  { name: 'page of 20', plan: get(pageOfBooks('{n}'), 50), concurrency: 32 },
  {
    name: 'GET one author, include=books',
    plan: get('/api/v1/authors/{n}?include=books', SEED.authors),
    concurrency: 32,
  },
  { name: 'books by author', plan: get('/api/v1/books?author_id={n}', SEED.authors), concurrency: 32 },
  {
    name: `search "${MATRIX_SEARCH}", page of 20`,
    plan: get(`/api/v1/books?filter[search]=${MATRIX_SEARCH}&page[size]=20`),
    concurrency: 32,
  },
  { name: 'POST a book', plan: postBook, concurrency: 32 },
  { name: 'PATCH a book', plan: patchBook, concurrency: 32 },
  { name: 'DELETE a book', plan: deleteBook, concurrency: 32 },
]

function option(name: string): string | undefined {
  const at = Bun.argv.indexOf(name)
  return at === -1 ? undefined : Bun.argv[at + 1]
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  const at = (i: number) => sorted[i] ?? Number.NaN
  return sorted.length % 2 === 1 ? at(middle) : (at(middle - 1) + at(middle)) / 2
}

/** `--cases a,b`: only the scenarios whose names contain one of these (all by default). */
function chosenCases(): readonly Case[] {
  const wanted = option('--cases')?.split(',')
  return wanted === undefined ? cases : cases.filter(({ name }) => wanted.some((part) => name.includes(part)))
}

/**
 * Books seeded: WRITE_SET's (10,000 and the stock DELETE takes; an author has 2,600), or with
 * `--books 10000` the comparison's reads' data (an author's books a list of 100: a short list).
 */
function seededBooks(): number {
  return Number(option('--books') ?? WRITE_SET.books)
}

/**
 * Seeds seededBooks() books with the earlier build's own bench/data code, in a process run
 * from its tree: a build refuses a database whose schema is newer than it knows, while the later
 * build migrates its copy forward when it starts. Both then serve the same records.
 */
async function seedWithEarlier(tree: string, dir: string, target: string): Promise<void> {
  const data = join(tree, 'bench/data')
  const postgres = !target.startsWith('sqlite://')
  const module = join(data, postgres ? 'seed-postgres.ts' : 'seed.ts')
  if (!existsSync(module)) throw new Error(`before-after: the earlier build has no ${module} to seed with`)
  const script = join(dir, 'seed-earlier.ts')
  writeFileSync(
    script,
    [
      `import { SEED${postgres ? '' : ', seed'} } from ${JSON.stringify(join(data, 'seed.ts'))}`,
      ...(postgres ? [`import { seedPostgres as seed } from ${JSON.stringify(module)}`] : []),
      `await seed(${JSON.stringify(postgres ? target : target.slice('sqlite://'.length))}, { ...SEED, books: ${seededBooks()} })`,
      'process.exit(0)',
    ].join('\n'),
  )
  const child = Bun.spawn(['bun', script], { cwd: tree, stdout: 'inherit', stderr: 'inherit' })
  if ((await child.exited) !== 0) throw new Error(`before-after: seeding with the earlier build failed (${script})`)
}

async function serve(name: string, tree: string, env: Record<string, string>): Promise<RunningServer> {
  const server = startServer(
    name,
    ['bun', join(tree, 'src/cli.ts'), 'serve'],
    { LOG_LEVEL: 'warn', ...UNCAPPED_LONG_ANSWERS, ...env },
    pinning.server,
  )
  await waitUntilReady(server, '/health')
  return server
}

/** Each case on both builds, `rounds` times, alternating; req/s of each round. */
async function measure(builds: Record<'before' | 'after', RunningServer>, rounds: number) {
  const perSecond = new Map<string, { before: number[]; after: number[] }>()
  // DELETE takes ids in turn from the stock: both builds walk the same ids, each in its own copy.
  const sent = { before: 0, after: 0 }
  for (let round = 0; round < rounds; round++) {
    for (const { name, plan, concurrency } of chosenCases()) {
      const row = perSecond.get(name) ?? { before: [], after: [] }
      perSecond.set(name, row)
      for (const build of ['before', 'after'] as const) {
        const sequenceFrom = plan.sequenceFrom === undefined ? undefined : plan.sequenceFrom + sent[build]
        const result = await runWrk(
          {
            ...plan,
            ...(sequenceFrom === undefined ? {} : { sequenceFrom }),
            origin: builds[build].origin,
            concurrency,
            warmupMs: 1000,
            durationMs: 4000,
          },
          pinning.client,
        )
        if (plan.sequenceFrom !== undefined) sent[build] += result.sent
        const summary = summarize([result])
        // A timeout on a loaded machine is reported, not fatal; a wrong answer is.
        if (summary.errors > 0 && !/timeouts$/.test(summary.firstError ?? ''))
          throw new Error(`${build}: ${name}: ${summary.firstError}`)
        if (summary.errors > 0) console.warn(`${build}: ${name}: ${summary.firstError}`)
        row[build].push(summary.perSecond)
      }
    }
  }
  return perSecond
}

function table(backend: string, perSecond: Awaited<ReturnType<typeof measure>>): string {
  const lines = [
    `### ${backend}`,
    '',
    '| scenario | before req/s | after req/s | after / before (median; lowest-highest of the rounds) |',
    '|---|---|---|---|',
  ]
  for (const [name, { before, after }] of perSecond) {
    const ratios = after.map((a, i) => a / (before[i] ?? Number.NaN))
    const worst = Math.min(...ratios)
    const best = Math.max(...ratios)
    lines.push(
      `| ${name} | ${Math.round(median(before))} | ${Math.round(median(after))} | ${(median(after) / median(before)).toFixed(2)} (${worst.toFixed(2)}-${best.toFixed(2)}) |`,
    )
  }
  return lines.join('\n')
}

export async function beforeAfter(): Promise<number> {
  const tree = option('--tree')
  if (tree === undefined)
    throw new Error('before-after: --tree DIR (a checkout of the earlier build, packages installed)')
  if (wrkPath === null) throw new Error('before-after: needs wrk (apt-get install wrk)')
  const backends = (option('--backends') ?? 'sqlite,postgres').split(',')
  const rounds = Number(option('--rounds') ?? 3)
  const here = resolve(import.meta.dir, '../..')
  const trees = { before: resolve(tree), after: here }
  const dir = mkdtempSync(join(tmpdir(), 'catalogue-before-after-'))
  const out: string[] = [
    `Earlier build: ${trees.before}; this build: ${trees.after}; ${rounds} rounds of 4 s measured after 1 s of warm-up, alternating; ${pinning.note}.`,
    '',
  ]
  try {
    for (const backend of backends) {
      const builds = {} as Record<'before' | 'after', RunningServer>
      try {
        if (backend === 'sqlite') {
          const pristine = join(dir, 'pristine.db')
          await seedWithEarlier(trees.before, dir, `sqlite://${pristine}`)
          const files = copiesFor(pristine, dir, 'ab', ['before', 'after'] as const)
          for (const build of ['before', 'after'] as const)
            builds[build] = await serve(build, trees[build], { DATABASE_URL: `sqlite://${files[build]}` })
        } else {
          const pristine = await createDatabase()
          await seedWithEarlier(trees.before, dir, pristine.url)
          for (const build of ['before', 'after'] as const) {
            const copy = await createDatabase(pristine.name)
            builds[build] = await serve(build, trees[build], { DATABASE_URL: copy.url })
          }
        }
        out.push(table(backend, await measure(builds, rounds)), '')
        console.log(out.at(-2))
      } finally {
        for (const server of Object.values(builds)) await stopServer(server)
      }
    }
  } finally {
    await dropDatabases()
    rmSync(dir, { recursive: true, force: true })
  }
  console.log(`\n${out.join('\n')}`)
  return 0
}
