/**
 * The two servers the search bench asks, each restartable: a page the bench gives up on (pages.ts,
 * PAGE_LIMIT_MS), or whose connection the service closes unanswered (its idle timeout, 30 s), goes
 * on in a read thread for minutes (about 3 minutes of CPU for `a e i o u k` at 1,000,000 books on
 * SQLite), and every request after it would be timed beside it. Such a page is counted as
 * unanswered and the server killed and started afresh before the next one.
 */
import { join } from 'node:path'
import { pinning } from '../../harness/measure'
import { type RunningServer, startServer, stopServer, waitUntilReady } from '../../harness/servers'

type Track = (server: RunningServer) => void

export class ServerUnderTest {
  restarts = 0

  private constructor(
    readonly name: string,
    private current: RunningServer,
    private readonly start: () => Promise<RunningServer>,
  ) {}

  static async started(name: string, start: () => Promise<RunningServer>): Promise<ServerUnderTest> {
    return new ServerUnderTest(name, await start(), start)
  }

  get origin(): string {
    return this.current.origin
  }

  get pid(): number {
    return this.current.process.pid
  }

  async restart(): Promise<void> {
    // At once: a graceful stop would wait for the very search it is restarted for.
    this.current.process.kill('SIGKILL')
    await this.current.process.exited
    await stopServer(this.current)
    this.current = await this.start()
    this.restarts++
  }

  stop(): Promise<void> {
    return stopServer(this.current)
  }
}

/** The real service (`bun src/cli.ts serve`) on a catalogue, once it answers one record; within two minutes. */
export function serviceUnderTest(url: string, track: Track): Promise<ServerUnderTest> {
  return ServerUnderTest.started('service', async () => {
    const env = { HOST: '127.0.0.1', LOG_LEVEL: 'warn', DATABASE_URL: url }
    const server = startServer('service', 'src/cli.ts', env, pinning.server, ['serve'])
    track(server)
    for (const deadline = performance.now() + 120_000; performance.now() < deadline; ) {
      if (server.process.exitCode !== null) break
      try {
        const response = await fetch(`${server.origin}/api/v1/books/1`)
        await response.arrayBuffer()
        if (response.status === 200) return server
      } catch {
        // Not listening yet.
      }
      await Bun.sleep(100)
    }
    await stopServer(server)
    throw new Error(`the service did not start on ${url}`)
  })
}

/** The reference (reference.ts) over its index: REFERENCE_DB or REFERENCE_DATABASE_URL in `env`. */
export function referenceUnderTest(env: Record<string, string>, track: Track): Promise<ServerUnderTest> {
  return ServerUnderTest.started('reference', async () => {
    const server = startServer('reference', join(import.meta.dir, 'reference.ts'), env, pinning.server)
    track(server)
    await waitUntilReady(server, '/api/v1/books?filter[search]=zzzz')
    return server
  })
}
