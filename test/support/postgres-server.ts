import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { dirname, join } from 'node:path'
import { SQL } from 'bun'
import { isRunning } from './process'

/*
 * Which PostgreSQL server the tests use (docs/testing.md, "PostgreSQL"): the one at
 * POSTGRES_TEST_URL (else the local default) when it answers; else, where PostgreSQL's programs are
 * installed, a throwaway cluster of this run's own (initdb in a temporary folder, a free port,
 * stopped and removed when the run ends); else none, and the PostgreSQL tests are not registered
 * (test/support/postgres-tests.ts), which one line says, except under CI=true, where a missing
 * PostgreSQL fails the run.
 */

export const DEFAULT_POSTGRES_TEST_URL = 'postgres://postgres@127.0.0.1:5432/test'
/** Names the folder of initdb and pg_ctl, instead of looking for them. */
export const BIN_DIR_ENV = 'TEST_POSTGRES_BIN_DIR'
/** The throwaway clusters' folders: this prefix, the test process's id, a dash. */
export const CLUSTER_PREFIX = 'catalogue-test-pg-'
/**
 * The data folders a throwaway cluster's folder may hold: its own, a replica's
 * (postgres-replication.ts), and a second cluster's (postgres-clusters.ts).
 */
const DATA_FOLDERS = ['data', 'replica', 'second']

export type PostgresServer =
  | { readonly kind: 'configured'; readonly url: string }
  | { readonly kind: 'throwaway'; readonly url: string; readonly dir: string }
  | { readonly kind: 'missing'; readonly url: string; readonly reason: string }

/** Whether a PostgreSQL server lets us in at `url` within a few seconds. */
export async function answers(url: string): Promise<boolean> {
  const sql = new SQL(url, { max: 1, connectionTimeout: 3, idleTimeout: 1 })
  try {
    await sql`SELECT 1`
    return true
  } catch {
    return false
  } finally {
    await sql.close().catch(() => {})
  }
}

/** The folder holding initdb and pg_ctl, or null when PostgreSQL is not installed. */
export function postgresBinaries(env: Readonly<Record<string, string | undefined>> = process.env): string | null {
  const holds = (dir: string) => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'))
  const named = env[BIN_DIR_ENV]
  if (named !== undefined) return holds(named) ? named : null
  // Debian and Ubuntu: /usr/lib/postgresql/<major>/bin, the newest first.
  const debian = '/usr/lib/postgresql'
  const majors = existsSync(debian) ? readdirSync(debian).sort((a, b) => Number(b) - Number(a)) : []
  for (const major of majors) if (holds(join(debian, major, 'bin'))) return join(debian, major, 'bin')
  const onPath = Bun.which('initdb')
  return onPath && holds(dirname(realpathSync(onPath))) ? dirname(realpathSync(onPath)) : null
}

/** PostgreSQL refuses to run as root: a root test run runs its programs as the `postgres` user. */
export function runAs(): { prefix: string[]; owner: { uid: number; gid: number } | null } {
  if (userInfo().uid !== 0) return { prefix: [], owner: null }
  const entry = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find((fields) => fields[0] === 'postgres')
  if (!entry) throw new Error('running as root, and there is no postgres user to run PostgreSQL as')
  return { prefix: ['runuser', '-u', 'postgres', '--'], owner: { uid: Number(entry[2]), gid: Number(entry[3]) } }
}

export function run(command: string[], what: string): void {
  const done = Bun.spawnSync(command, { stdout: 'pipe', stderr: 'pipe', env: { ...process.env, LC_ALL: 'C' } })
  if (done.exitCode !== 0) {
    throw new Error(
      `${what} failed (${done.exitCode}): ${done.stderr.toString().trim() || done.stdout.toString().trim()}`,
    )
  }
}

/** A port nothing listens on now. */
export function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const { port } = probe
  probe.stop(true)
  return port
}

/** Stops the clusters in `dir` at once (their data is thrown away) and removes the folder. */
export function removeCluster(bin: string, dir: string, prefix: readonly string[]): void {
  for (const data of DATA_FOLDERS) {
    if (!existsSync(join(dir, data, 'postmaster.pid'))) continue
    Bun.spawnSync([...prefix, join(bin, 'pg_ctl'), '-D', join(dir, data), '-m', 'immediate', '-w', 'stop'], {
      stdout: 'ignore',
      stderr: 'ignore',
    })
  }
  rmSync(dir, { recursive: true, force: true })
}

/**
 * A folder for clusters of this process's own, named as the throwaway clusters' (so that a run
 * killed before removing it leaves it to the next run that starts one), owned by the user they run
 * as; `remove` stops them and removes it, and runs at exit if nothing did before.
 */
export function clusterFolder(bin: string): { dir: string; prefix: string[]; remove(): void } {
  const { prefix, owner } = runAs()
  removeLeftClusters(bin, prefix)
  const dir = mkdtempSync(join(tmpdir(), `${CLUSTER_PREFIX}${process.pid}-`))
  if (owner) chownSync(dir, owner.uid, owner.gid)
  let removed = false
  const remove = () => {
    if (removed) return
    removed = true
    removeCluster(bin, dir, prefix)
  }
  process.once('exit', remove)
  return { dir, prefix, remove }
}

/** Clusters left by test runs that were killed before they could remove theirs. */
export function removeLeftClusters(bin: string, prefix: readonly string[]): void {
  for (const name of readdirSync(tmpdir())) {
    const pid = Number(/^catalogue-test-pg-(\d+)-/.exec(name)?.[1])
    if (Number.isInteger(pid) && pid !== process.pid && !isRunning(pid))
      removeCluster(bin, join(tmpdir(), name), prefix)
  }
}

/** initdb into `data`: trust authentication, UTF-8, the C.UTF-8 locale, no fsync of its files. */
export function initCluster(bin: string, prefix: readonly string[], data: string): void {
  run(
    [
      ...prefix,
      join(bin, 'initdb'),
      '-D',
      data,
      '-U',
      'postgres',
      '--auth=trust',
      '-E',
      'UTF8',
      '--locale=C.UTF-8',
      '--no-sync',
    ],
    'initdb',
  )
}

/**
 * Starts the cluster in `data` on `port` of 127.0.0.1, its socket and log in `dir`, and waits until
 * it accepts connections. No fsync: nothing in it outlives the run. `settings`: more `-c` settings.
 */
export function startCluster(
  bin: string,
  prefix: readonly string[],
  data: string,
  dir: string,
  port: number,
  settings: readonly string[] = [],
): void {
  const options = [
    `-p ${port}`,
    '-c listen_addresses=127.0.0.1',
    `-c unix_socket_directories=${dir}`,
    '-c fsync=off',
    '-c synchronous_commit=off',
    '-c full_page_writes=off',
    ...settings.map((setting) => `-c ${setting}`),
  ].join(' ')
  run(
    [...prefix, join(bin, 'pg_ctl'), '-D', data, '-l', `${data}.log`, '-o', options, '-w', '-t', '60', 'start'],
    'pg_ctl start',
  )
}

let cluster: { readonly bin: string; readonly dir: string; readonly prefix: readonly string[] } | undefined

/** Starts a cluster of this process's own on a free port of 127.0.0.1; resolves to its URL. */
async function startThrowawayCluster(bin: string): Promise<{ url: string; dir: string }> {
  const { prefix, owner } = runAs()
  removeLeftClusters(bin, prefix)
  const dir = mkdtempSync(join(tmpdir(), `${CLUSTER_PREFIX}${process.pid}-`))
  cluster = { bin, dir, prefix }
  // However the run ends, the cluster goes with it (the preload's afterAll stops it first, normally).
  process.once('exit', stopThrowawayCluster)
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      stopThrowawayCluster()
      process.exit(128 + ({ SIGHUP: 1, SIGINT: 2, SIGTERM: 15 } as const)[signal])
    })
  }
  if (owner) chownSync(dir, owner.uid, owner.gid)
  const data = join(dir, 'data')
  initCluster(bin, prefix, data)
  const port = freePort()
  startCluster(bin, prefix, data, dir, port)
  const admin = new SQL(`postgres://postgres@127.0.0.1:${port}/postgres`, { max: 1 })
  try {
    await admin`CREATE DATABASE test`
  } finally {
    await admin.close()
  }
  return { url: `postgres://postgres@127.0.0.1:${port}/test`, dir }
}

/** Stops and removes the throwaway cluster, if this process started one. */
export function stopThrowawayCluster(): void {
  if (!cluster) return
  const { bin, dir, prefix } = cluster
  cluster = undefined
  removeCluster(bin, dir, prefix)
}

const found = new Map<string, Promise<PostgresServer>>()
let throwaway: Promise<{ url: string; dir: string }> | undefined

/**
 * The server to use for `url` (POSTGRES_TEST_URL, else the default), found once a run: `url` if it
 * answers, else this run's throwaway cluster where PostgreSQL is installed, else `missing`. Says in
 * one line on stderr when it starts a cluster.
 */
export function postgresServer(
  url = process.env.POSTGRES_TEST_URL || DEFAULT_POSTGRES_TEST_URL,
): Promise<PostgresServer> {
  let server = found.get(url)
  if (!server) {
    server = (async (): Promise<PostgresServer> => {
      if (await answers(url)) return { kind: 'configured', url }
      const bin = postgresBinaries()
      if (bin === null) {
        const where = process.env[BIN_DIR_ENV] ?? '/usr/lib/postgresql/*/bin or on PATH'
        return {
          kind: 'missing',
          url,
          reason: `no server answers at ${url}, and PostgreSQL is not installed (no initdb in ${where})`,
        }
      }
      if (!throwaway) {
        throwaway = startThrowawayCluster(bin)
        const started = await throwaway
        process.stderr.write(
          `PostgreSQL: no server answers at ${url}: the tests use a throwaway cluster at ${started.url} (${started.dir}, from ${bin}), removed when the run ends\n`,
        )
      }
      return { kind: 'throwaway', ...(await throwaway) }
    })()
    found.set(url, server)
  }
  return server
}
