import { SQL } from 'bun'
import { type StoreFaultReason, StoreUnavailableError } from '../faults'

/**
 * The fault behind a SQLSTATE (https://www.postgresql.org/docs/current/errcodes-appendix.html),
 * or null for one that means our own SQL is wrong (a bug: 500) or that the store maps to a normal
 * result itself (23503 foreign key, 23505 unique, 23502 not null: see PostgresStore).
 */
function reasonOfState(state: string): StoreFaultReason | null {
  // 53100 disk_full; other 53xxx: out of memory, connections, configuration limits.
  if (state === '53100') return 'full'
  if (state.startsWith('53')) return 'unavailable'
  // 08xxx: connection exceptions; 57P01-57P05: the server shutting down, starting, or the database dropped.
  if (state.startsWith('08') || /^57P0[1-5]$/.test(state)) return 'unavailable'
  // Serialization failure, deadlock, lock not available, statement timeout or cancel: try again soon.
  if (state === '40001' || state === '40P01' || state === '55P03' || state === '57014') return 'busy'
  // read_only_sql_transaction: a standby, or default_transaction_read_only.
  if (state === '25006') return 'read-only'
  if (state.startsWith('58')) return 'io'
  // undefined_table, invalid_schema_name: the start checked the schema, so the database changed
  // under the service (dropped and created again for a restore, say), not our SQL.
  if (state === '42P01' || state === '3F000') return 'unavailable'
  if (state === 'XX001' || state === 'XX002') return 'corrupt'
  return null
}

/**
 * Bun's own codes for a connection that failed or went away (the server unreachable, restarted,
 * a timeout): the database is unavailable, not our SQL wrong.
 */
function reasonOfClientCode(code: string): StoreFaultReason | null {
  if (code === 'ERR_POSTGRES_CONNECTION_TIMEOUT' || code === 'ERR_POSTGRES_IDLE_TIMEOUT') return 'unavailable'
  if (code === 'ERR_POSTGRES_LIFETIME_TIMEOUT' || code === 'ERR_POSTGRES_QUERY_CANCELLED') return 'busy'
  if (code.startsWith('ERR_POSTGRES_CONNECTION') || code.startsWith('ERR_POSTGRES_TLS')) return 'unavailable'
  if (code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'ETIMEDOUT' || code === 'EPIPE') return 'unavailable'
  return null
}

/**
 * A FATAL or PANIC error ends the server's session: whatever its SQLSTATE (a database that refuses
 * connections, 55000; one that no longer exists, 3D000; a password changed, 28P01), the connection
 * is gone and no statement of ours was wrong. Refused at connecting, it is the database unreachable.
 */
function endsSession(error: Error): boolean {
  const severity = (error as { severity?: unknown }).severity
  return severity === 'FATAL' || severity === 'PANIC'
}

/** The SQLSTATE of a server error, else undefined. */
export function sqlState(error: unknown): string | undefined {
  if (!(error instanceof SQL.PostgresError)) return undefined
  return typeof error.errno === 'string' ? error.errno : undefined
}

/** SQLSTATEs of a named prepared statement missing on the server connection (26000), or its name taken there (42P05). */
const PREPARED_STATEMENT_STATES: ReadonlySet<string> = new Set(['26000', '42P05'])

/** `error` as a StoreUnavailableError when it is a fault of the database or the connection, else null. */
export function postgresFault(error: unknown): StoreUnavailableError | null {
  if (error instanceof StoreUnavailableError) return error
  if (!(error instanceof Error)) return null
  const state = sqlState(error)
  // The store names no statement itself: these are Bun's, mixed up by a pooler in transaction mode
  // (postgres/pooler.ts). Not our SQL wrong but the setup: the start refuses such a pooler, but one
  // switched to transaction mode under a running service gets here. The fault's log line says what to set.
  if (state !== undefined && PREPARED_STATEMENT_STATES.has(state)) {
    return new StoreUnavailableError(
      'unavailable',
      state,
      `${error.message}: a pooler in transaction mode (PgBouncer) hands server connections from client to client, and named prepared statements fail there; set DATABASE_PREPARED_STATEMENTS=false (docs/postgres.md, "Behind PgBouncer")`,
      { cause: error },
    )
  }
  const code = (error as { code?: unknown }).code
  const reason = state
    ? (reasonOfState(state) ?? (endsSession(error) ? 'unavailable' : null))
    : typeof code === 'string'
      ? reasonOfClientCode(code)
      : null
  if (!reason) return null
  return new StoreUnavailableError(reason, state ?? String(code), error.message, { cause: error })
}

/** What a store operation that failed with `error` throws: the fault, or the error itself. */
export function storeError(error: unknown): unknown {
  return postgresFault(error) ?? error
}
