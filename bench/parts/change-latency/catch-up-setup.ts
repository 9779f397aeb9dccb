/**
 * The catch-up case's servers: a catalogue whose feed holds a backlog made at once (the bench's seed
 * through the store: authors, collections, then the books, on SQLite in group commits of 1,000
 * creates, on PostgreSQL in import batches of 1,000 as `catalogue import` sends them), the service
 * on it (one process, or one instance, on core 0) and the reference beside it
 * (reference-feed.ts, core 0 too). On SQLite each reads its own copy of the seeded file; on
 * PostgreSQL both read the seeded database itself (a copy made from it as a template would be
 * another history, whose feed starts over empty: docs/changes.md).
 */
import { join } from 'node:path'
import { createDatabase } from '../../data/postgres-databases'
import { type DataSet, SEED, seed } from '../../data/seed'
import { seedPostgres } from '../../data/seed-postgres'
import { pinning } from '../../harness/measure'
import { copiesFor, type RunningServer, startServer, stopServer, waitUntilReady } from '../../harness/servers'
import { type Backend, lastLines, SERVICE_ENV } from './setups'

export interface CatchUpSetup {
  readonly backend: Backend
  readonly service: RunningServer
  readonly reference: RunningServer
  /** The feed's ids from its start, oldest first, as the service's JSON pages list them. */
  readonly expected: readonly string[]
  /** How long the seeding took, ms. */
  readonly seededMs: number
  /** Each server that has exited, with how; empty while both run. */
  readonly exited: () => string[]
  readonly stop: () => Promise<void>
}

/**
 * Whether `b` comes after `a` in the feed: the bench reads the ids' forms (docs/changes.md), which
 * a client must not, to check the JSON pages it checks the streams against. SQLite: a number;
 * PostgreSQL: `<history>.<transaction>.<sequence>`, one history, ordered by the pair.
 */
export function comesAfter(a: string, b: string): boolean {
  const [x, y] = [a.split('.'), b.split('.')]
  if (x.length === 1 && y.length === 1) return BigInt(b) > BigInt(a)
  if (x.length !== 3 || y.length !== 3 || x[0] !== y[0]) return false
  const [xid, seq] = [BigInt(x[1] as string), BigInt(x[2] as string)]
  const [yxid, yseq] = [BigInt(y[1] as string), BigInt(y[2] as string)]
  return yxid > xid || (yxid === xid && yseq > seq)
}

/** The feed's ids after `start`, walked by `links.next` through JSON pages of 100 until one is empty. */
export async function feedIds(origin: string, start = '0'): Promise<string[]> {
  const ids: string[] = []
  let next = `/api/v1/changes?page[after]=${start}&page[size]=100`
  for (;;) {
    const response = await fetch(`${origin}${next}`, { headers: { accept: 'application/vnd.api+json' } })
    const text = await response.text()
    if (response.status !== 200) throw new Error(`GET ${next} answered ${response.status}: ${text.slice(0, 200)}`)
    const page = JSON.parse(text) as { data: { id: string }[]; links: { next: string } }
    if (page.data.length === 0) break
    for (const change of page.data) ids.push(change.id)
    next = page.links.next
  }
  // (meta.latest may be past the last change: on SQLite an opening's place holder, which is no change.)
  if (ids.length === 0) throw new Error(`GET /api/v1/changes?page[after]=${start}: the feed is empty`)
  for (let i = 1; i < ids.length; i++) {
    if (!comesAfter(ids[i - 1] as string, ids[i] as string)) {
      throw new Error(`the feed's JSON pages list ${ids[i]} after ${ids[i - 1]}: not in the feed's order`)
    }
  }
  return ids
}

/** The same GET of one book from both: the reference must answer the service's bytes. */
async function sameBook(service: RunningServer, reference: RunningServer): Promise<void> {
  const [ours, theirs] = await Promise.all(
    [service, reference].map(async (server) => {
      const response = await fetch(`${server.origin}/api/v1/books/1`, {
        headers: { accept: 'application/vnd.api+json' },
      })
      return `${response.status} ${await response.text()}`
    }),
  )
  if (ours !== theirs) throw new Error(`GET /api/v1/books/1: the reference answered ${theirs}, the service ${ours}`)
}

let seeded = 0

/** Seeds `books` books (and SEED's authors and collections) on `backend`, starts both, reads the feed. */
export async function startCatchUp(
  backend: Backend,
  books: number,
  dir: string,
  track: (server: RunningServer) => void,
): Promise<CatchUpSetup> {
  const set: DataSet = { ...SEED, books }
  const started = performance.now()
  let serviceEnv: Record<string, string>
  let referenceEnv: Record<string, string>
  if (backend === 'sqlite') {
    const pristine = join(dir, `catch-up-${++seeded}-pristine.db`)
    await seed(pristine, set)
    const files = copiesFor(pristine, dir, `catch-up-${seeded}`, ['service', 'reference'] as const)
    serviceEnv = { DATABASE_URL: `sqlite://${files.service}`, WORKERS: '1' }
    referenceEnv = { REFERENCE_DB: files.reference }
  } else {
    const database = await createDatabase()
    await seedPostgres(database.url, set)
    serviceEnv = { DATABASE_URL: database.url }
    referenceEnv = { REFERENCE_DATABASE_URL: database.url }
  }
  const seededMs = performance.now() - started
  const service = startServer('service', 'src/cli.ts', { ...SERVICE_ENV, ...serviceEnv }, pinning.server, ['serve'])
  track(service)
  const reference = startServer(
    'reference',
    'bench/parts/change-latency/reference-feed.ts',
    referenceEnv,
    pinning.server,
  )
  track(reference)
  const servers = [service, reference]
  const stop = async () => {
    await Promise.all(servers.map(stopServer))
  }
  try {
    await Promise.all(servers.map((server) => waitUntilReady(server, '/api/v1/books/1')))
    await sameBook(service, reference)
    const expected = await feedIds(service.origin)
    // One create a record: the feed holds exactly what the seed made.
    const records = set.authors + set.collections + set.books
    if (expected.length !== records)
      throw new Error(`the feed lists ${expected.length} changes; the seed made ${records} records`)
    return {
      backend,
      service,
      reference,
      expected,
      seededMs,
      stop,
      exited: () =>
        servers
          .filter((server) => server.process.exitCode !== null || server.process.signalCode !== null)
          .map(
            (server) =>
              `${server.name} exited (code ${server.process.exitCode}, signal ${server.process.signalCode}; last lines logged: ${lastLines(server)})`,
          ),
    }
  } catch (error) {
    await stop()
    throw error
  }
}
