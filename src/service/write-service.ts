/**
 * The writes of the service, between the parsed request (src/jsonapi) and the store (src/store):
 * each applies the write rules (write-rules.ts), asks the store, and gives back what was written or
 * throws the error a client sees (store-outcomes.ts). The REST controllers and the atomic
 * operations both write through here; src/http parses the request and renders the answer around it.
 */
import { recordNotFound } from '../jsonapi/errors'
import type { WriteRequest } from '../jsonapi/request-document'
import type { ResourceDescription } from '../model/description'
import type { Id, StoredRecord } from '../model/record'
import type { AtomicOperation, AtomicResult, ToManyChange } from '../model/writes'
import type { ResourceRegistry } from '../resources/registry'
import type { Store } from '../store/store'
import {
  type AtomicCondition,
  atomicResults,
  type Condition,
  changedMembers,
  createdRecord,
  deleted,
  failureError,
  updatedRecord,
  type WriteSite,
} from './store-outcomes'
import { checkReferencesExist, failsAsParsed, refuseOrphaning, requiredToOne } from './write-rules'

export class WriteService {
  constructor(
    private readonly registry: ResourceRegistry,
    private readonly store: Store,
  ) {}

  /** POST /{type}: the record created. */
  async create(resource: ResourceDescription, write: WriteRequest): Promise<StoredRecord> {
    const invalid = await checkReferencesExist(this.store, resource, write)
    if (invalid) throw invalid
    return createdRecord(resource, await this.store.create(resource, write.input))
  }

  /** PATCH /{type}/{id}: the record as it is now. */
  async update(
    resource: ResourceDescription,
    id: Id,
    write: WriteRequest,
    condition?: Condition<StoredRecord>,
  ): Promise<StoredRecord> {
    const { store } = this
    // A record that does not exist answers 404 before its write's faults are looked at further.
    if (failsAsParsed(write) && !(await store.find(resource, id))) throw recordNotFound()
    const invalid = await checkReferencesExist(store, resource, write)
    if (invalid) throw invalid
    const result = await store.update(resource, id, write.input, { expect: condition?.expect })
    return updatedRecord(resource, id, result, condition)
  }

  /** DELETE /{type}/{id}. */
  async delete(resource: ResourceDescription, id: Id, condition?: Condition<StoredRecord>): Promise<void> {
    deleted(resource, id, await this.store.delete(resource, id, { expect: condition?.expect }), condition)
  }

  /**
   * PATCH /{type}/{id}/relationships/{name} of a to-one relationship: the record as it is now.
   * `named` is what the document names: a record's id, null, or an id no record can have.
   */
  async setToOne(
    resource: ResourceDescription,
    name: string,
    id: Id,
    named: { readonly id: Id | null } | { readonly invalid: string },
    condition?: Condition<StoredRecord>,
  ): Promise<StoredRecord> {
    const site = this.relationshipSite(resource, name)
    if ('invalid' in named) throw failureError(resource, { kind: 'missing-members', ids: [named.invalid] }, site)
    const refused = requiredToOne(resource, name, named.id)
    if (refused) {
      if (!(await this.store.find(resource, id))) throw recordNotFound()
      throw refused
    }
    const input = { attributes: {}, toOne: { [name]: named.id } }
    const result = await this.store.update(resource, id, input, { expect: condition?.expect })
    // The document named one record: the relationship the store finds missing is that record.
    if (result && result !== 'stale' && !result.ok) {
      throw failureError(resource, { kind: 'missing-members', ids: [named.id ?? ''] }, site)
    }
    return updatedRecord(resource, id, result, condition)
  }

  /**
   * Whether the members of to-many `name` may change so: a change that would leave them owned by
   * nothing is refused (403), after a 404 for a record that does not exist. Asked before the
   * request's document is read: no document makes such a change allowed.
   */
  async mayChangeMembers(resource: ResourceDescription, name: string, id: Id, change: ToManyChange): Promise<void> {
    const refused = refuseOrphaning(this.registry, resource, name, change)
    if (!refused) return
    if (!(await this.store.find(resource, id))) throw recordNotFound()
    throw refused
  }

  /**
   * POST, PATCH or DELETE /{type}/{id}/relationships/{name} of a to-many relationship, once
   * mayChangeMembers has passed: its members as they are now. `named` is what the document names:
   * ids, and those no record can have.
   */
  async changeMembers(
    resource: ResourceDescription,
    name: string,
    id: Id,
    named: { readonly ids: readonly Id[]; readonly invalid: readonly string[] },
    change: ToManyChange,
    condition?: Condition<readonly Id[]>,
  ): Promise<readonly Id[]> {
    const site = this.relationshipSite(resource, name)
    if (named.invalid.length > 0) throw failureError(resource, { kind: 'missing-members', ids: named.invalid }, site)
    const result = await this.store.changeToMany(resource, id, name, named.ids, change, { expect: condition?.expect })
    return changedMembers(resource, id, name, result, condition, site)
  }

  /**
   * POST /operations, read by readAtomicRequest: each operation's result, or the first one's
   * failure; with `condition` (If-Match, If-None-Match), compared with what it names inside the
   * batch's transaction before any operation runs.
   */
  async atomic(operations: readonly AtomicOperation[], condition?: AtomicCondition): Promise<readonly AtomicResult[]> {
    const outcome = await this.store.atomic(operations, { targets: condition?.targets, expect: condition?.expect })
    return atomicResults(operations, outcome, condition)
  }

  /** A relationship endpoint, whose document names records of the relationship's target type. */
  private relationshipSite(resource: ResourceDescription, name: string): WriteSite {
    const relationship = resource.relationships[name]
    if (!relationship) throw new Error(`${resource.type} has no relationship ${name}`)
    return { kind: 'rest', related: this.registry.get(relationship.target) }
  }
}
