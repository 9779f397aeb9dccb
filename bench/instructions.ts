/**
 * `bun bench/instructions.ts [PATH] [--raw] [--requests N]`: the CPU instructions one request costs
 * in-process, counted by valgrind (callgrind), not timed. On a shared machine whose speed moves
 * from minute to minute (the same server measured 36 to 57 µs a request in one run), a change of a
 * few per cent cannot be seen in req/s; an instruction count is the same from run to run within
 * about 1 %, whatever else the machine is doing.
 *
 * It runs N and 3N requests of PATH (default `/api/v1/books/{n}`, `{n}` drawn from 1-50) through
 * `app.handle` over a copy of 10,000 seeded books, each run in its own process under callgrind with
 * JavaScriptCore's JIT and collector on the main thread (BUN_JSC_useConcurrentJIT=false,
 * BUN_JSC_useConcurrentGC=false: on their own threads they make the count vary), and prints the
 * difference divided by 2N: the start-up and the JIT's warm-up cancel out, what a request costs
 * remains, its garbage collection included. The service runs as operators run it (request log at
 * info, to a sink that drops the lines; metrics on). `--raw` counts the raw reference's handler
 * instead (bench/reference-sqlite.ts: the same SQL and bytes, no framework; GET one book and
 * pages of books only).
 *
 * Blind to system calls: a read outside a transaction takes a lock in the kernel, which costs time
 * but no instructions here. Takes about two minutes (N = 3000).
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const args = Bun.argv.slice(2)
const flag = (name: string) => args.includes(name)
const option = (name: string) => {
  const at = args.indexOf(name)
  return at === -1 ? undefined : args[at + 1]
}
const path = args.find((a, i) => a.startsWith('/') && args[i - 1] !== '--requests') ?? '/api/v1/books/{n}'
const requests = Number(option('--requests') ?? 3000)
const raw = flag('--raw')

/** Runs `count` requests in this process: what the parent counts. */
async function child(database: string, count: number): Promise<void> {
  const url = (i: number) => `http://localhost${path.replace('{n}', String((i % 50) + 1))}`
  if (raw) {
    const { openQueries, referenceHandlers } = await import('./reference-sqlite')
    const handle = referenceHandlers(openQueries(database, 'full'), 'streamed')
    const book = /^\/api\/v1\/books\/\{n\}$/.test(path)
    for (let i = 0; i < count; i++) {
      const response = book ? handle.showBook((i % 50) + 1) : handle.listBooks(new Request(url(i)))
      await response.text()
    }
    return
  }
  const { createApp } = await import('../src/http/app')
  const { createLogger } = await import('../src/logger')
  const { resources } = await import('../src/resources/registry')
  const { SqliteStore } = await import('../src/store/sqlite')
  const store = SqliteStore.open(database, resources)
  const logger = createLogger('info', { write() {}, flush() {} })
  const app = createApp({ store, logger })
  for (let i = 0; i < count; i++) await (await app.handle(new Request(url(i)))).text()
  await store.close()
}

/** Instructions valgrind counted in a child run of `count` requests. */
async function counted(database: string, count: number): Promise<number> {
  const run = Bun.spawn(
    [
      'valgrind',
      '--tool=callgrind',
      '--callgrind-out-file=/dev/null',
      'bun',
      import.meta.path,
      path,
      ...(raw ? ['--raw'] : []),
      '--child',
      database,
      String(count),
    ],
    {
      env: { ...process.env, BUN_JSC_useConcurrentJIT: 'false', BUN_JSC_useConcurrentGC: 'false' },
      stdout: 'ignore',
      stderr: 'pipe',
    },
  )
  const [errors, code] = await Promise.all([new Response(run.stderr).text(), run.exited])
  const total = /Collected : (\d+)/.exec(errors)?.[1]
  if (code !== 0 || total === undefined) throw new Error(`valgrind failed:\n${errors}`)
  return Number(total)
}

if (flag('--child')) {
  const at = args.indexOf('--child')
  await child(args[at + 1] as string, Number(args[at + 2]))
} else {
  if (!Bun.which('valgrind')) throw new Error('valgrind is not installed (apt-get install valgrind)')
  const { SEED, seed } = await import('./seed')
  const dir = mkdtempSync(join(tmpdir(), 'catalogue-instructions-'))
  try {
    const pristine = join(dir, 'seed.db')
    await seed(pristine, SEED)
    const copy = (name: string) => {
      const file = join(dir, `${name}.db`)
      copyFileSync(pristine, file)
      return file
    }
    // Both at once, one a core: each is counted, not timed.
    const [few, many] = await Promise.all([counted(copy('few'), requests), counted(copy('many'), 3 * requests)])
    const perRequest = Math.round((many - few) / (2 * requests))
    console.log(
      `${raw ? 'raw reference' : 'service'} ${path}: ${perRequest.toLocaleString('en-US')} instructions a request`,
    )
  } finally {
    if (existsSync(dir)) rmSync(dir, { recursive: true, force: true })
  }
}
