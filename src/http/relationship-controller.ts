import { httpError, recordNotFound } from '../jsonapi/errors'
import { requireId } from '../jsonapi/ids'
import { humanize, words } from '../jsonapi/messages'
import { rejectQueryParameters } from '../jsonapi/query'
import { parseToManyDocument, parseToOneDocument } from '../jsonapi/relationship-document'
import type { RelationshipDescription, ResourceDescription } from '../model/description'
import type { Linkage } from '../model/query'
import type { Id, StoredRecord } from '../model/record'
import type { ToManyChange } from '../model/writes'
import type { ResourceRegistry } from '../resources/registry'
import { refuseOrphaning, requiredToOne } from '../service/write-rules'
import type { Store } from '../store/store'
import { documentOf } from './body-parser'
import { joiningNotCovered, preconditionFailed, recordName } from './conditional'
import { linkageState, recordState } from './etag'
import type { HandlerInput, ResourceController } from './resource-controller'
import { type ApiResponse, jsonApiResponse, stateResponse } from './responses'

const noPlan = new Map()

/** What a missing related record is, as JSON:API has it: 404 with the ids named. */
function relatedNotFound(target: ResourceDescription, ids: readonly (string | number)[]): Error {
  const detail =
    ids.length === 1
      ? `There is no ${words(target.singular)} ${ids[0]}`
      : `There are no ${words(target.type)} ${ids.join(', ')}`
  return httpError(404, detail, { pointer: '/data' })
}

/**
 * The related-resource and relationship endpoints of one relationship of one type:
 * `/books/1/author`, `/books/1/relationships/author`, and writes to the latter.
 */
export class RelationshipController {
  private readonly relationship: RelationshipDescription
  private readonly target: ResourceDescription

  constructor(
    private readonly resource: ResourceDescription,
    private readonly name: string,
    private readonly registry: ResourceRegistry,
    private readonly store: Store,
    /** The controller of each type: related resources answer as their own endpoints do. */
    private readonly controllers: (type: string) => ResourceController,
    private readonly basePath: string,
    /** The most identifiers one to-many write may name. */
    private readonly maxIds: number,
  ) {
    const relationship = resource.relationships[name]
    if (!relationship) throw new Error(`${resource.type} has no relationship ${name}`)
    this.relationship = relationship
    this.target = registry.get(relationship.target)
  }

  /** GET /{type}/{id}/{relationship}: the related record(s), with the target type's fetching parameters. */
  async related(input: HandlerInput): Promise<ApiResponse> {
    const { url, id, acceptEncoding } = input
    const { resource, relationship, target, store } = this
    const recordId = requireId(id)
    const record = await store.find(resource, recordId)
    if (!record) throw recordNotFound()
    const targets = this.controllers(target.type)
    if (relationship.kind === 'to-many') {
      return targets.list(input, [
        { kind: 'relationship', relationship: relationship.inverse, ids: [recordId], orNone: false },
      ])
    }
    const targetId = record.toOne[this.name]
    if (targetId != null) return targets.show({ url, id: String(targetId), acceptEncoding })
    targets.checkRecordQuery(url)
    return jsonApiResponse(200, { data: null })
  }

  /** GET /{type}/{id}/relationships/{relationship}: the linkage alone. */
  async linkage({ url, id }: HandlerInput): Promise<ApiResponse> {
    const recordId = requireId(id)
    rejectQueryParameters(url)
    const found = await this.store.findWithRelated(
      this.resource,
      recordId,
      new Map([[this.name, { include: false, children: noPlan }]]),
    )
    if (!found) throw recordNotFound()
    const linkage = found.graph.linkage(this.resource.type, recordId, this.name) ?? null
    return this.answer(recordId, linkage, found.record)
  }

  /** PATCH: a to-one relationship is set or cleared; a to-many one is replaced whole. */
  async replace(input: HandlerInput): Promise<ApiResponse> {
    if (this.relationship.kind === 'to-many') return this.changeMembers(input, 'replace')
    const { resource, target, store } = this
    const recordId = requireId(input.id)
    rejectQueryParameters(input.url)
    const { id: targetId, invalid } = parseToOneDocument(target, documentOf(input.body))
    if (invalid !== undefined) throw relatedNotFound(target, [invalid])
    const refused = requiredToOne(resource, this.name, targetId)
    if (refused) {
      if (!(await store.find(resource, recordId))) throw recordNotFound()
      throw refused
    }
    const { preconditions } = input
    const result = await store.update(
      resource,
      recordId,
      { attributes: {}, toOne: { [this.name]: targetId } },
      { expect: preconditions?.forRecord(resource) },
    )
    if (!result) throw recordNotFound()
    // A to-one relationship is part of its record: the record's tag guards it.
    if (result === 'stale') throw preconditionFailed(preconditions?.refusedBy, recordName(resource, recordId), 'it')
    if (!result.ok) throw relatedNotFound(target, [targetId ?? ''])
    return this.answer(recordId, result.record.toOne[this.name] ?? null, result.record)
  }

  /** POST: records join a to-many relationship. */
  add(input: HandlerInput): Promise<ApiResponse> {
    return this.changeMembers(input, 'add')
  }

  /** DELETE: records leave a to-many relationship. */
  remove(input: HandlerInput): Promise<ApiResponse> {
    return this.changeMembers(input, 'remove')
  }

  private async changeMembers(
    { url, id, body, preconditions }: HandlerInput,
    change: ToManyChange,
  ): Promise<ApiResponse> {
    const { resource, target, store, registry, name } = this
    const recordId = requireId(id)
    rejectQueryParameters(url)
    const refused = refuseOrphaning(registry, resource, name, change)
    if (refused) {
      if (!(await store.find(resource, recordId))) throw recordNotFound()
      throw refused
    }
    const { ids, invalid } = parseToManyDocument(target, documentOf(body), this.maxIds)
    if (invalid.length > 0) throw relatedNotFound(target, invalid)
    const joining = change === 'remove' ? [] : ids
    const result = await store.changeToMany(resource, recordId, name, ids, change, {
      expect: preconditions?.forMembers(joining),
    })
    if (result === 'stale') {
      const what = `The ${humanize(name).toLowerCase()} of ${recordName(resource, recordId).toLowerCase()}`
      if (preconditions && preconditions.uncovered.length > 0)
        throw joiningNotCovered(what, target, preconditions.uncovered)
      throw preconditionFailed(preconditions?.refusedBy, what, 'them')
    }
    if (result.status === 'not-found') throw recordNotFound()
    if (result.status === 'missing') throw relatedNotFound(target, result.ids)
    return this.answer(recordId, result.members)
  }

  /**
   * A relationship document: its links and its linkage. Its tag carries the state a write to the
   * relationship is checked against: the owner's (`owner`, for to-one) or the members'.
   */
  private answer(id: Id, linkage: Linkage, owner?: StoredRecord): ApiResponse {
    const type = this.target.type
    const identifier = (member: Id) => ({ type, id: String(member) })
    const base = `${this.basePath}/${this.resource.type}/${id}`
    const document = {
      links: { self: `${base}/relationships/${this.name}`, related: `${base}/${this.name}` },
      data: linkage === null ? null : typeof linkage === 'number' ? identifier(linkage) : linkage.map(identifier),
    }
    const members = typeof linkage === 'object' && linkage !== null
    if (members) return stateResponse(200, document, linkageState(linkage))
    return owner ? stateResponse(200, document, recordState(this.resource, owner)) : jsonApiResponse(200, document)
  }
}
