import { type AtomicLimits, parseAtomicDocument } from '../jsonapi/atomic-document'
import { unlinkedResource } from '../jsonapi/document'
import { httpError, type JsonApiError } from '../jsonapi/errors'
import { ATOMIC_CONTENT_TYPE, ATOMIC_EXT, checkAcceptsExtension, namesExtension } from '../jsonapi/media-type'
import { withArticle, words } from '../jsonapi/messages'
import { rejectQueryParameters } from '../jsonapi/query'
import type { AtomicFailure, AtomicOperation } from '../model/writes'
import type { ResourceRegistry } from '../resources/registry'
import { referencesMissing, stillReferenced } from '../service/write-rules'
import type { Store } from '../store/store'
import { documentOf } from './body-parser'
import { atomicIfMatchRequired } from './conditional'
import { type ApiResponse, jsonApiResponse } from './responses'

/** The error of the operation at `index` that the store could not carry out; nothing was stored. */
function failed(operation: AtomicOperation, index: number, failure: AtomicFailure): JsonApiError {
  const at = `/atomic:operations/${index}`
  switch (failure.kind) {
    case 'not-found':
      return httpError(
        404,
        `Operation ${index} names ${withArticle(words(operation.resource.singular))} that does not exist`,
        {
          pointer: at,
        },
      )
    case 'unknown-lid':
      return httpError(400, `lid "${failure.lid}" names no record created earlier in this request`, { pointer: at })
    case 'missing-members':
      return httpError(404, `Operation ${index} names records that do not exist: ${failure.ids.join(', ')}`, {
        pointer: `${at}/data`,
      })
    case 'restricted':
      return stillReferenced(operation.resource, failure.id, failure, at)
    case 'missing':
      return referencesMissing(operation.resource, failure.relationships, at)
  }
}

/**
 * POST /api/v1/operations: the JSON:API Atomic Operations extension. Every operation runs in
 * order in one transaction; the first that fails stops the batch and nothing of it is stored.
 */
export class OperationsController {
  constructor(
    private readonly registry: ResourceRegistry,
    private readonly store: Store,
    private readonly limits: AtomicLimits,
    /** REQUIRE_IF_MATCH: operations that change stored records are refused with 428 (atomicIfMatchRequired). */
    private readonly requireIfMatch = false,
  ) {}

  async run(url: string, headers: Headers, body: unknown): Promise<ApiResponse> {
    rejectQueryParameters(url)
    if (!namesExtension(headers.get('content-type'), ATOMIC_EXT)) {
      throw httpError(415, `Atomic operations are sent as application/vnd.api+json; ext="${ATOMIC_EXT}"`, {
        header: 'Content-Type',
      })
    }
    const refused = checkAcceptsExtension(headers.get('accept'), ATOMIC_EXT)
    if (refused) throw refused
    const operations = parseAtomicDocument(this.registry, documentOf(body), this.limits)
    const unguarded = this.requireIfMatch ? atomicIfMatchRequired(operations, headers) : undefined
    if (unguarded) throw unguarded
    const outcome = await this.store.atomic(operations)
    if (!outcome.ok) {
      throw failed(operations[outcome.index] as AtomicOperation, outcome.index, outcome.failure)
    }
    const results = outcome.results.map((result, i) => {
      const operation = operations[i] as AtomicOperation
      // Records added or updated answer with their data; relationship operations and removals with {}.
      const relationship = operation.kind === 'update' && operation.relationship !== undefined
      return result.kind === 'record' && !relationship
        ? { data: unlinkedResource(operation.resource, result.record) }
        : {}
    })
    return jsonApiResponse(200, { 'atomic:results': results }, { 'content-type': ATOMIC_CONTENT_TYPE })
  }
}
