/**
 * What every run of `bun run bench` shares: its temporary folder, the servers it started (stopped
 * on the way out, or on Ctrl-C), and the seeded SQLite files.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { removeTempDirs, stopChildren } from '../../test/support/process'
import { dropDatabases } from '../data/postgres-databases'
import { type DataSet, seed } from '../data/seed'
import { type RunningServer, stopServer } from '../harness/servers'

export const count = (n: number) => n.toLocaleString('en-US')

export const dir = mkdtempSync(join(tmpdir(), 'catalogue-bench-'))
const servers: RunningServer[] = []

/** Told of each server a part starts, so that an interrupted run can stop it. */
export const track = (server: RunningServer): void => {
  servers.push(server)
}

export async function cleanUp(): Promise<void> {
  await Promise.all(servers.map(stopServer))
  // The crash rounds' service and folder.
  await stopChildren()
  removeTempDirs()
  await dropDatabases().catch((error: Error) => console.error(`bench: cannot drop its databases: ${error.message}`))
  rmSync(dir, { recursive: true, force: true })
}

// Ctrl-C: stop the servers and remove the files rather than leave them behind.
process.on('SIGINT', () => void cleanUp().finally(() => process.exit(130)))

/** Seeds a set into `<name>.db` and copies it for the reference, the memory runs and the backend × workers part. */
export async function seedSet(
  name: string,
  set: DataSet,
): Promise<{ service: string; reference: string; memory: string; pristine: string }> {
  const paths = {
    service: join(dir, `${name}-service.db`),
    reference: join(dir, `${name}-reference.db`),
    memory: join(dir, `${name}-memory.db`),
    pristine: join(dir, `${name}-pristine.db`),
  }
  const started = performance.now()
  await seed(paths.service, set)
  copyFileSync(paths.service, paths.reference)
  copyFileSync(paths.service, paths.memory)
  copyFileSync(paths.service, paths.pristine)
  process.stderr.write(`seeded ${count(set.books)} books in ${Math.round(performance.now() - started)} ms\n`)
  return paths
}
