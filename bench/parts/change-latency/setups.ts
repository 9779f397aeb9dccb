/**
 * The services the change-latency part measures, on 10,000 seeded books: on SQLite one process
 * (pinned to core 0) and `--workers 2` (both cores), the streams and the writes on its one port;
 * on PostgreSQL one instance (core 0), and two instances on the same database (both on core 0, as
 * bench/parts/replicas.ts runs its two), the writes sent to the first and the streams opened on the
 * second: a change then reaches a stream only through the database (its wake-up or its polling).
 */
import { join } from 'node:path'
import { createDatabase } from '../../data/postgres-databases'
import { SEED, seed } from '../../data/seed'
import { seedPostgres } from '../../data/seed-postgres'
import { pinning } from '../../harness/measure'
import { copiesFor, type RunningServer, startServer, stopServer, waitUntilReady } from '../../harness/servers'

export type Backend = 'sqlite' | 'postgres'
/** `one`: one process or instance; `two`: `--workers 2` on SQLite, two instances on PostgreSQL. */
export type Shape = 'one' | 'two'

export const SHAPE_NAMES: Record<Backend, Record<Shape, string>> = {
  sqlite: { one: 'SQLite, one process', two: 'SQLite, --workers 2' },
  postgres: {
    one: 'PostgreSQL, one instance',
    two: 'PostgreSQL, two instances (writes to one, streams on the other)',
  },
}

/** A started setup: where to write, where to stream, and how to stop it. */
export interface Setup {
  readonly name: string
  readonly writeOrigin: string
  readonly streamOrigin: string
  readonly stop: () => Promise<void>
}

/** Seeded data for a backend: a pristine SQLite file, or a template database. */
export interface Seeded {
  readonly backend: Backend
  /** The SQLite file, or the template database's name. */
  readonly source: string
}

export async function seedFor(backend: Backend, dir: string): Promise<Seeded> {
  const started = performance.now()
  let source: string
  if (backend === 'sqlite') {
    source = join(dir, 'change-latency-pristine.db')
    await seed(source, SEED)
  } else {
    const template = await createDatabase()
    await seedPostgres(template.url, SEED)
    source = template.name
  }
  process.stderr.write(
    `change-latency: seeded ${SEED.books} books on ${backend} in ${Math.round(performance.now() - started)} ms\n`,
  )
  return { backend, source }
}

const ENV = { HOST: '127.0.0.1', LOG_LEVEL: 'warn' }

let copies = 0

/** Starts `shape` on a fresh copy of the seeded data and waits until it answers (and has a feed). */
export async function startSetup(
  seeded: Seeded,
  shape: Shape,
  dir: string,
  track: (server: RunningServer) => void,
): Promise<Setup> {
  const servers: RunningServer[] = []
  const start = (name: string, env: Record<string, string>, placement: readonly string[]) => {
    const server = startServer(name, 'src/cli.ts', { ...ENV, ...env }, placement, ['serve'])
    servers.push(server)
    track(server)
    return server
  }
  const stop = async () => {
    await Promise.all(servers.map(stopServer))
  }
  try {
    if (seeded.backend === 'sqlite') {
      const file = copiesFor(seeded.source, dir, `change-latency-${++copies}`, ['service'] as const).service
      const env = { DATABASE_URL: `sqlite://${file}`, WORKERS: shape === 'two' ? '2' : '1' }
      start(shape === 'two' ? 'workers 2' : 'one process', env, shape === 'two' ? pinning.spread : pinning.server)
    } else {
      const copy = await createDatabase(seeded.source)
      start('instance A', { DATABASE_URL: copy.url }, pinning.server)
      if (shape === 'two') start('instance B', { DATABASE_URL: copy.url }, pinning.server)
    }
    await Promise.all(servers.map((server) => waitUntilReady(server, '/api/v1/books/1')))
    for (const server of servers) {
      const response = await fetch(`${server.origin}/api/v1/changes?page[size]=1`)
      const text = await response.text()
      if (response.status !== 200) {
        throw new Error(
          `${server.name}: GET /api/v1/changes answered ${response.status}; no change feed in this build? ${text.slice(0, 200)}`,
        )
      }
    }
    const [first, second] = servers as [RunningServer, RunningServer | undefined]
    return {
      name: SHAPE_NAMES[seeded.backend][shape],
      writeOrigin: first.origin,
      streamOrigin: (second ?? first).origin,
      stop,
    }
  } catch (error) {
    await stop()
    throw error
  }
}
