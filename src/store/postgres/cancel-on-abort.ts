import type { SQL } from 'bun'

/**
 * Cancels the statement running in transaction `tx` when `signal` aborts (a search whose client
 * went away), by pg_cancel_backend from another connection of `pool`: the statement fails (57014)
 * and with it the transaction, so the search ends there. The transaction is known by its backend
 * and its start, read first (one round trip): a cancel that arrives once it has ended, the
 * connection running another request's statement by then, finds no such transaction and stops
 * nothing. Returns what stops watching, to call once the work is done. (Bun's own Query.cancel()
 * reported the failure of the cancelled statement a second time, as an unhandled error.)
 */
export async function cancelOnAbort(tx: SQL, pool: SQL, signal: AbortSignal): Promise<() => void> {
  const [own] = await tx`SELECT pg_backend_pid() AS pid, now()::text AS started`
  const cancel = () => {
    pool`SELECT pg_cancel_backend(pid) FROM pg_stat_activity
      WHERE pid = ${own?.pid} AND xact_start = ${own?.started}::timestamptz`.then(
      () => {},
      // Nothing to stop, or the database gone: the search fails or ends on its own.
      () => {},
    )
  }
  if (signal.aborted) cancel()
  else signal.addEventListener('abort', cancel, { once: true })
  return () => signal.removeEventListener('abort', cancel)
}
