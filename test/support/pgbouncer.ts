import * as bunTest from 'bun:test'
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { SQL, type Subprocess } from 'bun'
import { freePort } from './postgres-server'
import { postgresAvailable, describe as whenPostgres } from './postgres-tests'
import { isRunning, WAIT_MS } from './process'

/*
 * PgBouncer for the tests of the service behind it (docs/postgres.md, "Behind PgBouncer"): Debian's
 * pgbouncer (PGBOUNCER_PATH, else /usr/sbin/pgbouncer, else on PATH), started by a test on a free
 * port of 127.0.0.1 in transaction pooling mode, with its configuration in a temporary folder,
 * in front of the PostgreSQL server the tests use (postgres-server.ts); stopped and removed after.
 * Where pgbouncer is not installed, describeWithPgBouncer registers nothing and one line says so;
 * under CI=true it registers a test that fails instead (.ci/run installs pgbouncer).
 */

/** The pgbouncer program, or null where it is not installed. */
export const PGBOUNCER: string | null = (() => {
  const named = process.env.PGBOUNCER_PATH
  if (named !== undefined) return existsSync(named) ? named : null
  if (existsSync('/usr/sbin/pgbouncer')) return '/usr/sbin/pgbouncer'
  return Bun.which('pgbouncer')
})()

let noted = false

/**
 * describe for tests that run through PgBouncer: registered where pgbouncer and a PostgreSQL server
 * are there (postgres-tests.ts says when the server is not). Without pgbouncer, one line says so;
 * under CI=true one test fails instead.
 */
export function describeWithPgBouncer(name: string, tests: () => void): void {
  if (PGBOUNCER !== null) {
    whenPostgres(name, tests)
  } else if (process.env.CI === 'true') {
    bunTest.test(name, () => {
      throw new Error(
        'pgbouncer is needed under CI=true, and none was found (PGBOUNCER_PATH, /usr/sbin/pgbouncer, PATH)',
      )
    })
  } else if (!noted && postgresAvailable) {
    noted = true
    process.stderr.write(
      'PgBouncer tests skipped: pgbouncer was not found at PGBOUNCER_PATH, /usr/sbin/pgbouncer or on PATH. To run them, install it (apt-get install pgbouncer, docs/testing.md)\n',
    )
  }
}

export interface PgBouncer {
  readonly port: number
  /** The URL of `database` on the PostgreSQL server, through this PgBouncer. */
  url(database: string): string
  /**
   * Opens every server connection of `database`'s pool now (PgBouncer opens them as clients need
   * them, and min_pool_size fills slowly): from then on, consecutive transactions take them in turn.
   */
  fill(database: string): Promise<void>
  /** Runs `command` on PgBouncer's console (RECONNECT, SHOW POOLS...) and returns its rows. */
  console(command: string): Promise<Record<string, unknown>[]>
  /** Its log so far (connections, errors), for a failing test's message. */
  log(): string
  stop(): Promise<void>
}

/** A value of PgBouncer's connection strings, quoted: a quote in it doubled. */
function quoted(value: string): string {
  return `'${value.replaceAll("'", "''")}'`
}

/**
 * Starts pgbouncer in front of the server at `serverUrl` (its host, port, user and password; every
 * database name passes through, `*`), in transaction pooling mode with at most `poolSize` server
 * connections per database: fewer than the clients' pools, so that clients share server
 * connections, as they do in production, and takes them in turn (server_round_robin), so that
 * one client's consecutive transactions land on different ones. Clients log in as anyone (auth_type any): PgBouncer logs
 * in to the server as the URL's user. `statement_timeout`, which the store sends at connection,
 * is ignored as docs/postgres.md says to configure it.
 */
export async function startPgBouncer(
  serverUrl: string,
  options: { readonly poolSize?: number; readonly settings?: Readonly<Record<string, string>> } = {},
): Promise<PgBouncer> {
  if (PGBOUNCER === null) throw new Error('pgbouncer is not installed')
  const server = new URL(serverUrl)
  removeLeftBouncers()
  const dir = mkdtempSync(join(tmpdir(), `${PREFIX}${process.pid}-`))
  // PgBouncer refuses to run as root: a root test run has it switch to the postgres user.
  const asRoot = userInfo().uid === 0
  const postgresUser = asRoot
    ? readFileSync('/etc/passwd', 'utf8')
        .split('\n')
        .map((line) => line.split(':'))
        .find((fields) => fields[0] === 'postgres')
    : undefined
  if (asRoot && !postgresUser) throw new Error('running as root, and there is no postgres user to run pgbouncer as')
  if (postgresUser) chownSync(dir, Number(postgresUser[2]), Number(postgresUser[3]))
  const port = freePort()
  const target = [
    `host=${server.hostname.replace(/^\[|\]$/g, '')}`,
    `port=${server.port || '5432'}`,
    `user=${quoted(decodeURIComponent(server.username || 'postgres'))}`,
    ...(server.password ? [`password=${quoted(decodeURIComponent(server.password))}`] : []),
  ].join(' ')
  const logfile = join(dir, 'pgbouncer.log')
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    `[databases]
* = ${target}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = ${options.poolSize ?? 2}
server_round_robin = 1
max_client_conn = 1000
ignore_startup_parameters = statement_timeout
admin_users = ${server.username || 'postgres'}
logfile = ${logfile}
${Object.entries(options.settings ?? {})
  .map(([name, value]) => `${name} = ${value}\n`)
  .join('')}`,
  )
  const proc: Subprocess = Bun.spawn([PGBOUNCER, ...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')], {
    stdin: 'ignore',
    stdout: 'ignore',
    stderr: 'ignore',
  })
  // For a later run, should this one end without stop() (killed, or a test that never calls it).
  writeFileSync(join(dir, 'started.pid'), String(proc.pid))
  const log = () => (existsSync(logfile) ? readFileSync(logfile, 'utf8') : '')
  const stop = async () => {
    // SIGTERM: PgBouncer's immediate shutdown.
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM')
    await Promise.race([proc.exited, Bun.sleep(5_000)])
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
  const deadline = Date.now() + WAIT_MS
  for (;;) {
    if (proc.exitCode !== null) {
      const text = log()
      await stop()
      throw new Error(`pgbouncer exited (${proc.exitCode}) at start: ${text.trim().split('\n').slice(-5).join(' | ')}`)
    }
    if (await listens(port)) break
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`pgbouncer did not listen on 127.0.0.1:${port} within ${WAIT_MS} ms`)
    }
    await Bun.sleep(50)
  }
  const poolSize = options.poolSize ?? 2
  const url = (database: string) => {
    const through = new URL(`postgres://127.0.0.1:${port}/${database}`)
    through.username = server.username
    return through.toString()
  }
  return {
    port,
    url,
    fill: async (database) => {
      const sql = new SQL(url(database), { max: poolSize, prepare: false })
      try {
        // Each holds a server connection until all have one.
        await Promise.all(Array.from({ length: poolSize }, () => sql`SELECT pg_sleep(0.05)`))
      } finally {
        await sql.close()
      }
    },
    console: async (command) => {
      const sql = new SQL(url('pgbouncer'), { max: 1, prepare: false })
      try {
        // The console takes the simple protocol only: a statement without parameters.
        return (await sql.unsafe(command).simple()) as Record<string, unknown>[]
      } finally {
        await sql.close()
      }
    },
    log,
    stop,
  }
}

/** The folders of the PgBouncers started here: this prefix, the test process's id, a dash. */
const PREFIX = 'catalogue-test-pgbouncer-'

/**
 * Stops the PgBouncers of test runs that ended without stopping theirs (Bun runs no exit hook of a
 * test file, and a child outlives a killed parent), and removes their folders.
 */
function removeLeftBouncers(): void {
  for (const name of readdirSync(tmpdir())) {
    const owner = Number(new RegExp(`^${PREFIX}(\\d+)-`).exec(name)?.[1])
    if (!Number.isInteger(owner) || owner === process.pid || isRunning(owner)) continue
    const dir = join(tmpdir(), name)
    const started = join(dir, 'started.pid')
    const pid = existsSync(started) ? Number(readFileSync(started, 'utf8')) : Number.NaN
    // Only that pgbouncer: its command line names this folder's configuration.
    const command =
      Number.isInteger(pid) && existsSync(`/proc/${pid}/cmdline`) ? readFileSync(`/proc/${pid}/cmdline`, 'utf8') : ''
    if (command.includes(join(dir, 'pgbouncer.ini'))) process.kill(pid, 'SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Whether something accepts a TCP connection on 127.0.0.1:`port`. */
async function listens(port: number): Promise<boolean> {
  try {
    const socket = await Bun.connect({ hostname: '127.0.0.1', port, socket: { data() {} } })
    socket.end()
    return true
  } catch {
    return false
  }
}
