import { closeSync, copyFileSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { identify, processTree, stillRunning } from './process-tree'

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

const repoRoot = new URL('../..', import.meta.url).pathname

/**
 * The load generator is one client at up to 32 connections, and the caps on long answers in flight
 * (docs/limits.md: 8, 4 per client) would refuse most of its whole lists: the throughput benches
 * raise them, measuring the lists themselves. bench/parts/limits/bounds.ts measures the caps.
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
 * Starts `bun <script> [args]` from the repository root on a free port (PORT) with extra environment
 * variables; `script`
 * may instead be a whole command (the Express baseline's `node bench/references/express.mjs`).
 * `prefix` is a command to run it under (taskset, to pin it to a core); it must exec, so the pid
 * stays the server's.
 */
export function startServer(
  name: string,
  script: string | readonly string[],
  env: Record<string, string>,
  prefix: readonly string[] = [],
  args: readonly string[] = [],
): RunningServer {
  const port = freePort()
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
 * Waits, polling every 2 ms, until the service has logged `listening` (its stdout goes to its log
 * file): the moment an operator sees it up. Gives up after 20 s.
 */
export async function waitUntilListening(server: RunningServer): Promise<void> {
  for (const until = performance.now() + 20_000; performance.now() < until; ) {
    if (server.process.exitCode !== null) throw new Error(`${server.name} exited with ${server.process.exitCode}`)
    if (
      (
        await Bun.file(server.logPath)
          .text()
          .catch(() => '')
      ).includes('"msg":"listening"')
    )
      return
    await Bun.sleep(2)
  }
  throw new Error(`${server.name} did not log listening within 20 s`)
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
