import type { ResourceDescription } from '../model/description'
import type { AtomicInput, AtomicOperation, RecordRef, ToManyChange } from '../model/writes'
import type { ResourceRegistry } from '../resources/registry'
import { type ErrorObject, httpError, JsonApiError } from './errors'
import { parseId } from './ids'
import { humanize, withArticle, words } from './messages'
import { checkIdentifierType, checkMemberCount } from './relationship-document'
import { parseWriteDocument, type WriteRequest } from './request-document'

const OPERATIONS = 'atomic:operations'

type Json = Record<string, unknown>

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** The same failure, its pointers moved under the operation it belongs to. */
function underOperation(error: JsonApiError, index: number): JsonApiError {
  const base = `/${OPERATIONS}/${index}`
  const errors = error.errors.map((e): ErrorObject => {
    const pointer = e.source?.pointer
    if (pointer === undefined) return { ...e, source: { ...e.source, pointer: base } }
    return {
      ...e,
      source: { ...e.source, pointer: `${base}${pointer === '' || pointer.startsWith('/') ? pointer : `/${pointer}`}` },
    }
  })
  return new JsonApiError(error.status, errors, error.headers)
}

/**
 * Whether two ids a client wrote name the same record as written (`7` and `"7"` do). Only a string
 * or number is turned into text: an array or object (which names no record) is compared as it is,
 * since turning one nested 100,000 deep into text overflows the stack.
 */
function sameIdText(a: unknown, b: unknown): boolean {
  const scalar = (value: unknown) => typeof value === 'string' || typeof value === 'number'
  return a === b || (scalar(a) && scalar(b) && String(a) === String(b))
}

function typeNamed(registry: ResourceRegistry, type: unknown, pointer: string): ResourceDescription {
  if (typeof type !== 'string') throw httpError(400, 'type must be a string naming a resource type', { pointer })
  const found = registry.all.find((r) => r.type === type || r.singular === type)
  if (!found) throw httpError(400, `There is no resource type "${type}"`, { pointer })
  return found
}

/** `{type, id}` or `{type, lid}` naming a record of `target`. */
function refOf(target: ResourceDescription, value: unknown, pointer: string): RecordRef {
  if (!isObject(value) || typeof value.type !== 'string') {
    throw httpError(400, 'A resource identifier needs a type and an id or a lid', { pointer })
  }
  checkIdentifierType(target, value.type, pointer)
  if (typeof value.lid === 'string' && value.id === undefined) return { lid: value.lid }
  if (value.id === undefined) throw httpError(400, 'A resource identifier needs an id or a lid', { pointer })
  if (typeof value.id !== 'string' && typeof value.id !== 'number') {
    throw httpError(400, 'A resource identifier\'s id must be a string, such as "7"', { pointer })
  }
  const id = parseId(value.id)
  if (id === null) {
    throw httpError(404, `There is no ${words(target.singular)} ${String(value.id)}`, { pointer })
  }
  return { id }
}

/** A resource object as an operation reads it: the write document checked, lids set aside. */
export interface ResourceData {
  readonly write: WriteRequest
  /** To-one relationships whose linkage names a record by lid: one this batch creates. */
  readonly byLid: Readonly<Record<string, RecordRef>>
  readonly lid?: string
}

/**
 * An operation read as far as the rules about its records (src/service) need: what is left to read
 * (a to-many's members, a to-one's record, the ids beside lids) is read by completeOperation once
 * they have passed, so that a client meets the failures in the order it always has.
 */
export type OperationDraft =
  | { readonly kind: 'create'; readonly resource: ResourceDescription; readonly data: ResourceData }
  | {
      readonly kind: 'update'
      readonly resource: ResourceDescription
      readonly target: RecordRef
      readonly data: ResourceData
    }
  | { readonly kind: 'delete'; readonly resource: ResourceDescription; readonly target: RecordRef }
  | {
      readonly kind: 'to-one'
      readonly resource: ResourceDescription
      readonly target: RecordRef
      readonly relationship: string
      /** The operation's data: null, or what should name a record. */
      readonly value: unknown
    }
  | {
      readonly kind: 'to-many'
      readonly resource: ResourceDescription
      readonly target: RecordRef
      readonly relationship: string
      readonly change: ToManyChange
      readonly members: readonly unknown[]
    }

/** A resource operation's data: checked as a create or update document is, lids set aside. */
function resourceData(
  registry: ResourceRegistry,
  resource: ResourceDescription,
  data: Json,
  create: boolean,
): ResourceData {
  const { lid, relationships, ...rest } = data
  if (lid !== undefined && typeof lid !== 'string')
    throw httpError(400, 'lid must be a string', { pointer: '/data/lid' })
  const byLid: Record<string, RecordRef> = {}
  const linked: Json = {}
  for (const [name, object] of Object.entries(isObject(relationships) ? relationships : {})) {
    const target = Object.hasOwn(resource.relationships, name) ? resource.relationships[name] : undefined
    const linkage = isObject(object) ? object.data : undefined
    if (target?.kind === 'to-one' && isObject(linkage) && typeof linkage.lid === 'string') {
      byLid[name] = refOf(registry.get(target.target), linkage, `/data/relationships/${name}/data`)
    } else linked[name] = object
  }
  const document = { data: relationships === undefined ? rest : { ...rest, relationships: linked } }
  const write = parseWriteDocument(
    registry,
    resource,
    document,
    create ? { kind: 'create' } : { kind: 'update', id: 0 },
  )
  return { write, byLid, lid: lid as string | undefined }
}

/** The operation's record input: its to-one ids and lids together. */
function inputOf({ write, byLid }: ResourceData): AtomicInput {
  const toOne: Record<string, RecordRef | null> = { ...byLid }
  for (const [name, id] of Object.entries(write.input.toOne)) {
    // `author_id` beside a lid linkage for the same relationship: two answers to one question.
    if (name in byLid) {
      throw httpError(409, `${name} is given both by id and by lid`, { pointer: `/data/relationships/${name}` })
    }
    toOne[name] = id === null ? null : { id }
  }
  return { attributes: write.input.attributes, toOne }
}

/** Reads one operation as far as its draft; pointers are the operation's own (`/data`, `/ref`). */
export function draftOperation(registry: ResourceRegistry, operation: unknown): OperationDraft {
  if (!isObject(operation)) throw httpError(400, 'An operation must be an object', { pointer: '' })
  const { op, ref, data } = operation
  if (op !== 'add' && op !== 'update' && op !== 'remove') {
    throw httpError(400, 'op must be "add", "update" or "remove"', { pointer: '/op' })
  }
  if (operation.href !== undefined)
    throw httpError(400, 'Operations target records with ref, not href', { pointer: '/href' })
  if (ref !== undefined && !isObject(ref)) throw httpError(400, 'ref must be an object', { pointer: '/ref' })

  if (ref && ref.relationship !== undefined) {
    const resource = typeNamed(registry, ref.type, '/ref/type')
    const name = ref.relationship
    if (typeof name !== 'string') {
      throw httpError(400, 'ref.relationship must be a string naming a relationship', { pointer: '/ref/relationship' })
    }
    const relationship = Object.hasOwn(resource.relationships, name) ? resource.relationships[name] : undefined
    if (!relationship)
      throw httpError(400, `${humanize(withArticle(words(resource.singular)))} has no relationship "${name}"`, {
        pointer: '/ref/relationship',
      })
    const target = refOf(resource, { type: ref.type, id: ref.id, lid: ref.lid }, '/ref')
    if (relationship.kind === 'to-one') {
      if (op !== 'update') throw httpError(400, 'A to-one relationship takes only op "update"', { pointer: '/op' })
      return { kind: 'to-one', resource, target, relationship: name, value: data }
    }
    if (!Array.isArray(data))
      throw httpError(400, 'A to-many relationship takes an array of identifiers', { pointer: '/data' })
    const change = op === 'add' ? 'add' : op === 'remove' ? 'remove' : 'replace'
    return { kind: 'to-many', resource, target, relationship: name, change, members: data }
  }

  if (op === 'remove') {
    if (!ref) throw httpError(400, 'A remove operation needs a ref naming the record', { pointer: '/ref' })
    const resource = typeNamed(registry, ref.type, '/ref/type')
    return { kind: 'delete', resource, target: refOf(resource, ref, '/ref') }
  }
  if (!isObject(data)) {
    throw httpError(400, `${humanize(withArticle(op))} operation needs a resource object as data`, { pointer: '/data' })
  }
  const resource = typeNamed(registry, data.type, '/data/type')
  if (op === 'add') {
    if (ref) throw httpError(400, 'An add operation of a resource takes no ref', { pointer: '/ref' })
    return { kind: 'create', resource, data: resourceData(registry, resource, data, true) }
  }
  const named = ref ?? { type: data.type, id: data.id, lid: data.lid }
  if (ref && (ref.type !== data.type || (ref.id !== undefined && !sameIdText(ref.id, data.id ?? ref.id)))) {
    throw httpError(409, 'ref and data name different records', { pointer: '/data' })
  }
  const target = refOf(resource, named, ref ? '/ref' : '/data')
  const { id: _id, lid: _lid, ...rest } = data
  return { kind: 'update', resource, target, data: resourceData(registry, resource, rest, false) }
}

/**
 * Reads the rest of a draft the rules have passed into the store's operation. `lids` holds the
 * lids of the operations before it: a lid names one record in the whole request (JSON:API 1.1).
 */
export function completeOperation(
  registry: ResourceRegistry,
  draft: OperationDraft,
  limits: AtomicLimits,
  lids: Set<string>,
): AtomicOperation {
  switch (draft.kind) {
    case 'delete':
      return draft
    case 'update':
      return { kind: 'update', resource: draft.resource, target: draft.target, input: inputOf(draft.data) }
    case 'create': {
      const { resource, data } = draft
      const operation: AtomicOperation = { kind: 'create', resource, input: inputOf(data), lid: data.lid }
      if (data.lid !== undefined) {
        if (lids.has(data.lid)) throw httpError(400, `lid "${data.lid}" is used twice`, { pointer: '/data/lid' })
        lids.add(data.lid)
      }
      return operation
    }
    case 'to-one': {
      const { resource, target, relationship, value } = draft
      const related = registry.get(resource.relationships[relationship]?.target as string)
      const toOne = { [relationship]: value === null ? null : refOf(related, value, '/data') }
      return { kind: 'update', resource, target, input: { attributes: {}, toOne }, relationship }
    }
    case 'to-many': {
      const { resource, target, relationship, change } = draft
      const related = registry.get(resource.relationships[relationship]?.target as string)
      checkMemberCount(draft.members.length, limits.maxRelationshipIds)
      const members = draft.members.map((member, i) => refOf(related, member, `/data/${i}`))
      return { kind: 'to-many', resource, target, relationship, members, change }
    }
  }
}

/** How much one atomic request may carry. */
export interface AtomicLimits {
  readonly maxOperations: number
  /** Identifiers in one to-many operation. */
  readonly maxRelationshipIds: number
  /** Identifiers in all the to-many operations together: what the store's work grows with. */
  readonly maxAtomicIds: number
}

/**
 * The operations of an Atomic Operations document, each still to be read (draftOperation, then
 * completeOperation, under atOperation): what is checked here is the document as a whole.
 */
export function atomicOperations(body: unknown, limits: AtomicLimits): readonly unknown[] {
  const { maxOperations } = limits
  if (isObject(body) && (body.data !== undefined || body.included !== undefined)) {
    throw httpError(400, `An atomic document carries "${OPERATIONS}" and no data or included`, {
      pointer: body.data !== undefined ? '/data' : '/included',
    })
  }
  const operations = isObject(body) ? body[OPERATIONS] : undefined
  if (!Array.isArray(operations) || operations.length === 0) {
    throw httpError(400, `The body must be an object whose "${OPERATIONS}" member is a non-empty array`, {
      pointer: `/${OPERATIONS}`,
    })
  }
  if (operations.length > maxOperations) {
    throw httpError(400, `A request takes at most ${maxOperations} operations (got ${operations.length})`, {
      pointer: `/${OPERATIONS}`,
    })
  }
  // Counted before any operation is read: writing each identifier costs the store some 20 µs.
  let ids = 0
  for (const operation of operations)
    if (isObject(operation) && Array.isArray(operation.data)) ids += operation.data.length
  if (ids > limits.maxAtomicIds) {
    throw httpError(
      400,
      `A request takes at most ${limits.maxAtomicIds} resource identifiers in all its operations (got ${ids})`,
      { pointer: `/${OPERATIONS}` },
    )
  }
  return operations
}

/** What `read` gives, or its failure with its pointers moved under operation `index`. */
export function atOperation<T>(index: number, read: () => T): T {
  try {
    return read()
  } catch (error) {
    throw error instanceof JsonApiError ? underOperation(error, index) : error
  }
}
