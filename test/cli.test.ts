import { Database } from 'bun:sqlite'
import { afterAll, afterEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { sqliteMigrations } from '../src/store/sqlite/migrations'
import { type ChildProcess, removeTempDirs, spawnChild, stopChildren, tempDir, WAIT_MS } from './support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

const CLI = join(import.meta.dir, '..', 'src', 'cli.ts')
const REPO = join(import.meta.dir, '..')
const JSON_API = 'application/vnd.api+json'
/** Starts per signal in the race test: the race is lost often, but not every time. */
const RACE_RUNS = 15

function spawnCli(options: { args?: string[]; env?: Record<string, string>; cwd?: string } = {}): ChildProcess {
  return spawnChild(['bun', CLI, ...(options.args ?? [])], options.cwd ?? REPO, options.env ?? {})
}

interface Service {
  readonly cli: ChildProcess
  /** `http://127.0.0.1:<port>`, the port read from the `listening` log line. */
  readonly base: string
}

/** A database file in a new temporary folder (not created yet), and its sqlite:// URL. */
function tempDatabase(): { path: string; url: string } {
  const path = join(tempDir('catalogue-cli-'), 'c.db')
  return { path, url: `sqlite://${path}` }
}

/** Starts the service on a free port and waits for its `listening` line. */
async function startService(env: Record<string, string>, cwd?: string): Promise<Service> {
  const cli = spawnCli({ env: { PORT: '0', HOST: '127.0.0.1', ...env }, cwd })
  const listening = await cli.waitForLog((line) => line.msg === 'listening')
  const port = new URL(String(listening.url)).port
  expect(Number(port)).toBeGreaterThan(0)
  return { cli, base: `http://127.0.0.1:${port}` }
}

async function createAuthor(base: string, name: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}/api/v1/authors`, {
    method: 'POST',
    headers: { accept: JSON_API, 'content-type': JSON_API, ...headers },
    body: JSON.stringify({ data: { type: 'author', attributes: { name } } }),
    signal: AbortSignal.timeout(WAIT_MS),
  })
}

/** POST an author whose body arrives only ~300 ms later, so the request stays in flight meanwhile. */
function slowCreate(base: string, name: string, requestId: string): Promise<Response> {
  const body = new TextEncoder().encode(JSON.stringify({ data: { type: 'author', attributes: { name } } }))
  const slowBody = new ReadableStream<Uint8Array>({
    async start(controller) {
      await Bun.sleep(300)
      controller.enqueue(body)
      controller.close()
    },
  })
  return fetch(`${base}/api/v1/authors`, {
    method: 'POST',
    headers: { accept: JSON_API, 'content-type': JSON_API, 'x-request-id': requestId },
    body: slowBody,
    signal: AbortSignal.timeout(WAIT_MS),
  })
}

// biome-ignore lint/suspicious/noExplicitAny: the tests read documents of every shape
async function getJson(url: string): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await fetch(url, { headers: { accept: JSON_API }, signal: AbortSignal.timeout(WAIT_MS) })
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: text === '' ? undefined : JSON.parse(text) }
}

/** What a start-up failure must look like: one `catalogue:` line on stderr, exit code 2, no stack. */
async function expectStartupFailure(cli: ChildProcess): Promise<string> {
  const code = await cli.exitCode()
  const lines = cli.stderr.split('\n').filter((line) => line !== '')
  expect({ code, lines: lines.length }).toEqual({ code: 2, lines: 1 })
  expect(lines[0]).toStartWith('catalogue: ')
  expect(cli.stderr).not.toMatch(/^\s+at /m)
  expect(cli.stderr).not.toContain('error:')
  return lines[0] as string
}

afterEach(stopChildren)

afterAll(removeTempDirs)

describe('catalogue --help', () => {
  it('prints every option with its environment variable and exits 0', async () => {
    const cli = spawnCli({ args: ['--help'] })
    expect(await cli.exitCode()).toBe(0)
    for (const word of ['--port', 'PORT', '--host', 'HOST', '--database-url', 'DATABASE_URL', '--log-level']) {
      expect(cli.stdout).toContain(word)
    }
    expect(cli.stdout).toContain('LOG_LEVEL')
    expect(cli.stdout).toContain('sqlite://data/catalogue.db')
    expect(cli.stderr).toBe('')
  })

  it('answers -h the same way, even with a bad PORT in the environment', async () => {
    const cli = spawnCli({ args: ['-h'], env: { PORT: 'abc' } })
    expect(await cli.exitCode()).toBe(0)
    expect(cli.stdout).toContain('DATABASE_URL')
  })
})

describe('catalogue with a bad setting', () => {
  it('prints one line and exits 2 for PORT=abc', async () => {
    const line = await expectStartupFailure(spawnCli({ env: { PORT: 'abc' } }))
    expect(line).toContain('PORT')
    expect(line).toContain('abc')
  })

  it('prints one line and exits 2 for PORT=70000', async () => {
    expect(await expectStartupFailure(spawnCli({ env: { PORT: '70000' } }))).toContain('PORT')
  })

  it('prints one line and exits 2 for LOG_LEVEL=loud', async () => {
    const line = await expectStartupFailure(spawnCli({ env: { LOG_LEVEL: 'loud' } }))
    expect(line).toContain('LOG_LEVEL')
    expect(line).toContain('loud')
  })

  it('prints one line and exits 2 for DATABASE_URL=mysql://x', async () => {
    const line = await expectStartupFailure(spawnCli({ env: { DATABASE_URL: 'mysql://x' } }))
    expect(line).toContain('DATABASE_URL')
    expect(line).toContain('mysql://x')
  })

  it('prints one line and exits 2 when the PostgreSQL server of a postgres:// DATABASE_URL cannot be reached', async () => {
    const line = await expectStartupFailure(
      spawnCli({ env: { PORT: '0', DATABASE_URL: 'postgres://user@127.0.0.1:1/catalogue' } }),
    )
    expect(line).toContain('cannot open the database at postgres://user@127.0.0.1:1/catalogue')
  })

  it('prints one line and exits 2 for an unknown flag', async () => {
    expect(await expectStartupFailure(spawnCli({ args: ['--colour', 'blue'] }))).toContain('--colour')
  })

  it('prints one line and exits 2 for a flag without a value', async () => {
    expect(await expectStartupFailure(spawnCli({ args: ['--port'] }))).toContain('--port needs a value')
  })

  it('prints one line and exits 2 when the database folder cannot be created', async () => {
    const dir = tempDir('catalogue-cli-')
    await Bun.write(join(dir, 'a-file'), 'not a folder')
    const line = await expectStartupFailure(
      spawnCli({ env: { PORT: '0', HOST: '127.0.0.1', DATABASE_URL: `sqlite://${join(dir, 'a-file', 'x.db')}` } }),
    )
    expect(line).toContain('cannot open the database')
  })

  it('prints one line and exits 2 when the port is taken', async () => {
    const blocker = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('busy') })
    try {
      const dir = tempDir('catalogue-cli-')
      const line = await expectStartupFailure(
        spawnCli({
          env: { PORT: String(blocker.port), HOST: '127.0.0.1', DATABASE_URL: `sqlite://${join(dir, 'x.db')}` },
        }),
      )
      expect(line).toContain(`cannot listen on 127.0.0.1:${blocker.port}`)
    } finally {
      await blocker.stop(true)
    }
  })
})

describe('catalogue serving over HTTP', () => {
  it('creates an author over real HTTP and reads it back', async () => {
    const { base } = await startService({ DATABASE_URL: tempDatabase().url })
    const created = await createAuthor(base, 'Ursula K. Le Guin')
    expect(created.status).toBe(201)
    expect(created.headers.get('content-type')).toBe(`${JSON_API}; charset=utf-8`)
    const { data } = (await created.json()) as { data: { id: string; type: string } }
    expect(data.type).toBe('authors')
    expect(typeof data.id).toBe('string')

    const read = await getJson(`${base}/api/v1/authors/${data.id}`)
    expect(read.status).toBe(200)
    expect(read.body.data).toMatchObject({
      id: data.id,
      type: 'authors',
      attributes: { name: 'Ursula K. Le Guin' },
      relationships: { books: { data: [] } },
    })
  })

  it('answers a body far over the limit with a JSON:API 413 and stores nothing', async () => {
    const { path, url } = tempDatabase()
    const { base } = await startService({ DATABASE_URL: url, MAX_BODY_BYTES: '1000' })
    for (const size of [1001, 5_000_000]) {
      const answer = await fetch(`${base}/api/v1/authors`, {
        method: 'POST',
        headers: { 'content-type': JSON_API },
        body: JSON.stringify({ data: { type: 'author', attributes: { name: 'x'.repeat(size) } } }),
        signal: AbortSignal.timeout(WAIT_MS),
      })
      expect(answer.status).toBe(413)
      expect(answer.headers.get('content-type')).toBe(`${JSON_API}; charset=utf-8`)
      expect(((await answer.json()) as { errors: { status: string }[] }).errors[0]?.status).toBe('413')
    }
    const db = new Database(path, { readonly: true })
    expect(db.query('SELECT COUNT(*) AS n FROM authors').get()).toEqual({ n: 0 })
    db.close()
  })

  it('logs the listening address, the database URL and the durability in force', async () => {
    const { url } = tempDatabase()
    const { cli, base } = await startService({ DATABASE_URL: url, DURABILITY: 'normal' })
    const listening = await cli.waitForLog((line) => line.msg === 'listening')
    expect(listening).toMatchObject({ level: 'info', database: url, durability: 'normal' })
    expect(String(listening.url)).toStartWith('http://127.0.0.1:')
    expect(new URL(String(listening.url)).port).toBe(new URL(base).port)
  })

  it('logs one JSON line per request whose request_id is the X-Request-Id answered', async () => {
    const { cli, base } = await startService({ DATABASE_URL: tempDatabase().url })
    const response = await fetch(`${base}/api/v1/books?author_id=1`, {
      headers: { accept: JSON_API },
      signal: AbortSignal.timeout(WAIT_MS),
    })
    await response.text()
    expect(response.status).toBe(200)
    const id = response.headers.get('x-request-id')
    expect(id).toBeTruthy()
    const line = await cli.waitForLog((l) => l.msg === 'request' && l.request_id === id)
    // The path is logged without its query string.
    expect(line).toMatchObject({ level: 'info', method: 'GET', path: '/api/v1/books', status: 200, request_id: id })
    expect(typeof line.duration_ms).toBe('number')
    expect(line.duration_ms as number).toBeGreaterThanOrEqual(0)
    expect(typeof line.time).toBe('string')
  })

  it('gives each request a different generated id', async () => {
    const { base } = await startService({ DATABASE_URL: tempDatabase().url })
    const first = await getJson(`${base}/api/v1/authors`)
    const second = await getJson(`${base}/api/v1/authors`)
    expect(first.headers.get('x-request-id')).not.toBe(second.headers.get('x-request-id'))
  })

  it('echoes the X-Request-Id the client sent, in the header and in the log', async () => {
    const { cli, base } = await startService({ DATABASE_URL: tempDatabase().url })
    const response = await createAuthor(base, 'Traced', { 'x-request-id': 'client-trace-42' })
    expect(response.status).toBe(201)
    expect(response.headers.get('x-request-id')).toBe('client-trace-42')
    const line = await cli.waitForLog((l) => l.msg === 'request' && l.request_id === 'client-trace-42')
    expect(line).toMatchObject({ method: 'POST', path: '/api/v1/authors', status: 201 })
  })

  it('logs the status of a failed request (404)', async () => {
    const { cli, base } = await startService({ DATABASE_URL: tempDatabase().url })
    const read = await getJson(`${base}/api/v1/authors/999`)
    expect(read.status).toBe(404)
    const id = read.headers.get('x-request-id')
    const line = await cli.waitForLog((l) => l.msg === 'request' && l.request_id === id)
    expect(line).toMatchObject({ method: 'GET', path: '/api/v1/authors/999', status: 404 })
  })

  it('writes no info lines, request lines included, at LOG_LEVEL=warn', async () => {
    // Nothing announces the port at warn, so pick a free one first.
    const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
    const port = probe.port
    await probe.stop(true)
    const cli = spawnCli({
      env: { PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', DATABASE_URL: tempDatabase().url },
    })
    let status = 0
    for (let tries = 0; status === 0 && tries < 100; tries++) {
      status = await fetch(`http://127.0.0.1:${port}/api/v1/authors`, { headers: { accept: JSON_API } }).then(
        (response) => response.status,
        () => Bun.sleep(50).then(() => 0),
      )
    }
    expect(status).toBe(200)
    await Bun.sleep(100)
    cli.proc.kill('SIGTERM')
    expect(await cli.exitCode()).toBe(0)
    expect(cli.stdout).toBe('')
  })
})

describe('catalogue default database', () => {
  it('creates data/catalogue.db relative to the working folder', async () => {
    const cwd = tempDir('catalogue-cli-')
    const { cli, base } = await startService({}, cwd)
    expect(statSync(join(cwd, 'data')).isDirectory()).toBe(true)
    expect(existsSync(join(cwd, 'data', 'catalogue.db'))).toBe(true)
    expect((await createAuthor(base, 'Local')).status).toBe(201)
    cli.proc.kill('SIGTERM')
    expect(await cli.exitCode()).toBe(0)
    const db = new Database(join(cwd, 'data', 'catalogue.db'), { readonly: true })
    try {
      expect(db.query<{ name: string }, []>('SELECT name FROM authors').all()).toEqual([{ name: 'Local' }])
    } finally {
      db.close()
    }
  })
})

describe('catalogue DATA_DIR', () => {
  it('keeps the default database in the data folder it names, and the operator commands find it there', async () => {
    const cwd = tempDir('catalogue-cli-')
    const dataDir = join(tempDir('catalogue-cli-data-'), 'state')
    const migrated = spawnCli({ args: ['migrate', '--data-dir', dataDir], cwd })
    expect(await migrated.exitCode()).toBe(0)
    expect(migrated.stderr).toContain(`sqlite://${join(dataDir, 'catalogue.db')}`)
    const { cli, base } = await startService({ DATA_DIR: dataDir }, cwd)
    expect((await createAuthor(base, 'Kept in DATA_DIR')).status).toBe(201)
    cli.proc.kill('SIGTERM')
    expect(await cli.exitCode()).toBe(0)
    expect(readdirSync(cwd)).toEqual([])
    const db = new Database(join(dataDir, 'catalogue.db'), { readonly: true })
    try {
      expect(db.query<{ name: string }, []>('SELECT name FROM authors').all()).toEqual([{ name: 'Kept in DATA_DIR' }])
    } finally {
      db.close()
    }
  })
})

describe('catalogue shutdown', () => {
  it('on SIGTERM lets the request in flight finish, stores it, logs stopping and stopped, and exits 0', async () => {
    const database = tempDatabase()
    const { cli, base } = await startService({ DATABASE_URL: database.url })
    const inFlight = slowCreate(base, 'Slow writer', 'in-flight')
    await Bun.sleep(100)
    cli.proc.kill('SIGTERM')

    const response = await inFlight
    // The signal was handled while the request was still waiting for its body.
    expect(cli.logs.find((line) => line.msg === 'stopping')).toMatchObject({ level: 'info', signal: 'SIGTERM' })
    expect(response.status).toBe(201)
    expect(((await response.json()) as { data: { attributes: { name: string } } }).data.attributes.name).toBe(
      'Slow writer',
    )
    expect(await cli.exitCode()).toBe(0)
    expect(cli.logs.at(-1)?.msg).toBe('stopped')
    expect(cli.stderr).toBe('')

    const db = new Database(database.path, { readonly: true })
    try {
      expect(db.query<{ name: string }, []>('SELECT name FROM authors').all()).toEqual([{ name: 'Slow writer' }])
    } finally {
      db.close()
    }
  })

  it('on SIGTERM still logs the request line of the request that finished during shutdown', async () => {
    const { cli, base } = await startService({ DATABASE_URL: tempDatabase().url })
    const inFlight = slowCreate(base, 'Logged writer', 'in-flight-logged')
    await Bun.sleep(100)
    cli.proc.kill('SIGTERM')
    expect((await inFlight).status).toBe(201)
    expect(await cli.exitCode()).toBe(0)
    const messages = cli.logs.map((line) => line.msg)
    const requestAt = cli.logs.findIndex((line) => line.msg === 'request' && line.request_id === 'in-flight-logged')
    expect(requestAt).toBeGreaterThan(messages.indexOf('stopping'))
    expect(cli.logs[requestAt]).toMatchObject({ method: 'POST', path: '/api/v1/authors', status: 201 })
    expect(messages.at(-1)).toBe('stopped')
  })

  it('on SIGTERM when idle exits 0 after logging stopping and stopped', async () => {
    const { cli, base } = await startService({ DATABASE_URL: tempDatabase().url })
    expect((await createAuthor(base, 'Before stop')).status).toBe(201)
    cli.proc.kill('SIGTERM')
    expect(await cli.exitCode()).toBe(0)
    // The request's own line may come just before or just after 'stopping'; 'stopped' is last.
    const messages = cli.logs.map((line) => line.msg)
    expect(messages.at(-1)).toBe('stopped')
    expect(messages.indexOf('stopping')).toBeGreaterThan(messages.indexOf('listening'))
    expect(messages.filter((m) => m === 'request')).toHaveLength(1)
  })

  it('on SIGINT exits 0 after logging stopping and stopped', async () => {
    const { cli, base } = await startService({ DATABASE_URL: tempDatabase().url })
    expect((await createAuthor(base, 'Before interrupt')).status).toBe(201)
    cli.proc.kill('SIGINT')
    expect(await cli.exitCode()).toBe(0)
    expect(cli.logs.find((line) => line.msg === 'stopping')).toMatchObject({ signal: 'SIGINT' })
    expect(cli.logs.at(-1)?.msg).toBe('stopped')
  })

  it.each(['SIGTERM', 'SIGINT'] as const)(
    'on %s sent the moment it reports listening still stops cleanly with exit 0',
    async (signal) => {
      // A supervisor may signal as soon as the service says it is up; repeat to catch a race.
      const runs: { code: number; logs: string[] }[] = []
      for (let run = 0; run < RACE_RUNS; run++) {
        const { cli } = await startService({ DATABASE_URL: tempDatabase().url })
        cli.proc.kill(signal)
        runs.push({ code: await cli.exitCode(), logs: cli.logs.map((line) => line.msg) })
      }
      // A new database: a line for each migration the start applied, then listening.
      const migrated = sqliteMigrations.map(() => 'migration applied')
      const clean = { code: 0, logs: [...migrated, 'listening', 'stopping', 'stopped'] }
      expect(runs).toEqual(Array.from({ length: RACE_RUNS }, () => clean))
    },
    // it.each does not take bunfig's timeout: fifteen starts need longer than the 5 s default.
    30_000,
  )
})

describe('catalogue durability', () => {
  it('keeps a record answered 201 even when killed with SIGKILL right after', async () => {
    const env = { DATABASE_URL: tempDatabase().url }
    const first = await startService(env)
    const response = await createAuthor(first.base, 'Survivor')
    expect(response.status).toBe(201)
    first.cli.proc.kill('SIGKILL')
    await first.cli.exitCode()
    const { data } = (await response.json()) as { data: { id: string } }

    const second = await startService(env)
    const read = await getJson(`${second.base}/api/v1/authors/${data.id}`)
    expect(read.status).toBe(200)
    expect(read.body.data.attributes.name).toBe('Survivor')
  })

  it('on a second start on the same file keeps the data and does not re-run migrations', async () => {
    const { path: dbPath, url } = tempDatabase()
    const env = { DATABASE_URL: url }

    const first = await startService(env)
    const created = await createAuthor(first.base, 'Kept')
    expect(created.status).toBe(201)
    const { data } = (await created.json()) as { data: { id: string } }
    first.cli.proc.kill('SIGTERM')
    expect(await first.cli.exitCode()).toBe(0)

    const second = await startService(env)
    const read = await getJson(`${second.base}/api/v1/authors/${data.id}`)
    expect(read.status).toBe(200)
    expect(read.body.data.attributes.name).toBe('Kept')
    const list = await getJson(`${second.base}/api/v1/authors`)
    expect(list.body.data).toHaveLength(1)
    second.cli.proc.kill('SIGTERM')
    expect(await second.cli.exitCode()).toBe(0)

    const db = new Database(dbPath, { readonly: true })
    try {
      const rows = db
        .query<{ version: number }, []>('SELECT version FROM schema_migrations ORDER BY version')
        .all()
        .map((row) => row.version)
      expect(rows).toEqual(sqliteMigrations.map((migration) => migration.version))
    } finally {
      db.close()
    }
  })
})

describe('catalogue probes and metrics over HTTP', () => {
  it('answers /health, /ready and a Prometheus scrape, and counts the requests it served', async () => {
    const { base } = await startService({ DATABASE_URL: tempDatabase().url })
    expect((await createAuthor(base, 'Probed')).status).toBe(201)
    for (const path of ['/health', '/ready']) {
      const answer = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(WAIT_MS) })
      expect(answer.status).toBe(200)
      expect(answer.headers.get('content-type')).toBe('application/json')
    }
    const scrape = await fetch(`${base}/metrics`, {
      headers: { accept: 'text/plain;version=0.0.4;q=1,*/*;q=0.1' },
      signal: AbortSignal.timeout(WAIT_MS),
    })
    expect(scrape.status).toBe(200)
    expect(scrape.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
    const text = await scrape.text()
    expect(text).toContain(
      'http_request_duration_seconds_count{method="POST",route="/api/v1/authors",status="201"} 1\n',
    )
    expect(text).toContain('http_request_duration_seconds_count{method="GET",route="/ready",status="200"} 1\n')
    expect(text).toMatch(/^nodejs_eventloop_lag_p99_seconds \d/m)
  })

  it('answers /metrics 404 with METRICS=false, and the probes still 200', async () => {
    const { base } = await startService({ DATABASE_URL: tempDatabase().url, METRICS: 'false' })
    const status = (path: string) =>
      fetch(`${base}${path}`, { signal: AbortSignal.timeout(WAIT_MS) }).then((r) => r.status)
    expect(await status('/metrics')).toBe(404)
    expect(await status('/health')).toBe(200)
    expect(await status('/ready')).toBe(200)
  })
})

describe('the service as the tests start it', () => {
  it("reads no .env of its working folder, so that a developer's .env cannot change what the tests see", async () => {
    const cwd = tempDir('catalogue-cli-dotenv-')
    // Read, this would refuse page[size]=8 and turn every write without If-Match into a 428.
    await Bun.write(join(cwd, '.env'), 'MAX_PAGE_SIZE=7\nREQUIRE_IF_MATCH=true\n')
    const { cli, base } = await startService({ DATABASE_URL: tempDatabase().url }, cwd)
    expect(cli.logs.some((line) => String(line.msg).includes('.env'))).toBe(false)
    expect((await getJson(`${base}/api/v1/authors?page[size]=8`)).status).toBe(200)
  })
})
