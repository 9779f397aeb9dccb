/**
 * The services the change-latency part measures, on 10,000 seeded books: on SQLite one process
 * (pinned to core 0) and `--workers 2` (both cores), the streams and the writes on its one port;
 * on PostgreSQL one instance (core 0), and two instances on the same database (both on core 0, as
 * bench/parts/replicas.ts runs its two), the writes sent to the first and the streams opened on the
 * second: a change then reaches a stream only through the database (its wake-up or its polling).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SQL } from 'bun'
import { createDatabase, postgresAdminUrl } from '../../data/postgres-databases'
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
  /** Each server that has exited, with its exit code or signal; empty while all run. */
  readonly exited: () => string[]
  /**
   * PostgreSQL: starts watching the cluster's other transactions; the returned function stops and
   * gives the longest time one of them held a transaction id meanwhile (ms). A change becomes
   * visible to the feed once every transaction begun before it has ended, in any database of the
   * cluster, so a long one elsewhere (another test run's) holds the streams back.
   */
  readonly watchOthers?: () => () => Promise<number>
}

/** Samples pg_stat_activity every 100 ms for the oldest transaction with an id outside `database`. */
function watchOthers(database: string): () => Promise<number> {
  const sql = new SQL(postgresAdminUrl, { max: 1 })
  let longest = 0
  let running = true
  const loop = (async () => {
    while (running) {
      const [row] = (await sql`SELECT COALESCE(EXTRACT(EPOCH FROM max(now() - xact_start)) * 1000, 0)::float8 AS ms
        FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND datname IS DISTINCT FROM ${database}`) as {
        ms: number
      }[]
      longest = Math.max(longest, row?.ms ?? 0)
      await Bun.sleep(100)
    }
  })()
  return async () => {
    running = false
    await loop.catch(() => undefined)
    await sql.close()
    return longest
  }
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

/**
 * How the bench starts the service: as operators run it, its request log on. Its streams all come
 * from one address (the bench's): the per-client cap is raised to the process's.
 */
export const SERVICE_ENV = { HOST: '127.0.0.1', LOG_LEVEL: 'info', MAX_CHANGE_STREAMS_PER_CLIENT: '1000' }

/** The last lines a server logged (its 'stopping' line names the signal that stopped it). */
export function lastLines(server: RunningServer): string {
  try {
    return readFileSync(server.logPath, 'utf8').trimEnd().split('\n').slice(-3).join(' | ')
  } catch {
    return ''
  }
}

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
    const server = startServer(name, 'src/cli.ts', { ...SERVICE_ENV, ...env }, placement, ['serve'])
    servers.push(server)
    track(server)
    return server
  }
  const stop = async () => {
    await Promise.all(servers.map(stopServer))
  }
  let database: string | undefined
  try {
    if (seeded.backend === 'sqlite') {
      const file = copiesFor(seeded.source, dir, `change-latency-${++copies}`, ['service'] as const).service
      const env = { DATABASE_URL: `sqlite://${file}`, WORKERS: shape === 'two' ? '2' : '1' }
      start(shape === 'two' ? 'workers 2' : 'one process', env, shape === 'two' ? pinning.spread : pinning.server)
    } else {
      const copy = await createDatabase(seeded.source)
      database = copy.name
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
      exited: () =>
        servers
          .filter((server) => server.process.exitCode !== null || server.process.signalCode !== null)
          .map(
            (server) =>
              `${server.name} exited (code ${server.process.exitCode}, signal ${server.process.signalCode}; last lines logged: ${lastLines(server)})`,
          ),
      ...(database === undefined ? {} : { watchOthers: () => watchOthers(database as string) }),
    }
  } catch (error) {
    await stop()
    throw error
  }
}
