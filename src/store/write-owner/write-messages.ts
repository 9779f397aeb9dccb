import type { ResourceDescription } from '../../model/description'
import type { Id } from '../../model/record'
import type {
  AtomicFailure,
  AtomicOperation,
  AtomicOutcome,
  DeleteResult,
  RecordInput,
  ToManyChange,
  ToManyResult,
  WriteResult,
} from '../../model/writes'
import type { ResourceRegistry } from '../../resources/registry'
import { type StoreFaultReason, StoreUnavailableError } from '../faults'
import type { Store } from '../store'

/*
 * The messages between a worker and the process that owns the writes (remote-writes.ts,
 * write-owner.ts): the Store's unconditional writes as plain data. Resource descriptions travel as
 * their type name, errors as what the HTTP layer needs to answer them the same way.
 */

/** An atomic operation with its resource named by type. */
export type AtomicOperationMessage = Omit<AtomicOperation, 'resource'> & { readonly type: string }

export type WriteCall =
  | { readonly method: 'create'; readonly type: string; readonly input: RecordInput }
  | { readonly method: 'update'; readonly type: string; readonly id: Id; readonly input: RecordInput }
  | { readonly method: 'delete'; readonly type: string; readonly id: Id }
  | {
      readonly method: 'changeToMany'
      readonly type: string
      readonly id: Id
      readonly relationship: string
      readonly ids: readonly Id[]
      readonly change: ToManyChange
    }
  | { readonly method: 'atomic'; readonly operations: readonly AtomicOperationMessage[] }

export interface WriteRequest {
  readonly kind: 'write'
  readonly seq: number
  readonly call: WriteCall
}

/** A result whose `by` (a restricted delete) is named by type. */
type Named<T> = T extends { readonly by: ResourceDescription } ? Omit<T, 'by'> & { readonly by: string } : T

export type AtomicFailureMessage = Named<AtomicFailure>
export type AtomicOutcomeMessage =
  | Extract<AtomicOutcome, { ok: true }>
  | { readonly ok: false; readonly index: number; readonly failure: AtomicFailureMessage }

export type WriteValue = WriteResult | null | Named<DeleteResult> | ToManyResult | AtomicOutcomeMessage

export type WriteFault =
  | {
      readonly name: 'StoreUnavailableError'
      readonly reason: StoreFaultReason
      readonly code: string
      readonly message: string
    }
  | { readonly name: 'Error'; readonly message: string }

export type WriteReply =
  | { readonly kind: 'written'; readonly seq: number; readonly ok: true; readonly value: WriteValue }
  | { readonly kind: 'written'; readonly seq: number; readonly ok: false; readonly fault: WriteFault }

export function isWriteRequest(message: unknown): message is WriteRequest {
  return typeof message === 'object' && message !== null && (message as { kind?: unknown }).kind === 'write'
}

export function isWriteReply(message: unknown): message is WriteReply {
  return typeof message === 'object' && message !== null && (message as { kind?: unknown }).kind === 'written'
}

function nameBy<T extends object>(value: T): Named<T> {
  if (!('by' in value)) return value as Named<T>
  const { by, ...rest } = value as T & { by: ResourceDescription }
  return { ...rest, by: by.type } as Named<T>
}

function resolveBy<T extends object>(value: Named<T> | T, registry: ResourceRegistry): T {
  if (!('by' in value)) return value as T
  const { by, ...rest } = value as { by: string }
  return { ...rest, by: registry.get(by) } as T
}

/** Runs a call on the store that owns the writes; the value as a message carries it. */
export async function perform(store: Store, registry: ResourceRegistry, call: WriteCall): Promise<WriteValue> {
  switch (call.method) {
    case 'create':
      return store.create(registry.get(call.type), call.input)
    case 'update':
      return store.update(registry.get(call.type), call.id, call.input)
    case 'delete':
      return nameBy(await store.delete(registry.get(call.type), call.id))
    case 'changeToMany':
      return store.changeToMany(registry.get(call.type), call.id, call.relationship, call.ids, call.change)
    case 'atomic': {
      const operations = call.operations.map(({ type, ...rest }) => ({ ...rest, resource: registry.get(type) }))
      const outcome = await store.atomic(operations as AtomicOperation[])
      return outcome.ok ? outcome : { ...outcome, failure: nameBy(outcome.failure) }
    }
  }
}

/** An atomic batch as a message. */
export function atomicCall(operations: readonly AtomicOperation[]): WriteCall {
  return {
    method: 'atomic',
    operations: operations.map(({ resource, ...rest }) => ({ ...rest, type: resource.type })),
  }
}

export function deleteResult(value: WriteValue, registry: ResourceRegistry): DeleteResult {
  return resolveBy<DeleteResult>(value as Named<DeleteResult>, registry)
}

export function atomicOutcome(value: WriteValue, registry: ResourceRegistry): AtomicOutcome {
  const outcome = value as AtomicOutcomeMessage
  return outcome.ok ? outcome : { ...outcome, failure: resolveBy<AtomicFailure>(outcome.failure, registry) }
}

/** What an error thrown by the owner's store becomes on the way to the worker. */
export function faultOf(error: unknown): WriteFault {
  if (error instanceof StoreUnavailableError) {
    return { name: 'StoreUnavailableError', reason: error.reason, code: error.code, message: error.message }
  }
  return { name: 'Error', message: error instanceof Error ? error.message : String(error) }
}

/** The error the worker throws for a fault, as its own store would have thrown it. */
export function errorOf(fault: WriteFault): Error {
  return fault.name === 'StoreUnavailableError'
    ? new StoreUnavailableError(fault.reason, fault.code, fault.message)
    : new Error(fault.message)
}
