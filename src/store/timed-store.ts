import type { Store } from './store'

/** The store calls that are timed: every one a request makes. */
export type StoreOperation = Exclude<
  keyof Store,
  'ready' | 'close' | 'openImport' | 'openSnapshot' | 'openRestore' | 'routing' | 'changes' | 'identity'
>

/** Told how long one store call took, in seconds, whether it succeeded or failed. */
export type StoreTimer = (operation: StoreOperation, seconds: number) => void

/**
 * Every store call that is timed, each once: a record, so that a call added to the Store does not
 * compile until it is listed here (the metrics label their database time by these names).
 */
const timedCalls: Record<StoreOperation, true> = {
  list: true,
  page: true,
  countUpTo: true,
  matchingIds: true,
  stream: true,
  find: true,
  findMany: true,
  members: true,
  findWithRelated: true,
  missingReferences: true,
  create: true,
  update: true,
  delete: true,
  atomic: true,
  changeToMany: true,
  // Every list reads it first.
  version: true,
}
export const storeOperations = Object.keys(timedCalls) as StoreOperation[]

/** The calls that answer a promise; `stream`, which answers batches, is timed per batch. */
type Promised = Exclude<StoreOperation, 'stream'>
const promised = storeOperations.filter((operation): operation is Promised => operation !== 'stream')

/**
 * A store that times every call of another, for the database-time metric: the wall time from the
 * call to its answer, so a write includes its wait for the group commit and a stream one
 * observation per batch. A pair of performance.now() per call; nothing else changes. The calls a
 * request does not make (the commands' import, export and restore, the probes) go straight through.
 */
export function timedStore(store: Store, observe: StoreTimer): Store {
  /** `call` is started here, after the clock: a SQLite read runs whole within the call itself. */
  const timed = <T>(operation: StoreOperation, call: () => Promise<T>): Promise<T> => {
    const start = performance.now()
    return call().finally(() => observe(operation, (performance.now() - start) / 1000))
  }
  const calls: Partial<Record<StoreOperation, unknown>> = {}
  for (const operation of promised) {
    // One shape for every call: the arguments passed on as they came, the answer as it goes.
    const method = store[operation] as (...args: unknown[]) => Promise<unknown>
    calls[operation] = (...args: unknown[]) => timed(operation, () => method.apply(store, args))
  }
  return {
    routing: store.routing,
    identity: store.identity,
    // The feed's reads are its own (a poll every 100 ms while streams are open): not a request's time.
    changes: store.changes,
    ...(calls as Pick<Store, Promised>),
    stream: (resource, query, size) => timedBatches(store.stream(resource, query, size), timed),
    openImport: (options) => store.openImport(options),
    openSnapshot: () => store.openSnapshot(),
    openRestore: () => store.openRestore(),
    ready: () => store.ready(),
    close: () => store.close(),
  }
}

/** Times each batch as it is read; a consumer that stops early closes the inner stream. */
async function* timedBatches<T>(
  stream: AsyncIterable<T>,
  timed: <R>(operation: StoreOperation, call: () => Promise<R>) => Promise<R>,
): AsyncGenerator<T> {
  const batches = stream[Symbol.asyncIterator]()
  let finished = false
  try {
    for (;;) {
      const next = await timed('stream', () => batches.next())
      if (next.done) {
        finished = true
        return
      }
      yield next.value
    }
  } finally {
    if (!finished) await batches.return?.()
  }
}
