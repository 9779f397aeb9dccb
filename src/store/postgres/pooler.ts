import { SQL } from 'bun'

/*
 * Whether a URL reaches the server through a pooler that hands server connections from client to
 * client between transactions (PgBouncer's pool_mode = transaction or statement), measured at
 * start. Named prepared statements (Bun's `P0`, `P1`...) then land on server connections that do
 * not hold them (`prepared statement "P0" does not exist`) or that hold another client's of the
 * same name (`already exists`), and LISTEN's notifications go to a server connection no client is
 * waiting on. Session pooling keeps one server connection per client and breaks neither.
 */

/**
 * The refusal to start with named prepared statements through such a pooler. One line: the start
 * prints it after `cannot open the database at <url>: `.
 */
export const PREPARED_STATEMENTS_REFUSAL =
  'it goes through a pooler in transaction mode (PgBouncer with pool_mode = transaction), which hands server connections from client to client, and the named prepared statements the service sends by default would fail there ("prepared statement "P0" already exists"): set DATABASE_PREPARED_STATEMENTS=false (or --database-prepared-statements false), or connect directly or through session pooling (docs/postgres.md, "Behind PgBouncer")'

/**
 * How long the probe's second client waits for an answer. In session mode, a pool with no server
 * connection free makes it wait as long as the first client stays connected: that is no sign of
 * sharing, and it must not hold the start.
 */
const SECOND_CLIENT_WAIT_MS = 2000

/**
 * Rounds of the probe after its first, each asking both clients again. Asked once, the probe missed
 * PgBouncer 1.18 in transaction mode kept busy by other clients (5 server connections, pgbench
 * `-c 8 -R 2000` of `SELECT pg_backend_pid()`) about one start in five (78 of 400): another client
 * took the server connection the first had just released before the second client asked. A round
 * then shows sharing (a client moved, or the second on the first's connection) in all but 1 to 11
 * probes in 100 (the last under pgbench unthrottled): 8 rounds leave less than one miss in 10^8
 * (none in 15,000 under three loads). A direct connection costs two round trips a round: the whole
 * probe took 5.3 ms instead of 4.0 on one machine, most of it the two connections' start.
 */
const ROUNDS = 8

/**
 * The server process that answers a statement, as `pid@postmaster start` (two servers behind one
 * address may have processes of the same number). A simple query: one message, one round trip,
 * no named statement, whatever the client's `prepare` (a prepared one may keep a client on one
 * server connection across statements, measured with PgBouncer 1.18, and so hide the sharing).
 */
async function backendOf(sql: SQL): Promise<string> {
  const [row] = await sql.unsafe('SELECT pg_backend_pid() AS pid, pg_postmaster_start_time()::text AS started').simple()
  return `${row?.pid}@${row?.started}`
}

/** The second client's backend, or null when it is refused or not answered in time (no sign of sharing). */
async function secondBackend(second: SQL): Promise<string | null> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const waited = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), SECOND_CLIENT_WAIT_MS)
  })
  return Promise.race([backendOf(second).catch(() => null), waited]).finally(() => clearTimeout(timer))
}

/**
 * Whether the pooler, if any, between `first` (a client of one connection) and the server at `url`
 * hands server connections from client to client between transactions. `first` and a second
 * client of `url` (opened with `options`, both staying connected) ask for their server process in
 * turn, ROUNDS times after the first. Directly or through session pooling, a client keeps its
 * server process and two clients never share one: every answer of the first is one process, every
 * answer of the second another. A pooler in transaction (or statement) mode shows itself at the
 * first round where a client is moved to another server connection between its statements (round
 * robin, or another client took its last one) or the second is given the one the first has just
 * released (PgBouncer's default, last released first out); the probe stops there. Measured with
 * PgBouncer 1.18 in transaction and statement mode with 1 to 5 server connections, round robin on
 * and off, idle and kept busy by other clients, and in session mode
 * (test/store/postgres-pooler.test.ts). A pooler that follows prepared statements itself
 * (PgBouncer 1.21 and later with max_prepared_statements) is not told apart: it shares connections too.
 */
export async function sharesServerConnections(
  first: SQL,
  url: string,
  options: SQL.PostgresOrMySQLOptions,
): Promise<boolean> {
  const own = await backendOf(first)
  // Twice in a row first: a pooler taking its server connections in turn (round robin) moves it at once,
  // where turns between the two clients could give each the same one every time.
  if ((await backendOf(first)) !== own) return true
  const second = new SQL(url, { ...options, max: 1 })
  try {
    const other = await secondBackend(second)
    if (other === null) return false
    if (other === own) return true
    for (let round = 0; round < ROUNDS; round++) {
      if ((await backendOf(first)) !== own) return true
      const again = await secondBackend(second)
      if (again === null) return false
      if (again !== other) return true
    }
    return false
  } finally {
    await second.close({ timeout: 0 }).catch(() => {})
  }
}

/** sharesServerConnections on new clients of `url`: for DATABASE_LISTEN_URL. */
async function listenUrlShared(url: string, connectTimeoutSeconds: number): Promise<boolean> {
  const options = { max: 1, prepare: false, connectionTimeout: connectTimeoutSeconds }
  const first = new SQL(url, options)
  try {
    return await sharesServerConnections(first, url, options)
  } finally {
    await first.close({ timeout: 0 }).catch(() => {})
  }
}

/** What streams do without LISTEN (ChangeHub's POLL_MS, src/service/change-hub.ts, a layer above). */
const WITHOUT_LISTEN = "change streams find other instances' changes by polling, every 100 ms, instead of at once"

/**
 * Why the change feed's LISTEN at `listenUrl` would not work, for a warning at start, or null:
 * through a pooler in transaction mode a notification goes to a server connection no client waits
 * on (PgBouncer drops it). `probed`: whether the start found that on the URL already, when it is DATABASE_URL.
 */
export async function listenUrlWarning(
  listenUrl: string,
  probed: boolean | null,
  connectTimeoutSeconds: number,
): Promise<string | null> {
  let shared: boolean
  try {
    shared = probed ?? (await listenUrlShared(listenUrl, connectTimeoutSeconds))
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
