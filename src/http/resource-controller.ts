import {
  linkedResource,
  type ResourceObject,
  type SingleDocument,
  unlinkedResource,
  unlinkedResourceJson,
} from '../jsonapi/document'
import { type FieldError, httpError, recordNotFound, unprocessable } from '../jsonapi/errors'
import { parseId } from '../jsonapi/ids'
import { messages } from '../jsonapi/messages'
import { parseListQuery, parseRecordQuery } from '../jsonapi/query'
import { parseWriteDocument, type WriteRequest } from '../jsonapi/request-document'
import type { ResourceDescription } from '../resources/description'
import type { ResourceRegistry } from '../resources/registry'
import type { Id, Store, StoredRecord } from '../store/store'
import type { ParsedBody } from './body-parser'
import { type ApiResponse, jsonApiResponse, jsonApiTextResponse, noContent, streamedDataResponse } from './responses'

/** How many records a list reads from the store at a time while it streams. */
const LIST_BATCH = 1000

/** What a handler gets from the request: the raw URL, the path id and the parsed body. */
export interface HandlerInput {
  readonly url: string
  readonly id?: string
  readonly body?: unknown
}

/**
 * The five operations for any resource type, driven by its description: one controller,
 * instantiated once per type.
 */
export class ResourceController {
  constructor(
    private readonly resource: ResourceDescription,
    private readonly registry: ResourceRegistry,
    private readonly store: Store,
    private readonly basePath: string,
  ) {
    this.loadedOnShow = Object.entries(resource.relationships)
      .filter(([name, r]) => r.kind === 'to-many' || resource.defaultInclude.includes(name))
      .map(([name]) => name)
  }

  /** A single GET needs the ids of every to-many relationship and the records it includes by default. */
  private readonly loadedOnShow: readonly string[]

  async list({ url }: HandlerInput): Promise<ApiResponse> {
    const { resource, store } = this
    const filter = parseListQuery(resource, url)
    const render = (records: StoredRecord[]) => records.map((record) => unlinkedResourceJson(resource, record))
    const first = await store.list(resource, filter, { afterId: 0, limit: LIST_BATCH })
    if (first.length < LIST_BATCH) return jsonApiTextResponse(200, `{"data":[${render(first).join(',')}]}`)
    let last = first.at(-1)?.id ?? 0
    return streamedDataResponse(render(first), async () => {
      if (last === -1) return null
      const batch = await store.list(resource, filter, { afterId: last, limit: LIST_BATCH })
      last = batch.length < LIST_BATCH ? -1 : (batch.at(-1)?.id ?? -1)
      return batch.length === 0 ? null : render(batch)
    })
  }

  async show({ url, id }: HandlerInput): Promise<ApiResponse> {
    const { resource, registry, store } = this
    const recordId = this.requireId(id)
    parseRecordQuery(url)
    const found = await store.findWithRelated(resource, recordId, this.loadedOnShow)
    if (!found) throw recordNotFound()

    const toMany: Record<string, Id[]> = {}
    const included: ResourceObject[] = []
    for (const name of this.loadedOnShow) {
      const relationship = resource.relationships[name]
      const related = found.related[name] ?? []
      if (relationship?.kind === 'to-many') toMany[name] = related.map((r) => r.id)
      if (relationship && resource.defaultInclude.includes(name)) {
        const target = registry.get(relationship.target)
        for (const r of related) included.push(unlinkedResource(target, r))
      }
    }
    const document: SingleDocument = { data: linkedResource(registry, resource, found.record, toMany) }
    return jsonApiResponse(200, included.length > 0 ? { ...document, included: unique(included) } : document)
  }

  async create({ url, body }: HandlerInput): Promise<ApiResponse> {
    const { resource, registry, store } = this
    parseRecordQuery(url)
    const write = parseWriteDocument(registry, resource, documentOf(body), { kind: 'create' })
    await this.rejectInvalid(write)
    const result = await store.create(resource, write.input)
    if (!result.ok) throw unprocessable(this.mustExist(new Set(result.missing)))
    const data = unlinkedResource(resource, result.record)
    return jsonApiResponse(201, { data }, { location: `${this.basePath}/${resource.type}/${data.id}` })
  }

  async update({ url, id, body }: HandlerInput): Promise<ApiResponse> {
    const { resource, registry, store } = this
    const recordId = this.requireId(id)
    parseRecordQuery(url)
    const write = parseWriteDocument(registry, resource, documentOf(body), { kind: 'update', id: recordId })
    if (write.errors.length > 0 || write.missing.size > 0) {
      if (!(await store.find(resource, recordId))) throw recordNotFound()
      await this.rejectInvalid(write)
    }
    const result = await store.update(resource, recordId, write.input)
    if (!result) throw recordNotFound()
    if (!result.ok) throw unprocessable(this.mustExist(new Set(result.missing)))
    return jsonApiResponse(200, { data: unlinkedResource(resource, result.record) })
  }

  async remove({ url, id }: HandlerInput): Promise<ApiResponse> {
    const { resource, store } = this
    const recordId = this.requireId(id)
    parseRecordQuery(url)
    const result = await store.delete(resource, recordId)
    if (result.status === 'not-found') throw recordNotFound()
    if (result.status === 'restricted') {
      const dependent = { singular: result.by.singular, plural: result.by.type }
      throw httpError(409, messages.stillReferenced(resource.singular, recordId, result.count, dependent))
    }
    return noContent()
  }

  private requireId(id: string | undefined): Id {
    const parsed = parseId(id)
    if (parsed === null) throw recordNotFound()
    return parsed
  }

  /** Reports every failure of a write at once: missing related records first, then field errors. */
  private async rejectInvalid(write: WriteRequest): Promise<void> {
    if (write.errors.length === 0 && write.missing.size === 0) return
    const missing = new Set([
      ...write.missing,
      ...(await this.store.missingReferences(this.resource, write.input.toOne)),
    ])
    throw unprocessable([...this.mustExist(missing), ...write.errors])
  }

  /** "Author must exist" for each missing relationship, in the description's order. */
  private mustExist(missing: ReadonlySet<string>): FieldError[] {
    return Object.keys(this.resource.relationships)
      .filter((name) => missing.has(name))
      .map((name) => ({ detail: messages.mustExist(name), parameter: name, pointer: `data/attributes/${name}` }))
  }
}

function documentOf(body: unknown): unknown {
  return (body as ParsedBody | undefined)?.document
}

/** Each included record once, in first-seen order. */
function unique(objects: ResourceObject[]): ResourceObject[] {
  const seen = new Set<string>()
  return objects.filter((o) => {
    const key = `${o.type}:${o.id}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}
