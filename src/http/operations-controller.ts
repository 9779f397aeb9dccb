import type { AtomicLimits } from '../jsonapi/atomic-document'
import { unlinkedResource } from '../jsonapi/document'
import { httpError } from '../jsonapi/errors'
import { ATOMIC_CONTENT_TYPE, ATOMIC_EXT, checkAcceptsExtension, namesExtension } from '../jsonapi/media-type'
import { rejectQueryParameters } from '../jsonapi/query'
import type { AtomicOperation } from '../model/writes'
import type { ResourceRegistry } from '../resources/registry'
import { readAtomicRequest } from '../service/atomic-request'
import { WriteService } from '../service/write-service'
import type { Store } from '../store/store'
import { atomicCondition } from './atomic-preconditions'
import { documentOf } from './parsed-body'
import { type ApiResponse, jsonApiResponse } from './responses'

/**
 * POST /api/v1/operations: the JSON:API Atomic Operations extension. Every operation runs in
 * order in one transaction; the first that fails stops the batch and nothing of it is stored.
 */
export class OperationsController {
  private readonly writes: WriteService

  constructor(
    private readonly registry: ResourceRegistry,
    store: Store,
    private readonly limits: AtomicLimits,
    /** REQUIRE_IF_MATCH: a request that changes stored records needs If-Match (atomic-preconditions.ts). */
    private readonly requireIfMatch = false,
  ) {
    this.writes = new WriteService(registry, store)
  }

  async run(url: string, headers: Headers, body: unknown): Promise<ApiResponse> {
    rejectQueryParameters(url)
    if (!namesExtension(headers.get('content-type'), ATOMIC_EXT)) {
      throw httpError(415, `Atomic operations are sent as application/vnd.api+json; ext="${ATOMIC_EXT}"`, {
        header: 'Content-Type',
      })
    }
    const refused = checkAcceptsExtension(headers.get('accept'), ATOMIC_EXT)
    if (refused) throw refused
    const operations = readAtomicRequest(this.registry, documentOf(body), this.limits)
    const condition = atomicCondition(this.registry, operations, headers, this.requireIfMatch)
    const results = (await this.writes.atomic(operations, condition)).map((result, i) => {
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
