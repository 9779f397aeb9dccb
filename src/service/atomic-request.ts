/**
 * An Atomic Operations request read into the store's operations, with the write rules applied to
 * each as it is read: src/jsonapi/atomic-document.ts reads the document, this module decides what
 * the rules allow. A client meets the failures in document order: the first operation that fails
 * is the one reported, and within it the rules come where they always have (before the members of
 * a to-many change are read, say), with pointers under `/atomic:operations/N`.
 */
import {
  type AtomicLimits,
  atOperation,
  atomicOperations,
  completeOperation,
  draftOperation,
  type OperationDraft,
} from '../jsonapi/atomic-document'
import type { JsonApiError } from '../jsonapi/errors'
import type { AtomicOperation } from '../model/writes'
import type { ResourceRegistry } from '../resources/registry'
import { invalidWrite, refuseOrphaning, requiredToOne } from './write-rules'

/** What the write rules refuse of an operation as read so far, before the store is asked. */
function refusal(registry: ResourceRegistry, draft: OperationDraft): JsonApiError | undefined {
  switch (draft.kind) {
    case 'create':
    case 'update': {
      const { write, byLid } = draft.data
      // A lid names a record this batch creates: whether it exists is known only when the batch runs.
      const missing = [...write.missing].filter((name) => !(name in byLid))
      return invalidWrite(draft.resource, missing, write.errors)
    }
    case 'to-one':
      return requiredToOne(draft.resource, draft.relationship, draft.value)
    case 'to-many':
      return refuseOrphaning(registry, draft.resource, draft.relationship, draft.change, '/op')
    case 'delete':
      return undefined
  }
}

/** The operations of an atomic request, in order, each read and allowed by the rules. */
export function readAtomicRequest(registry: ResourceRegistry, body: unknown, limits: AtomicLimits): AtomicOperation[] {
  const lids = new Set<string>()
  return atomicOperations(body, limits).map((operation, index) =>
    atOperation(index, () => {
      const draft = draftOperation(registry, operation)
      const refused = refusal(registry, draft)
      if (refused) throw refused
      return completeOperation(registry, draft, limits, lids)
    }),
  )
}
