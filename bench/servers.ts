import type { Subprocess } from 'bun'
import { identify, processTree, stillRunning } from './process-tree'

/** A server under test, running in its own process on 127.0.0.1. */
export interface RunningServer {
  readonly name: string
  readonly origin: string
  readonly process: Subprocess
  /** Lines the server wrote to stdout (its request log), read and thrown away. */
  readonly loggedLines: () => number
}

const repoRoot = new URL('..', import.meta.url).pathname

/** A port nothing listens on right now: the OS picks one, we let it go and hand it to the server. */
export function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const { port } = probe
  probe.stop(true)
  return port
}

/** Reads a pipe to its end, counting newlines, so the writer never blocks on a full pipe. */
function drain(stream: ReadableStream<Uint8Array>): () => number {
  let lines = 0
  void (async () => {
    for await (const chunk of stream) {
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++
    }
  })()
  return () => lines
}

/**
 * Starts `bun <script> [args]` from the repository root with extra environment variables. `prefix`
 * is a command to run it under (taskset, to pin it to a core); it must exec, so the pid stays the server's.
 */
export function startServer(
  name: string,
  script: string,
  port: number,
  env: Record<string, string>,
  prefix: readonly string[] = [],
  args: readonly string[] = [],
): RunningServer {
  const child = Bun.spawn([...prefix, 'bun', script, ...args], {
    cwd: repoRoot,
    env: { ...process.env, PORT: String(port), ...env },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'inherit',
  })
  return { name, origin: `http://127.0.0.1:${port}`, process: child, loggedLines: drain(child.stdout) }
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
  if (server.process.exitCode !== null || server.process.signalCode !== null) return
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
}
