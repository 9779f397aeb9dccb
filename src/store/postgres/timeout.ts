import type { SQL } from 'bun'

/**
 * Why the connections of the store's pool would not run with STATEMENT_TIMEOUT (`expectedMs`), or
 * null; asked on the start's connection, which sends its own value (0) the same way. The store
 * sends the timeout as a parameter of each connection, which PostgreSQL applies (its source is then
 * `client`). A pooler in transaction mode (PgBouncer) cannot pass such a parameter on to the server
 * connections its clients share: it refuses the connection, or ignores the parameter
 * (`ignore_startup_parameters`), and the server's own setting holds instead. That must then be
 * STATEMENT_TIMEOUT (docs/postgres.md, "Behind PgBouncer"), else requests would run with no
 * limit, or another.
 */
export async function statementTimeoutMismatch(starting: SQL, expectedMs: number): Promise<string | null> {
  const [row] = await starting`SELECT setting, source, quote_ident(current_user) AS role,
      quote_ident(current_database()) AS database
    FROM pg_settings WHERE name = 'statement_timeout'`
  if (row?.source === 'client') return null
  const actual = Number(row?.setting)
  if (actual === expectedMs) return null
  return `STATEMENT_TIMEOUT is ${expectedMs} ms, but the database's connections run with statement_timeout ${actual} ms: a pooler such as PgBouncer does not pass on the value the service sends at connection. Set it on the server, ALTER ROLE ${row?.role} IN DATABASE ${row?.database} SET statement_timeout = ${expectedMs}, then RECONNECT on PgBouncer's console (its server connections keep the value they started with); or give STATEMENT_TIMEOUT=${actual} (docs/postgres.md, "Behind PgBouncer")`
}
