import { type ErrorObject, httpError, JsonApiError } from '../jsonapi/errors'
import type { ResourceDescription } from '../model/description'
import type { Id } from '../model/record'
import type { AtomicOperation, AtomicTarget, TargetState } from '../model/writes'
import type { ResourceRegistry } from '../resources/registry'
import { type AtomicCondition, membersName, recordName } from '../service/store-outcomes'
import { type EntityTag, linkageState, matchesState, namesState, parseTags, recordState } from './etag'

/*
 * The preconditions of an atomic request (RFC 9110 §13.1.1-2): `If-Match` and `If-None-Match` are
 * about the request as a whole, so they apply to each operation its own route would compare, with
 * the state that route compares (conditional.ts): the record named by id, or the members of its
 * to-many relationship; inside the batch's transaction before any operation runs. Records the
 * request adds, and those it names by lid, are not compared: nothing was stored to compare them
 * with. A record a to-many operation takes in is compared only with REQUIRE_IF_MATCH, as on its
 * route (docs/caching.md, "Atomic operations").
 */

/** A stored record or relationship the request changes, and the first operation that does. */
interface Check {
  /** Where its state is among the targets the store reads. */
  readonly at: number
  readonly operation: number
  /**
   * `joining`: a record a to-many operation takes in from elsewhere, rewriting its own to-one.
   * As on the relationship routes, only REQUIRE_IF_MATCH compares it; `owner` is where the
   * stored owner's members are among the targets (a member already is not joining).
   */
  readonly role: 'changed' | 'joining'
  readonly owner?: number
}

/** The targets of the checks, deduplicated, and the checks in operation order. */
interface Plan {
  readonly targets: AtomicTarget[]
  readonly checks: Check[]
}

/** Which failed, once one has: the check, and why. */
type Failure = { readonly check: Check; readonly by: 'If-Match' | 'If-None-Match' | 'uncovered' }

/** The first operation that changes a record stored before the request, or -1 for none. */
function firstStoredChange(operations: readonly AtomicOperation[]): number {
  return operations.findIndex((operation) => {
    if (operation.kind === 'create') return false
    if ('id' in operation.target) return true
    return operation.kind === 'to-many' && operation.members.some((member) => 'id' in member)
  })
}

/**
 * What the request's operations change that was stored before it: records updated or removed by
 * id (a to-one relationship operation is its record's change), the members of to-many
 * relationships of records named by id, and, with `joining`, the stored records an add or replace
 * takes in.
 */
function planOf(registry: ResourceRegistry, operations: readonly AtomicOperation[], joining: boolean): Plan {
  const targets: AtomicTarget[] = []
  const checks: Check[] = []
  const seen = new Map<string, number>()
  const removed = new Set<string>()
  for (const operation of operations) {
    if (operation.kind === 'delete' && 'id' in operation.target) {
      removed.add(`${operation.resource.type}/${operation.target.id}`)
    }
  }
  const targetAt = (target: AtomicTarget, key: string): number | undefined => {
    if (seen.has(key)) return undefined
    seen.set(key, targets.length)
    targets.push(target)
    return targets.length - 1
  }
  const record = (resource: ResourceDescription, id: Id): [AtomicTarget, string] => {
    const key = `${resource.type}/${id}`
    return [{ kind: 'record', resource, id, removing: removed.has(key) }, key]
  }
  const members = (resource: ResourceDescription, id: Id, relationship: string): [AtomicTarget, string] => [
    { kind: 'members', resource, id, relationship },
    `${resource.type}/${id}/${relationship}`,
  ]
  for (const [operation, op] of operations.entries()) {
    if (op.kind === 'create' || !('id' in op.target)) continue
    const { resource } = op
    const { id } = op.target
    const at = targetAt(...(op.kind === 'to-many' ? members(resource, id, op.relationship) : record(resource, id)))
    if (at !== undefined) checks.push({ at, operation, role: 'changed' })
  }
  if (joining) {
    for (const [operation, op] of operations.entries()) {
      if (op.kind !== 'to-many' || op.change === 'remove') continue
      const member = registry.get(op.resource.relationships[op.relationship]?.target ?? '')
      const owner = 'id' in op.target ? seen.get(members(op.resource, op.target.id, op.relationship)[1]) : undefined
      for (const ref of op.members) {
        if (!('id' in ref)) continue
        const at = targetAt(...record(member, ref.id))
        if (at !== undefined) checks.push({ at, operation, role: 'joining', owner })
      }
    }
    checks.sort((a, b) => a.operation - b.operation)
  }
  return { targets, checks }
}

/**
 * The condition of an atomic request, for WriteService.atomic; undefined when it has no
 * preconditions to compare (none sent, `If-Match: *` alone, or nothing stored that it changes).
 * `required` (REQUIRE_IF_MATCH): a request that changes stored records without If-Match is a 428
 * before anything is read, and a record an operation takes in must be covered by a tag of its own.
 */
export function atomicCondition(
  registry: ResourceRegistry,
  operations: readonly AtomicOperation[],
  headers: Headers,
  required: boolean,
): AtomicCondition | undefined {
  const matchHeader = headers.get('if-match')
  const noneMatchHeader = headers.get('if-none-match')
  const first = firstStoredChange(operations)
  if (first === -1) return undefined
  if (matchHeader === null && required) throw ifMatchRequired(first)
  if (matchHeader === null && noneMatchHeader === null) return undefined
  const match = matchHeader === null ? null : parseTags(matchHeader)
  const noneMatch = noneMatchHeader === null ? null : parseTags(noneMatchHeader)
  if (match === '*' && noneMatch === null) return undefined
  const { targets, checks } = planOf(registry, operations, required && match !== '*')
  if (checks.length === 0) return undefined
  let failure: Failure | undefined
  const expect = (states: readonly TargetState[]): boolean => {
    failure = findFailure(targets, checks, states, match, noneMatch)
    return failure === undefined
  }
  const refused = (): JsonApiError => {
    if (!failure) throw new Error('An atomic request was refused, but no precondition failed')
    return refusal(targets[failure.check.at] as AtomicTarget, failure)
  }
  return { targets, expect, refused }
}

/** The first check the stored states fail, in operation order; undefined when all hold. */
function findFailure(
  targets: readonly AtomicTarget[],
  checks: readonly Check[],
  states: readonly TargetState[],
  match: '*' | readonly EntityTag[] | null,
  noneMatch: '*' | readonly EntityTag[] | null,
): Failure | undefined {
  // A record that does not exist (an owner, a member, a record by id) is the 404 of the first
  // operation naming it, whatever the headers say: no check of that operation or a later one fails.
  const missing = checks.find((check) => (states[check.at] ?? null) === null)?.operation ?? Number.POSITIVE_INFINITY
  for (const check of checks) {
    if (check.operation >= missing) break
    const target = targets[check.at] as AtomicTarget
    const state = states[check.at] as Exclude<TargetState, null>
    const hash = 'id' in state ? recordState(target.resource, state) : linkageState(state)
    if (check.role === 'joining') {
      const members = check.owner === undefined ? null : (states[check.owner] ?? null)
      if (members && !('id' in members) && members.includes(target.id)) continue
      if (match !== null && !matchesState(match, hash)) return { check, by: 'uncovered' }
      continue
    }
    if (match !== null && !matchesState(match, hash)) return { check, by: 'If-Match' }
    if (noneMatch !== null && namesState(noneMatch, hash)) return { check, by: 'If-None-Match' }
  }
  return undefined
}

/** "book 1", "the books of author 1": what failed, mid-sentence. */
function nameOf(target: AtomicTarget): string {
  const name =
    target.kind === 'record'
      ? recordName(target.resource, target.id)
      : membersName(target.resource, target.id, target.relationship)
  return name.charAt(0).toLowerCase() + name.slice(1)
}

/** The error of a refused request: 412 naming the header, or 428 for a record taken in uncovered. */
function refusal(target: AtomicTarget, { check, by }: Failure): JsonApiError {
  const what = nameOf(target)
  const at = `operation ${check.operation}`
  const meta = { operation: `/atomic:operations/${check.operation}` }
  const error = (status: number, header: string, detail: string): JsonApiError => {
    const [object] = httpError(status, detail, { header }).errors
    return new JsonApiError(status, [{ ...(object as ErrorObject), meta }])
  }
  if (by === 'uncovered') {
    return error(
      428,
      'If-Match',
      `This service requires If-Match on writes that change stored records, and no ETag in If-Match is the current one of ${what}, which ${at} would take in from elsewhere, changing its own relationship; nothing of this request was written. Send its ETag with the others (GET it again if it has changed), or If-Match: * to write whatever is stored`,
    )
  }
  if (by === 'If-None-Match') {
    return error(
      412,
      'If-None-Match',
      `The state of ${what}, changed by ${at}, matches If-None-Match, so nothing of this request was written (If-None-Match: * refuses a request with any operation on a record stored before it, named by id)`,
    )
  }
  return error(
    412,
    'If-Match',
    `No ETag in If-Match is the current one of ${what}, changed by ${at}: it has changed since its ETag was taken, or none of its ETags was sent, so nothing of this request was written. GET it again and send its ETag with those of the other records the request changes`,
  )
}

/** REQUIRE_IF_MATCH: the 428 of a request that changes stored records (the first at `index`) without If-Match. */
function ifMatchRequired(index: number): JsonApiError {
  return httpError(
    428,
    `This service requires If-Match on writes that change stored records, and operation ${index} changes one stored before this request: send in If-Match the ETag of each record (or to-many relationship) the request changes, as your last GET of it gave it, or If-Match: * to write whatever is stored`,
    { pointer: `/atomic:operations/${index}` },
  )
}
