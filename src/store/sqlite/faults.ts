import { SQLiteError } from 'bun:sqlite'
import { type StoreFaultReason, StoreUnavailableError } from '../faults'

/**
 * The fault behind an SQLite result code (extended codes included, as bun:sqlite reports them),
 * or null for a code that means our own SQL or our own use of the connection is wrong: those stay
 * bugs (500). SQLITE_LOCKED is one of them: without a shared cache it only arises from a conflict
 * within our one connection. SQLITE_CORRUPT is not transient, but it is the file's state, not a bug
 * in the request: 503 tells clients the service cannot answer for now, and the log line tells the
 * operator to restore the file.
 */
function reasonOf(code: string): StoreFaultReason | null {
  if (code === 'SQLITE_FULL') return 'full'
  // The file was deleted or replaced under the open connection (a rollback journal's check).
  if (code === 'SQLITE_READONLY_DBMOVED') return 'replaced'
  if (code.startsWith('SQLITE_READONLY') || code === 'SQLITE_PERM') return 'read-only'
  // SQLITE_PROTOCOL: a race on the WAL's locks that SQLite gave up retrying.
  if (code.startsWith('SQLITE_BUSY') || code === 'SQLITE_PROTOCOL') return 'busy'
  if (code === 'SQLITE_IOERR_NOMEM') return 'unavailable'
  if (code.startsWith('SQLITE_IOERR') || code === 'SQLITE_NOLFS') return 'io'
  if (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB') return 'corrupt'
  if (code.startsWith('SQLITE_CANTOPEN') || code === 'SQLITE_NOMEM') return 'unavailable'
  return null
}

/** `error` as a StoreUnavailableError when it is a fault of the database, else null. */
export function sqliteFault(error: unknown): StoreUnavailableError | null {
  if (error instanceof StoreUnavailableError) return error
  if (!(error instanceof SQLiteError) || typeof error.code !== 'string') return null
  const reason = reasonOf(error.code)
  return reason && new StoreUnavailableError(reason, error.code, error.message, { cause: error })
}

/** What a store operation that failed with `error` throws: the fault, or the error itself. */
export function storeError(error: unknown): unknown {
  return sqliteFault(error) ?? error
}
