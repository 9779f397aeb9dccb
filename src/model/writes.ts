import type { ResourceDescription } from './description'
import type { Id, StoredRecord } from './record'

/*
 * What a write asks of the store and what it answers, atomic batches included: the outcomes the
 * service's rules turn into errors, whichever backend wrote.
 */

/** The fields a write sets; absent keys are left as they are (update) or take defaults (create). */
export interface RecordInput {
  readonly attributes: Readonly<Record<string, string>>
  /** A relationship name mapped to the target id, or null to clear it. */
  readonly toOne: Readonly<Record<string, Id | null>>
}

export type WriteResult =
  | { readonly ok: true; readonly record: StoredRecord }
  /** Names of the to-one relationships whose target does not exist (required ones given as null too). */
  | { readonly ok: false; readonly missing: readonly string[] }

export type DeleteResult =
  | { readonly status: 'deleted' }
  | { readonly status: 'not-found' }
  /** Other records still point at this one through a relationship that forbids deleting it. */
  | { readonly status: 'restricted'; readonly by: ResourceDescription; readonly count: number }

export type ToManyChange = 'add' | 'remove' | 'replace'

/**
 * What a conditional write (HTTP If-Match) expects of the current state of what it changes: the
 * write goes ahead only if this returns true. The store calls it inside the write's own
 * transaction, after reading the state there, so that of two writers expecting the same state
 * only the first succeeds; a check made before the write could pass for both.
 */
export type Expectation<T> = (current: T) => boolean

/** A conditional write found a state its Expectation refused: nothing was written. */
export type Stale = 'stale'

/**
 * The options of a write that may be conditional: with `expect`, it goes ahead only if that accepts.
 * The Store's writes take them as `O & WriteOptions<T>`: O, inferred, tells whether an expectation
 * was given (StaleIf); the second half types the expectation's argument.
 */
export interface WriteOptions<T> {
  readonly expect?: Expectation<T> | undefined
}

/** A write called without options: unconditional, so never 'stale'. */
export type NoOptions = Record<never, never>

/**
 * What a write may answer besides its result: 'stale' when its options may hold an expectation,
 * nothing more when they hold none (so an unconditional write's result need not be told from 'stale').
 */
export type StaleIf<O> = O extends { readonly expect: Expectation<never> }
  ? Stale
  : O extends { readonly expect?: undefined }
    ? never
    : Stale

/** A backend's answer to a conditional write, typed as the Store promises it for these options. */
export function asConditional<T, O>(answer: Promise<T | Stale>): Promise<T | StaleIf<O>> {
  // Sound: a backend answers 'stale' only when an expectation refused, and O then holds one.
  return answer as Promise<T | StaleIf<O>>
}

export type ToManyResult =
  | { readonly status: 'changed'; readonly members: readonly Id[] }
  /** No record has the owner's id. */
  | { readonly status: 'not-found' }
  /** These related records do not exist. */
  | { readonly status: 'missing'; readonly ids: readonly Id[] }

/** A record named by its id, or by the `lid` an earlier operation of the same atomic batch gave it. */
export type RecordRef = { readonly id: Id } | { readonly lid: string }

/** What an atomic operation writes: RecordInput whose references may be lids. */
export interface AtomicInput {
  readonly attributes: Readonly<Record<string, string>>
  readonly toOne: Readonly<Record<string, RecordRef | null>>
}

export type AtomicOperation =
  | {
      readonly kind: 'create'
      readonly resource: ResourceDescription
      readonly lid?: string
      readonly input: AtomicInput
    }
  | {
      readonly kind: 'update'
      readonly resource: ResourceDescription
      readonly target: RecordRef
      readonly input: AtomicInput
      /** Set for a relationship operation: its result is `{}`, not the record. */
      readonly relationship?: string
    }
  | { readonly kind: 'delete'; readonly resource: ResourceDescription; readonly target: RecordRef }
  | {
      readonly kind: 'to-many'
      readonly resource: ResourceDescription
      readonly target: RecordRef
      readonly relationship: string
      readonly members: readonly RecordRef[]
      readonly change: ToManyChange
    }

export type AtomicResult =
  | { readonly kind: 'record'; readonly record: StoredRecord }
  | { readonly kind: 'members'; readonly members: readonly Id[] }
  | { readonly kind: 'none' }

/** Why an atomic batch stopped: the first operation that could not be done. */
export type AtomicFailure =
  | { readonly kind: 'not-found' }
  | { readonly kind: 'unknown-lid'; readonly lid: string }
  | { readonly kind: 'missing'; readonly relationships: readonly string[] }
  | { readonly kind: 'missing-members'; readonly ids: readonly Id[] }
  | { readonly kind: 'restricted'; readonly id: Id; readonly by: ResourceDescription; readonly count: number }

/**
 * What the preconditions of an atomic batch (HTTP If-Match, If-None-Match) are compared with: a
 * record stored before the batch, or the members of one's to-many relationship. `removing`: the
 * batch deletes the record (a backend that locks it locks it as a delete would).
 */
export type AtomicTarget =
  | { readonly kind: 'record'; readonly resource: ResourceDescription; readonly id: Id; readonly removing: boolean }
  | { readonly kind: 'members'; readonly resource: ResourceDescription; readonly id: Id; readonly relationship: string }

/**
 * A target's state as the batch's own transaction reads it before its first write: the record, or
 * the members in id order; null when no record has the id (its operation then fails as it would).
 */
export type TargetState = StoredRecord | readonly Id[] | null

/**
 * The options of an atomic batch that may be conditional: with `expect`, the batch reads `targets`
 * inside its transaction before any operation and runs only if `expect` accepts their states (in
 * the same order); otherwise it answers 'stale' and writes nothing.
 */
export interface AtomicOptions extends WriteOptions<readonly TargetState[]> {
  readonly targets?: readonly AtomicTarget[] | undefined
}

export type AtomicOutcome =
  | { readonly ok: true; readonly results: readonly AtomicResult[] }
  | { readonly ok: false; readonly index: number; readonly failure: AtomicFailure }
