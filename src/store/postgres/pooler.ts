import { SQL } from 'bun'
import { isPreparedStatementMixUp } from './faults'

/*
 * Whether a URL reaches the server through a pooler that hands server connections from client to
 * client between transactions (PgBouncer's pool_mode = transaction or statement), measured at
 * start. Named prepared statements (Bun's `P0`, `P1`...) then land on server connections that do
 * not hold them (`prepared statement "P0" does not exist`) or that hold another client's of the
 * same name (`already exists`), and LISTEN's notifications go to a server connection no client is
 * waiting on. Session pooling keeps one server connection per client and breaks neither.
 */

/** What the probe found. */
export interface PoolerProbe {
  /** Consecutive statements of one client ran on different server connections, or two clients' on one. */
  readonly sharesConnections: boolean
  /** A statement prepared on one client's connection was missing, or its name taken, on the next statement. */
  readonly losesPreparedStatements: boolean
}

/**
 * How long the probe's second client waits for its answer. In session mode, a pool with no server
 * connection free makes it wait as long as the first client stays connected: it is no sign of
 * sharing, and it must not hold the start.
 */
const SECOND_CLIENT_WAIT_MS = 2000

/**
 * The refusal to start with named prepared statements through a pooler that loses them. One line:
 * the start prints it after `cannot open the database at <url>: `.
 */
export const PREPARED_STATEMENTS_REFUSAL =
  'it goes through a pooler in transaction mode (PgBouncer with pool_mode = transaction), which hands server connections from client to client, and the named prepared statements the service sends by default would fail there ("prepared statement "P0" already exists"): set DATABASE_PREPARED_STATEMENTS=false (or --database-prepared-statements false), or connect directly or through session pooling (docs/postgres.md, "Behind PgBouncer")'

/** The server process that answers a statement, or 'lost' when a prepared statement was missing or its name taken. */
async function backendOf(sql: SQL): Promise<number | 'lost'> {
  try {
    // A tagged query: prepared under a name when the client prepares, so the probe meets what the store's queries would.
    const [row] = await sql`SELECT pg_backend_pid() AS pid`
    return Number(row?.pid)
  } catch (error) {
    if (isPreparedStatementMixUp(error)) return 'lost'
    throw error
  }
}

/**
 * Probes the pooler, if any, between `first` (a client of one connection, which has run nothing
 * yet: its first prepared statement is `P0`, as a second client's is) and the server at `url`:
 * two statements on `first`, then one on a second client of `url` opened with `options` while the
 * first stays connected and idle. Directly or through session pooling, a client keeps its server
 * process and two clients never share one: the three show one process, then another. A pooler in
 * transaction mode either moves `first` to another server connection between its statements (round
 * robin), or gives the second client the one `first` has just released (PgBouncer's default, last
 * released first out). Measured with PgBouncer 1.18 in transaction and statement mode with 1 to 5
 * server connections, round robin on and off, and in session mode (test/store/postgres-pooler.test.ts).
 */
export async function probePooler(first: SQL, url: string, options: SQL.PostgresOrMySQLOptions): Promise<PoolerProbe> {
  const seen = [await backendOf(first), await backendOf(first)]
  const second = new SQL(url, { ...options, max: 1 })
  try {
    let timer: ReturnType<typeof setTimeout> | undefined
    const waited = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), SECOND_CLIENT_WAIT_MS)
    })
    // Not answered in time (a full pool in session mode), or refused (no connection left): no sign of sharing.
    const other = await Promise.race([backendOf(second).catch(() => null), waited]).finally(() => clearTimeout(timer))
    if (other !== null) seen.push(other)
  } finally {
    await second.close({ timeout: 0 }).catch(() => {})
  }
  const losesPreparedStatements = seen.includes('lost')
  const [a, b, c] = seen
  const sharesConnections = losesPreparedStatements || a !== b || (c !== undefined && c === a)
  return { sharesConnections, losesPreparedStatements }
}

/** probePooler on new clients of `url` without prepared statements: for DATABASE_LISTEN_URL. */
export async function sharesServerConnections(url: string, connectTimeoutSeconds: number): Promise<boolean> {
  const options = { max: 1, prepare: false, connectionTimeout: connectTimeoutSeconds }
  const first = new SQL(url, options)
  try {
    return (await probePooler(first, url, options)).sharesConnections
  } finally {
    await first.close({ timeout: 0 }).catch(() => {})
  }
}

/** What streams do without LISTEN (ChangeHub's POLL_MS, src/service/change-hub.ts, a layer above). */
const WITHOUT_LISTEN = "change streams find other instances' changes by polling, every 100 ms, instead of at once"

/**
 * Why the change feed's LISTEN at `listenUrl` would not work, for a warning at start, or null:
 * through a pooler in transaction mode a notification goes to a server connection no client waits
 * on (PgBouncer drops it). `probed`: what the start found on that URL already, when it is DATABASE_URL.
 */
export async function listenUrlWarning(
  listenUrl: string,
  probed: PoolerProbe | null,
  connectTimeoutSeconds: number,
): Promise<string | null> {
  let shared: boolean
  try {
    shared = probed?.sharesConnections ?? (await sharesServerConnections(listenUrl, connectTimeoutSeconds))
  } catch (error) {
    return `cannot connect to DATABASE_LISTEN_URL (${(error as Error).message}): ${WITHOUT_LISTEN}`
  }
  if (!shared) return null
  return `the change feed's LISTEN connection (DATABASE_LISTEN_URL, by default DATABASE_URL) goes through a pooler in transaction mode, which does not deliver notifications: ${WITHOUT_LISTEN}; set DATABASE_LISTEN_URL to a direct connection to the server (docs/postgres.md, "Behind PgBouncer")`
}

/** The warning when LISTEN itself failed. */
export function listenFailureWarning(error: unknown): string {
  return `LISTEN failed (${error instanceof Error ? error.message : String(error)}): ${WITHOUT_LISTEN}`
}
