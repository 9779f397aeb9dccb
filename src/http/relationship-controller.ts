import { recordNotFound } from '../jsonapi/errors'
import { requireId } from '../jsonapi/ids'
import { rejectQueryParameters } from '../jsonapi/query'
import { parseToManyDocument, parseToOneDocument } from '../jsonapi/relationship-document'
import type { RelationshipDescription, ResourceDescription } from '../model/description'
import type { Linkage } from '../model/query'
import type { Id, StoredRecord } from '../model/record'
import type { ToManyChange } from '../model/writes'
import type { ResourceRegistry } from '../resources/registry'
import { WriteService } from '../service/write-service'
import type { Store } from '../store/store'
import { linkageState, recordState } from './etag'
import { documentOf } from './parsed-body'
import type { HandlerInput, ResourceController } from './resource-controller'
import { type ApiResponse, jsonApiResponse, stateResponse } from './responses'

const noPlan = new Map()

/**
 * The related-resource and relationship endpoints of one relationship of one type:
 * `/books/1/author`, `/books/1/relationships/author`, and writes to the latter.
 */
export class RelationshipController {
  private readonly relationship: RelationshipDescription
  private readonly target: ResourceDescription
  private readonly writes: WriteService

  constructor(
    private readonly resource: ResourceDescription,
    private readonly name: string,
    registry: ResourceRegistry,
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
    this.writes = new WriteService(registry, store)
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
    const { compound } = targets.checkRecordQuery(url)
    return jsonApiResponse(200, compound ? { data: null, included: [] } : { data: null })
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
    const { resource, target, name } = this
    const recordId = requireId(input.id)
    rejectQueryParameters(input.url)
    const named = parseToOneDocument(target, documentOf(input.body))
    const condition = input.preconditions?.forRecord(resource)
    const record = await this.writes.setToOne(resource, name, recordId, named, condition)
    // A to-one relationship is part of its record: the record's tag guards it.
    return this.answer(recordId, record.toOne[name] ?? null, record)
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
    const { resource, target, name } = this
    const recordId = requireId(id)
    rejectQueryParameters(url)
    await this.writes.mayChangeMembers(resource, name, recordId, change)
    const named = parseToManyDocument(target, documentOf(body), this.maxIds)
    const condition = preconditions?.forMembers(target, change === 'remove' ? [] : named.ids)
    const members = await this.writes.changeMembers(resource, name, recordId, named, change, condition)
    return this.answer(recordId, members)
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
