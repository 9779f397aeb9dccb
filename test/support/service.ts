import { join } from 'node:path'
import { type ChildProcess, spawnChild, tempDir, WAIT_MS } from './process'

/*
 * The real service as a client meets it: `bun src/cli.ts` in its own process, on a port of its own
 * on 127.0.0.1, over a new SQLite file. For the tests of real client libraries, which speak HTTP
 * with fetch (stop it with stopChildren, and removeTempDirs, from ./process).
 */

const REPO = join(import.meta.dir, '..', '..')

export interface RunningService {
  readonly child: ChildProcess
  /** `http://127.0.0.1:<port>`, without a final slash. */
  readonly origin: string
  /** The database file, for seeding it directly. */
  readonly dbPath: string
}

/** Starts the service with `env` added to its settings and waits until it listens. */
export async function startService(env: Record<string, string> = {}): Promise<RunningService> {
  const dbPath = join(tempDir('catalogue-client-'), 'catalogue.db')
  const child = spawnChild(['bun', join(REPO, 'src', 'cli.ts')], REPO, {
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: `sqlite://${dbPath}`,
    ...env,
  })
  const line = await child.waitForLog((l) => l.msg === 'listening', WAIT_MS)
  return { child, origin: new URL(String(line.url)).origin, dbPath }
}
