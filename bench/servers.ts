import { closeSync, copyFileSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import type { Durability } from '../src/store/sqlite/open-database'
import { EXPRESS_COMMAND, ensureBetterSqlite } from './express-on-node'
import type { Baselines } from './measure'
import { identify, processTree, stillRunning } from './process-tree'
import type { ReferenceCommits, ReferenceLists } from './reference-sqlite'
import type { BaselineName } from './scenarios'

/** A server under test, running in its own process on 127.0.0.1. */
export interface RunningServer {
  readonly name: string
  readonly origin: string
  readonly process: Subprocess
  /** Lines the server wrote to stdout (its request log) so far. */
  readonly loggedLines: () => number
  /** The file its stdout goes to, removed when it stops. */
  readonly logPath: string
}

const repoRoot = new URL('..', import.meta.url).pathname

/**
 * The load generator is one client at up to 32 connections, and the caps on long answers in flight
 * (docs/limits.md: 8, 4 per client) would refuse most of its whole lists: the throughput benches
 * raise them, measuring the lists themselves. bench/bounds.ts measures the caps.
 */
export const UNCAPPED_LONG_ANSWERS = Object.freeze({ MAX_LONG_ANSWERS: '64', MAX_LONG_ANSWERS_PER_CLIENT: '64' })

/** A copy of `pristine` in `dir` for each name, `<prefix>-<name>.db`: every server reads and writes its own. */
export function copiesFor<Name extends string>(
  pristine: string,
  dir: string,
  prefix: string,
  names: readonly Name[],
): Record<Name, string> {
  const files = {} as Record<Name, string>
  for (const name of names) {
    files[name] = join(dir, `${prefix}-${name}.db`)
    copyFileSync(pristine, files[name])
  }
  return files
}

/** A port nothing listens on right now: the OS picks one, we let it go and hand it to the server. */
export function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const { port } = probe
  probe.stop(true)
  return port
}

/**
 * Servers write their logs to a file, not to a pipe this process reads: reading a pipe of thousands
 * of lines a second would cost the load generator's core (the bench runs there) a share of its time.
 */
const logDir = mkdtempSync(join(tmpdir(), 'catalogue-bench-logs-'))
process.on('exit', () => rmSync(logDir, { recursive: true, force: true }))
let logFiles = 0

/** Newlines in the file at `path`, read a megabyte at a time. */
function countLines(path: string): number {
  let fd: number
  try {
    fd = openSync(path, 'r')
  } catch {
    return 0
  }
  const buffer = Buffer.alloc(1 << 20)
  let lines = 0
  try {
    for (let read = readSync(fd, buffer); read > 0; read = readSync(fd, buffer)) {
      for (let i = buffer.indexOf(10); i !== -1 && i < read; i = buffer.indexOf(10, i + 1)) lines++
    }
  } finally {
    closeSync(fd)
  }
  return lines
}

/**
 * Starts `bun <script> [args]` from the repository root with extra environment variables; `script`
 * may instead be a whole command (the Express baseline's `node bench/reference-express.mjs`).
 * `prefix` is a command to run it under (taskset, to pin it to a core); it must exec, so the pid
 * stays the server's.
 */
export function startServer(
  name: string,
  script: string | readonly string[],
  port: number,
  env: Record<string, string>,
  prefix: readonly string[] = [],
  args: readonly string[] = [],
): RunningServer {
  const logPath = join(logDir, `${++logFiles}.log`)
  const command = typeof script === 'string' ? ['bun', script] : script
  const child = Bun.spawn([...prefix, ...command, ...args], {
    cwd: repoRoot,
    env: { ...process.env, PORT: String(port), ...env },
    stdin: 'ignore',
    stdout: Bun.file(logPath),
    stderr: 'inherit',
  })
  return { name, origin: `http://127.0.0.1:${port}`, process: child, logPath, loggedLines: () => countLines(logPath) }
}

/** Polls until the server answers `path` (any status) or gives up after about 10 s. */
export async function waitUntilReady(server: RunningServer, path: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if (server.process.exitCode !== null) throw new Error(`${server.name} exited with ${server.process.exitCode}`)
    try {
      await (await fetch(server.origin + path)).arrayBuffer()
      return
    } catch {
      await Bun.sleep(50)
    }
  }
  throw new Error(`${server.name} did not answer on ${server.origin} within 10 s`)
}

/**
 * SIGTERM, as an operator would stop it; SIGKILL if it has not gone after 5 s. Worker processes it
 * started and left behind (they would hold the port) are killed too.
 */
export async function stopServer(server: RunningServer): Promise<void> {
  if (server.process.exitCode !== null || server.process.signalCode !== null) {
    rmSync(server.logPath, { force: true })
    return
  }
  const below = identify(processTree(server.process.pid).slice(1))
  server.process.kill('SIGTERM')
  const stopped = await Promise.race([server.process.exited.then(() => true), Bun.sleep(5000).then(() => false)])
  if (!stopped) {
    server.process.kill('SIGKILL')
    await server.process.exited
  }
  for (const left of below.filter(stillRunning)) {
    try {
      process.kill(left.pid, 'SIGKILL')
    } catch {
      // Gone meanwhile.
    }
  }
  rmSync(server.logPath, { force: true })
}

/** The service and the reference, each on its copy of the same SQLite file. */
export interface ServerPair {
  readonly service: RunningServer
  readonly reference: RunningServer
}

/**
 * Starts the service (logging each request, as operators run it) and the reference on their files,
 * under `placement`, at one DURABILITY, and waits until both answer. `track` gets each server as
 * it starts, so that the bench can stop it on a failure.
 */
export async function startPair(
  paths: { readonly service: string; readonly reference: string },
  placement: readonly string[],
  track: (server: RunningServer) => void,
  durability: Durability = 'full',
): Promise<ServerPair> {
  const service = startServer(
    'service',
    'src/cli.ts',
    freePort(),
    {
      HOST: '127.0.0.1',
      DATABASE_URL: `sqlite://${paths.service}`,
      LOG_LEVEL: 'info',
      DURABILITY: durability,
      ...UNCAPPED_LONG_ANSWERS,
    },
    placement,
  )
  track(service)
  const reference = startServer(
    'reference',
    'bench/reference.ts',
    freePort(),
    { REFERENCE_DB: paths.reference, REFERENCE_DURABILITY: durability },
    placement,
  )
  track(reference)
  await Promise.all([waitUntilReady(service, '/api/v1/books/1'), waitUntilReady(reference, '/api/v1/books/1')])
  return { service, reference }
}

export async function stopPair(pair: ServerPair): Promise<void> {
  await Promise.all([stopServer(pair.service), stopServer(pair.reference)])
}

/** How a baseline is started: its name in the progress lines, its script or command, and its modes. */
interface BaselineStart {
  readonly label: string
  /** A script run with `bun`, or a whole command. */
  readonly script: string | readonly string[]
  readonly commits: ReferenceCommits
}

/**
 * Each baseline, in the order they start: `whole` is the raw reference writing the unpaginated
 * lists whole; `grouped` the raw reference committing writes in groups; Express runs on Node with
 * better-sqlite3, as the conventional stack does. All but the raw reference write lists whole.
 */
const BASELINES: Record<BaselineName, BaselineStart> = {
  whole: { label: 'raw-whole', script: 'bench/reference.ts', commits: 'alone' },
  grouped: { label: 'raw-grouped', script: 'bench/reference.ts', commits: 'grouped' },
  elysia: { label: 'elysia', script: 'bench/reference-elysia.ts', commits: 'alone' },
  express: { label: 'express', script: EXPRESS_COMMAND, commits: 'alone' },
}

/** The service, the raw reference and the other baselines of the comparison, each on its own file. */
export interface ComparisonServers extends ServerPair {
  readonly others: Baselines
}

/**
 * Starts the service, the raw reference (its unpaginated lists streamed, REFERENCE_LISTS=streamed,
 * as the service streams them) and each baseline `files` has a file for (the raw reference writing
 * lists whole, Elysia, Express), all under `placement` and at one DURABILITY, and waits until they
 * all answer. The Elysia app writes lists whole, as a 16-line app does.
 */
export async function startComparison(
  files: { readonly service: string; readonly reference: string } & Partial<Record<BaselineName, string>>,
  placement: readonly string[],
  track: (server: RunningServer) => void,
  durability: Durability = 'full',
): Promise<ComparisonServers> {
  // Before any server starts: the first run may have to build better-sqlite3 for Node.
  if (files.express !== undefined) ensureBetterSqlite()
  const service = startServer(
    'service',
    'src/cli.ts',
    freePort(),
    {
      HOST: '127.0.0.1',
      DATABASE_URL: `sqlite://${files.service}`,
      LOG_LEVEL: 'info',
      DURABILITY: durability,
      ...UNCAPPED_LONG_ANSWERS,
    },
    placement,
  )
  track(service)
  const started = (
    name: string,
    script: string | readonly string[],
    database: string,
    lists: ReferenceLists,
    commits: ReferenceCommits,
  ) => {
    const server = startServer(
      name,
      script,
      freePort(),
      { REFERENCE_DB: database, REFERENCE_DURABILITY: durability, REFERENCE_LISTS: lists, REFERENCE_COMMITS: commits },
      placement,
    )
    track(server)
    return server
  }
  const reference = started('raw', 'bench/reference.ts', files.reference, 'streamed', 'alone')
  const others: Baselines = {}
  for (const [name, { label, script, commits }] of Object.entries(BASELINES) as [BaselineName, BaselineStart][]) {
    const database = files[name]
    if (database !== undefined) others[name] = started(label, script, database, 'whole', commits)
  }
  await Promise.all(
    [service, reference, ...Object.values(others)].map((server) => waitUntilReady(server, '/api/v1/books/1')),
  )
  return { service, reference, others }
}

export async function stopComparison(servers: ComparisonServers): Promise<void> {
  await Promise.all([servers.service, servers.reference, ...Object.values(servers.others)].map(stopServer))
}
