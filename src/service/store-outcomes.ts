/**
 * What a store reports of a write, turned into what was written or the JSON:API error a client
 * sees: the one place where WriteResult, DeleteResult, ToManyResult and AtomicOutcome (and a
 * conditional write's 'stale') become 404, 409, 412 or 422, for REST endpoints and atomic
 * operations alike. The two differ only in how an error points at its cause: an operation's names
 * the operation (`/atomic:operations/N`), a REST one the document.
 */
import { httpError, type JsonApiError, recordNotFound } from '../jsonapi/errors'
import { humanize, withArticle, words } from '../jsonapi/messages'
import type { ResourceDescription } from '../model/description'
import type { Id, StoredRecord } from '../model/record'
import type {
  AtomicFailure,
  AtomicOperation,
  AtomicOutcome,
  AtomicResult,
  AtomicTarget,
  DeleteResult,
  Expectation,
  Stale,
  TargetState,
  ToManyResult,
  WriteResult,
} from '../model/writes'
import { referencesMissing, stillReferenced } from './write-rules'

/** Why a write was not done, whichever store call said so. */
export type WriteFailure =
  | AtomicFailure
  /** The records a relationship document names do not exist, or no record can have these ids. */
  | { readonly kind: 'missing-members'; readonly ids: readonly (Id | string)[] }

/**
 * Where a write was asked: operation `index` of an atomic request, or a REST endpoint; at a
 * relationship endpoint `related` is the type of the records its document names.
 */
export type WriteSite =
  | { readonly kind: 'operation'; readonly index: number }
  | { readonly kind: 'rest'; readonly related?: ResourceDescription }

export const REST: WriteSite = { kind: 'rest' }

/**
 * A conditional write (If-Match, If-None-Match; see http/conditional.ts): what it expects of the
 * stored state, and the error for a write whose state it refused, `what` naming what changed.
 */
export interface Condition<T> {
  readonly expect: Expectation<T>
  refused(what: string): JsonApiError
}

/**
 * The preconditions of an atomic batch: the stored records and relationships they are compared
 * with, what they expect of their states (read in the batch's transaction, in `targets` order), and
 * the error for a batch they refused, which they know the first cause of.
 */
export interface AtomicCondition {
  readonly targets: readonly AtomicTarget[]
  readonly expect: Expectation<readonly TargetState[]>
  refused(): JsonApiError
}

/** "Book 1": the record a refused conditional write is about. */
export function recordName(resource: ResourceDescription, id: Id): string {
  return `${humanize(resource.singular)} ${id}`
}

/** "The books of author 1": the members a refused conditional write is about. */
export function membersName(resource: ResourceDescription, id: Id, relationship: string): string {
  return `The ${humanize(relationship).toLowerCase()} of ${recordName(resource, id).toLowerCase()}`
}

/** The error of a conditional write its condition refused: the store says 'stale' only when it had one. */
function staleWrite(condition: Condition<never> | undefined, what: string): JsonApiError {
  if (!condition) throw new Error(`A write without a condition was refused as stale: ${what}`)
  return condition.refused(what)
}

/** What a missing related record is at a relationship endpoint, as JSON:API has it: 404 with the ids named. */
function relatedNotFound(target: ResourceDescription, ids: readonly (Id | string)[]): JsonApiError {
  const detail =
    ids.length === 1
      ? `There is no ${words(target.singular)} ${ids[0]}`
      : `There are no ${words(target.type)} ${ids.join(', ')}`
  return httpError(404, detail, { pointer: '/data' })
}

/** The error of a write to `resource` that failed so, asked where `site` says. */
export function failureError(resource: ResourceDescription, failure: WriteFailure, site: WriteSite): JsonApiError {
  const index = site.kind === 'operation' ? site.index : undefined
  const at = index === undefined ? undefined : `/atomic:operations/${index}`
  switch (failure.kind) {
    case 'not-found':
      if (at === undefined) return recordNotFound()
      return httpError(404, `Operation ${index} names ${withArticle(words(resource.singular))} that does not exist`, {
        pointer: at,
      })
    case 'unknown-lid':
      return httpError(400, `lid "${failure.lid}" names no record created earlier in this request`, { pointer: at })
    case 'missing-members':
      if (site.kind === 'rest') return relatedNotFound(site.related ?? resource, failure.ids)
      return httpError(404, `Operation ${index} names records that do not exist: ${failure.ids.join(', ')}`, {
        pointer: `${at}/data`,
      })
    case 'restricted':
      return stillReferenced(resource, failure.id, failure, at)
    case 'missing':
      return referencesMissing(resource, failure.relationships, at)
  }
}

/** The record a create wrote, or the error of why it did not. */
export function createdRecord(resource: ResourceDescription, result: WriteResult): StoredRecord {
  if (!result.ok) throw failureError(resource, { kind: 'missing', relationships: result.missing }, REST)
  return result.record
}

/** The record an update wrote, or the error of why it did not (null: no record has the id). */
export function updatedRecord(
  resource: ResourceDescription,
  id: Id,
  result: WriteResult | null | Stale,
  condition: Condition<StoredRecord> | undefined,
): StoredRecord {
  if (result === 'stale') throw staleWrite(condition, recordName(resource, id))
  if (!result) throw failureError(resource, { kind: 'not-found' }, REST)
  return createdRecord(resource, result)
}

/** Nothing when the record was deleted, else the error of why not. */
export function deleted(
  resource: ResourceDescription,
  id: Id,
  result: DeleteResult | Stale,
  condition?: Condition<StoredRecord>,
): void {
  if (result === 'stale') throw staleWrite(condition, recordName(resource, id))
  if (result.status === 'not-found') throw failureError(resource, { kind: 'not-found' }, REST)
  if (result.status === 'restricted') {
    throw failureError(resource, { kind: 'restricted', id, by: result.by, count: result.count }, REST)
  }
}

/** The members of to-many `name` after a change, or the error of why it was not made. */
export function changedMembers(
  resource: ResourceDescription,
  id: Id,
  name: string,
  result: ToManyResult | Stale,
  condition: Condition<readonly Id[]> | undefined,
  site: WriteSite,
): readonly Id[] {
  if (result === 'stale') throw staleWrite(condition, membersName(resource, id, name))
  if (result.status === 'not-found') throw failureError(resource, { kind: 'not-found' }, site)
  if (result.status === 'missing') throw failureError(resource, { kind: 'missing-members', ids: result.ids }, site)
  return result.members
}

/**
 * The results of an atomic batch, or the error of the operation that stopped it, or of the
 * preconditions that refused it (nothing was stored).
 */
export function atomicResults(
  operations: readonly AtomicOperation[],
  outcome: AtomicOutcome | Stale,
  condition: AtomicCondition | undefined,
): readonly AtomicResult[] {
  if (outcome === 'stale') {
    if (!condition) throw new Error('An atomic batch without a condition was refused as stale')
    throw condition.refused()
  }
  if (outcome.ok) return outcome.results
  const { resource } = operations[outcome.index] as AtomicOperation
  throw failureError(resource, outcome.failure, { kind: 'operation', index: outcome.index })
}
