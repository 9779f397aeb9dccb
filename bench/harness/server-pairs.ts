/**
 * The service started beside the servers it is compared with: the raw reference alone (a pair),
 * or the raw reference and the other baselines of issue 10's comparison, each on its own copy of
 * the same SQLite file.
 */
import type { Durability } from '../../src/store/sqlite/open-database'
import { EXPRESS_COMMAND, ensureBetterSqlite } from '../references/express-on-node'
import type { ReferenceCommits, ReferenceLists } from '../references/sqlite-handlers'
import type { BaselineName } from './scenario'
import { type RunningServer, startServer, stopServer, UNCAPPED_LONG_ANSWERS, waitUntilReady } from './servers'

/** The baselines beyond the raw reference that a scenario can be measured beside, by name. */
export type Baselines = Partial<Record<BaselineName, RunningServer>>

/** The service on a SQLite file, logging each request as operators run it, at one DURABILITY. */
function startService(database: string, durability: Durability, placement: readonly string[]): RunningServer {
  return startServer(
    'service',
    'src/cli.ts',
    {
      HOST: '127.0.0.1',
      DATABASE_URL: `sqlite://${database}`,
      LOG_LEVEL: 'info',
      DURABILITY: durability,
      ...UNCAPPED_LONG_ANSWERS,
    },
    placement,
  )
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
  const service = startService(paths.service, durability, placement)
  track(service)
  const reference = startServer(
    'reference',
    'bench/references/raw.ts',
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
  whole: { label: 'raw-whole', script: 'bench/references/raw.ts', commits: 'alone' },
  grouped: { label: 'raw-grouped', script: 'bench/references/raw.ts', commits: 'grouped' },
  elysia: { label: 'elysia', script: 'bench/references/elysia.ts', commits: 'alone' },
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
  const service = startService(files.service, durability, placement)
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
      { REFERENCE_DB: database, REFERENCE_DURABILITY: durability, REFERENCE_LISTS: lists, REFERENCE_COMMITS: commits },
      placement,
    )
    track(server)
    return server
  }
  const reference = started('raw', 'bench/references/raw.ts', files.reference, 'streamed', 'alone')
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
