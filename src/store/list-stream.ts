import type { ResourceDescription } from '../model/description'
import { type SearchOrder, sortValuesOf } from '../model/query'
import type { StoredRecord } from '../model/record'
import type { Store } from './store'

/**
 * Store.stream as both backends read it. `byKeyset` (the list's order is an index's): each batch
 * starts where the last one ended. Otherwise the ordered ids of the whole list are read once (ids
 * only) and the records fetched by id a batch at a time: a search is not matched again, or an order
 * sorted again, per batch.
 */
export async function* streamList(
  store: Pick<Store, 'list' | 'matchingIds' | 'findMany'>,
  resource: ResourceDescription,
  query: SearchOrder,
  size: number,
  byKeyset: boolean,
): AsyncGenerator<StoredRecord[]> {
  if (byKeyset) {
    let after: (string | number)[] | undefined
    for (;;) {
      const batch = await store.list(resource, { ...query, limit: size, after })
      if (batch.length > 0) yield batch
      const last = batch.at(-1)
      if (batch.length < size || !last) return
      after = sortValuesOf(query.sort, last)
    }
  }
  const ids = await store.matchingIds(resource, query)
  for (let start = 0; start < ids.length; start += size) {
    yield await store.findMany(resource, ids.slice(start, start + size))
  }
}
