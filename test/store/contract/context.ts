import type { ListQuery } from '../../../src/model/query'
import type { Id, StoredRecord } from '../../../src/model/record'
import type { WriteResult } from '../../../src/model/writes'
import { resources } from '../../../src/resources/registry'
import type { Store } from '../../../src/store/store'

/** A fresh, empty store of one backend, and how to remove it after the test. */
export type OpenStore = () => Promise<{ store: Store; cleanup: () => Promise<void> }>

/**
 * Where the backends' promises differ on purpose. Every backend hands out ids that are unique,
 * increasing in the order handed out and never handed out again; SQLite's also have no gaps (a
 * write rolled back gives its ids back: AUTOINCREMENT), PostgreSQL's may (an identity sequence is
 * outside transactions, so that creates need not wait for each other's commit).
 */
export interface BackendPromises {
  readonly gaplessIds: boolean
}

/** What every case of the contract works with: the store of the running test, and what its backend promises. */
export interface ContractContext {
  store(): Store
  readonly promises: BackendPromises
}

export const authors = resources.get('authors')
export const collections = resources.get('book_collections')
export const books = resources.get('books')

export const byId = [{ field: 'id', descending: false }] as const

export function created(result: WriteResult | null | 'stale'): StoredRecord {
  if (result === null || result === 'stale' || !result.ok) {
    throw new Error(`expected a successful write, got ${JSON.stringify(result)}`)
  }
  return result.record
}

export function authorIs(...ids: Id[]) {
  return { kind: 'relationship', relationship: 'author', ids, orNone: false } as const
}

/** Helpers bound to the running test's store. */
export function fixtures(t: ContractContext) {
  return {
    author: async (name: string) => created(await t.store().create(authors, { attributes: { name }, toOne: {} })),
    collection: async (name: string) =>
      created(await t.store().create(collections, { attributes: { name }, toOne: {} })),
    book: async (name: string, authorId: Id, collectionId?: Id) => {
      const toOne: Record<string, Id> = { author: authorId }
      if (collectionId !== undefined) toOne.book_collection = collectionId
      return created(await t.store().create(books, { attributes: { name }, toOne }))
    },
    /** A list read at once, no includes: id order and a limit of 100 unless the query says otherwise. */
    listed: (resource: typeof authors, query: Partial<ListQuery> = {}) =>
      t.store().list(resource, { filters: [], sort: byId, limit: 100, ...query }),
  }
}
