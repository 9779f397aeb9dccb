/**
 * `bun bench/standalone/instructions.ts [PATH] [--raw] [--rate-limit] [--requests N] [--warm-up W]`: the CPU instructions one
 * request costs in-process, counted by valgrind (callgrind), not timed. On a shared machine whose
 * speed moves from minute to minute (the same server measured 36 to 57 µs a request in one run), a
 * change of a few per cent cannot be seen in req/s; an instruction count is the same from run to
 * run within about 2 %, whatever else the machine is doing.
 *
 * It runs PATH (default `/api/v1/books/{n}`, `{n}` drawn from 1-50) through `app.handle` over a
 * copy of 10,000 seeded books: W requests first, uncounted (callgrind's instrumentation off), so
 * that JavaScriptCore's JIT has compiled the hot code with its top tier as it has in a server that
 * has been up a while; then N requests in one process and 3N in another, counted, and prints the
 * difference divided by 2N: what is left over from the start and the warm-up cancels out, what a
 * request costs remains, its garbage collection included. The JIT and the collector run on the
 * main thread (BUN_JSC_useConcurrentJIT=false, BUN_JSC_useConcurrentGC=false: on their own threads
 * they make the count vary). Counted without a warm-up, the service's single GET was 132k
 * instructions, with one 78k: much of the first figure was code not yet optimized.
 *
 * The service runs as operators run it (request log at info, to a sink that drops the lines;
 * metrics on); `--rate-limit` with RATE_LIMIT on, at a limit never reached. `--raw` counts the raw reference's handler instead (bench/references/sqlite-handlers.ts: the
 * same SQL and bytes, no framework; GET one book and pages of books only), the Request included.
 *
 * Blind to system calls: a read outside a transaction takes a lock in the kernel, which costs time
 * but no instructions here (under wrk the raw reference makes about 11 system calls a single GET,
 * 6 of them fcntl locks, the service 4). Takes about a minute (N = 10,000, W = 40,000).
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
const path = args.find((a) => a.startsWith('/')) ?? '/api/v1/books/{n}'
const requests = Number(option('--requests') ?? 10000)
const warmUp = Number(option('--warm-up') ?? 40000)
const raw = flag('--raw')
const rateLimited = flag('--rate-limit')

/** Waits for the parent's word on stdin, after saying that the warm-up is done. */
async function warmedUp(): Promise<void> {
  process.stdout.write('warm\n')
  for await (const _ of console) break
}

/** Runs `warmUp` requests, then (counted by the parent) `count` more, in this process. */
async function child(database: string, count: number): Promise<void> {
  const url = (i: number) => `http://localhost${path.replace('{n}', String((i % 50) + 1))}`
  let one: (i: number) => Promise<unknown>
  let close = async () => {}
  if (raw) {
    const { openQueries, referenceHandlers } = await import('../references/sqlite-handlers')
    const handle = referenceHandlers(openQueries(database, 'full'), 'streamed')
    const book = /^\/api\/v1\/books\/\{n\}$/.test(path)
    one = (i) => {
      const request = new Request(url(i))
      return (book ? handle.showBook((i % 50) + 1) : handle.listBooks(request)).text()
    }
  } else {
    const { createApp } = await import('../../src/http/app')
    const { createLogger } = await import('../../src/logger')
    const { resources } = await import('../../src/resources/registry')
    const { SqliteStore } = await import('../../src/store/sqlite/sqlite-store')
    const store = SqliteStore.open(database, resources)
    const logger = createLogger('info', { write() {}, flush() {} })
    const app = createApp({ store, logger, rateLimit: rateLimited ? { perMinute: 1e9 } : undefined })
    one = async (i) => (await app.handle(new Request(url(i)))).text()
    close = () => store.close()
  }
  for (let i = 0; i < warmUp; i++) await one(i)
  await warmedUp()
  for (let i = 0; i < count; i++) await one(i)
  await close()
}

/** Instructions valgrind counted in a child's run of `count` requests after its warm-up. */
async function counted(database: string, count: number): Promise<number> {
  const run = Bun.spawn(
    [
      'valgrind',
      '--tool=callgrind',
      '--instr-atstart=no',
      '--callgrind-out-file=/dev/null',
      'bun',
      import.meta.path,
      path,
      ...(raw ? ['--raw'] : []),
      ...(rateLimited ? ['--rate-limit'] : []),
      '--warm-up',
      String(warmUp),
      '--child',
      database,
      String(count),
    ],
    {
      env: { ...process.env, BUN_JSC_useConcurrentJIT: 'false', BUN_JSC_useConcurrentGC: 'false' },
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'pipe',
    },
  )
  const errors = new Response(run.stderr).text()
  // The child says when it is warm; instrumentation is turned on (callgrind_control), then it goes on.
  const reader = run.stdout.getReader()
  let said = ''
  while (!said.includes('warm\n')) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`the child ended before its warm-up did:\n${await errors}`)
    said += new TextDecoder().decode(value)
  }
  reader.releaseLock()
  const control = Bun.spawnSync(['callgrind_control', '--instr=on', String(run.pid)])
  if (control.exitCode !== 0) throw new Error(`callgrind_control failed: ${control.stderr}`)
  run.stdin.write('go\n')
  await run.stdin.flush()
  const [text, code] = await Promise.all([errors, run.exited])
  const total = /Collected : (\d+)/.exec(text)?.[1]
  if (code !== 0 || total === undefined) throw new Error(`valgrind failed:\n${text}`)
  return Number(total)
}

if (flag('--child')) {
  const at = args.indexOf('--child')
  await child(args[at + 1] as string, Number(args[at + 2]))
} else {
  if (!Bun.which('valgrind')) throw new Error('valgrind is not installed (apt-get install valgrind)')
  const { SEED, seed } = await import('../data/seed')
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
