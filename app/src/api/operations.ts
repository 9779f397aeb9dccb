import { api } from './client'
import type { operations } from './openapi'

/*
 * Writes to many records at once, as one request: POST /api/v1/operations, the JSON:API Atomic
 * Operations extension (docs/api.md, "Atomic operations"). The service runs the operations in one
 * transaction: all are stored or none, and a refusal (ApiError) names the operation that failed.
 */

/** The extension, named in both Content-Type and Accept (415 and 406 without it). */
export const ATOMIC_EXT = 'https://jsonapi.org/ext/atomic'

type AtomicDocument =
  operations['atomic_operations']['requestBody']['content']['application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"']
export type AtomicOperation = AtomicDocument['atomic:operations'][number]

/** Runs `list` in one request; throws the API's refusal. */
export async function runAtomic(list: readonly AtomicOperation[]): Promise<void> {
  const body: AtomicDocument = { 'atomic:operations': [...list] }
  await api('POST', '/operations', { body, ext: ATOMIC_EXT })
}

/** Moves books to a collection, or out of any (`null`): each book's `book_collection` set. */
export function moveBooks(ids: readonly string[], collection: string | null): Promise<void> {
  return runAtomic(
    ids.map(
      (id): AtomicOperation => ({
        op: 'update',
        ref: { type: 'books', id, relationship: 'book_collection' },
        data: collection === null ? null : { type: 'book_collections', id: collection },
      }),
    ),
  )
}

/** Deletes books. */
export function deleteBooks(ids: readonly string[]): Promise<void> {
  return runAtomic(ids.map((id): AtomicOperation => ({ op: 'remove', ref: { type: 'books', id } })))
}
