import type { FetchLimits } from '../jsonapi/query'
import type { ResourceRegistry } from '../resources/registry'
import type { Store } from '../store/store'
import type { OffloadedRead } from './read-threads/read-calls'
import type { ReadPool } from './read-threads/read-pool'
import { ResourceController } from './resource-controller'

/*
 * What the first search after a start would find cold, done before the service listens. On
 * SQLite a search runs on a read thread, and the threads started with the first read that needed
 * one: that search waited for a thread to load its modules and open its store (on the 2-core
 * machine, 150-250 ms from the source, 50-110 ms in the executable), then prepared its statements.
 * On PostgreSQL the first search on a connection loads the unaccent rules and plans the statements.
 * Measured by `bun run bench -- first-search` (bench/parts/first-search.ts).
 */

/** A word no catalogue holds: each search's statements run and match nothing, however large the data. */
const NO_SUCH_WORD = 'qzxjvwarm'

/** A search of each searchable type, as a client's first would be read: one page of one record. */
export function warmUpSearches(registry: ResourceRegistry, prefix: string): OffloadedRead[] {
  return registry.all.flatMap((resource) => {
    const search = Object.entries(resource.filters).find(([, filter]) => filter.kind === 'search')
    if (!search) return []
    const url = `http://localhost${prefix}/${resource.type}?filter[${search[0]}]=${NO_SUCH_WORD}&page[size]=1`
    return [{ op: 'list', type: resource.type, url, scope: [], cursorProfile: null } satisfies OffloadedRead]
  })
}

/**
 * Runs those searches where a client's would run: on the first read thread where there are some
 * (starting it; a read goes to the thread with the fewest in progress, the first of equals), and
 * on the others once the service listens, without waiting for them: each thread costs some 40 ms
 * of CPU in the executable, 60 from the source (half of it TypeBox, which the controllers' write
 * documents load). Without read threads, on the main thread over
 * `store` (the store itself: they are no client's calls, not counted in the metrics). Their
 * answers are read and dropped.
 */
export async function warmUp(
  registry: ResourceRegistry,
  store: Store,
  prefix: string,
  limits: FetchLimits,
  reads: ReadPool | null,
): Promise<void> {
  const searches = warmUpSearches(registry, prefix)
  if (reads) {
    await reads.warm(searches, 1)
    // The others need not hold up the start: one answers the first search. Begun a turn later, once
    // the service listens (it does in the turn this settles); a failure shows in their first read.
    setTimeout(() => reads.warm(searches).catch(() => {}), 0)
    return
  }
  for (const search of searches) {
    const controller = new ResourceController(registry.get(search.type), registry, store, prefix, limits)
    const { body } = await controller.list({ url: search.url })
    if (body instanceof ReadableStream) for await (const _ of body);
  }
}
