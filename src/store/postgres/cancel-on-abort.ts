import type { SQL } from 'bun'

/**
 * `q` whose statements are cancelled when `signal` aborts (a search whose client went away): Bun
 * asks the server to stop the one running, on a connection of its own, and the next never starts.
 * The statement then fails (57014), and with it the search's transaction. Every read of the
 * PostgreSQL store goes through `unsafe` (PostgresReader.rows), the one method changed here.
 */
export function cancelledOnAbort(q: SQL, signal: AbortSignal): SQL {
  return new Proxy(q, {
    get(target, key) {
      if (key !== 'unsafe') {
        const value: unknown = Reflect.get(target, key, target)
        return typeof value === 'function' ? value.bind(target) : value
      }
      return (text: string, values?: unknown[]) => {
        const query = target.unsafe(text, values)
        if (signal.aborted) return query.cancel()
        const stop = () => query.cancel()
        signal.addEventListener('abort', stop, { once: true })
        // Starts the query, as the caller's await would at once; its failure is the caller's to see.
        query.finally(() => signal.removeEventListener('abort', stop)).catch(() => {})
        return query
      }
    },
  })
}
