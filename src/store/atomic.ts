import type { ResourceDescription } from '../model/description'
import type { Id } from '../model/record'
import type {
  AtomicFailure,
  AtomicInput,
  AtomicOperation,
  AtomicOptions,
  AtomicResult,
  AtomicTarget,
  DeleteResult,
  RecordInput,
  RecordRef,
  Stale,
  TargetState,
  ToManyChange,
  ToManyResult,
  WriteResult,
} from '../model/writes'

/**
 * The writes of a backend inside one transaction it holds open, each awaited before the next: what
 * an asynchronous backend (a pooled client, one connection per transaction) implements.
 */
export interface TransactionWriter {
  create(resource: ResourceDescription, input: RecordInput): Promise<WriteResult>
  update(resource: ResourceDescription, id: Id, input: RecordInput): Promise<WriteResult | null>
  delete(resource: ResourceDescription, id: Id): Promise<DeleteResult>
  changeToMany(request: ToManyRequest): Promise<ToManyResult>
  /**
   * A conditional batch's target as it is stored, read in the batch's transaction before any write
   * and held there as the write would hold it, so that no other writer changes it before the batch does.
   */
  read(target: AtomicTarget): Promise<TargetState>
}

/** A change of the members of a to-many relationship (Store.changeToMany's arguments, as one). */
export interface ToManyRequest {
  readonly resource: ResourceDescription
  readonly id: Id
  readonly relationship: string
  readonly ids: readonly Id[]
  readonly change: ToManyChange
}

/**
 * The same writes answered at once, for a backend whose transaction must not yield to the event
 * loop (SQLite: one connection, whose other users would otherwise read inside the open transaction).
 */
export type SyncWriter = {
  [K in keyof TransactionWriter]: (
    ...args: Parameters<TransactionWriter[K]>
  ) => Awaited<ReturnType<TransactionWriter[K]>>
}

/** Thrown to undo a whole atomic batch: the operation at `index` failed. */
export class AtomicAbort extends Error {
  constructor(
    readonly index: number,
    readonly failure: AtomicFailure,
  ) {
    super(`atomic operation ${index} failed: ${failure.kind}`)
  }
}

/** One write an atomic batch asks of the backend, and (below) what the backend answers. */
type Step =
  | { readonly kind: 'create'; readonly resource: ResourceDescription; readonly input: RecordInput }
  | { readonly kind: 'update'; readonly resource: ResourceDescription; readonly id: Id; readonly input: RecordInput }
  | { readonly kind: 'delete'; readonly resource: ResourceDescription; readonly id: Id }
  | ({ readonly kind: 'to-many' } & ToManyRequest)
  | { readonly kind: 'read'; readonly target: AtomicTarget }
type StepResult = WriteResult | null | DeleteResult | ToManyResult | TargetState

/**
 * The batch as a sequence of steps: it yields each write and is resumed with its result. Written
 * once for both kinds of backend: runAtomic drives it at once, runAtomicAsync awaits each step. A
 * conditional batch first reads its targets, and stops ('stale') before any write if its
 * expectation refuses them.
 */
function* atomicSteps(
  operations: readonly AtomicOperation[],
  { expect, targets = [] }: AtomicOptions,
): Generator<Step, AtomicResult[] | Stale, StepResult> {
  if (expect) {
    const states: TargetState[] = []
    for (const target of targets) states.push((yield { kind: 'read', target }) as TargetState)
    if (!expect(states)) return 'stale'
  }
  const lids = new Map<string, { type: string; id: Id }>()
  const results: AtomicResult[] = []
  for (const [index, operation] of operations.entries()) {
    const fail = (failure: AtomicFailure): never => {
      throw new AtomicAbort(index, failure)
    }
    const resolve = (ref: RecordRef, type: string): Id => {
      if ('id' in ref) return ref.id
      const found = lids.get(ref.lid)
      return found && found.type === type ? found.id : fail({ kind: 'unknown-lid', lid: ref.lid })
    }
    const inputOf = (resource: ResourceDescription, input: AtomicInput): RecordInput => {
      const toOne: Record<string, Id | null> = {}
      for (const [name, ref] of Object.entries(input.toOne)) {
        const target = resource.relationships[name]?.target ?? ''
        toOne[name] = ref === null ? null : resolve(ref, target)
      }
      return { attributes: input.attributes, toOne }
    }
    const { resource } = operation
    if (operation.kind === 'create') {
      // Each step's result is the one its kind answers (see answer()).
      const result = (yield { kind: 'create', resource, input: inputOf(resource, operation.input) }) as WriteResult
      if (!result.ok) fail({ kind: 'missing', relationships: result.missing })
      else {
        if (operation.lid !== undefined) lids.set(operation.lid, { type: resource.type, id: result.record.id })
        results.push({ kind: 'record', record: result.record })
      }
    } else if (operation.kind === 'update') {
      const id = resolve(operation.target, resource.type)
      const result = (yield {
        kind: 'update',
        resource,
        id,
        input: inputOf(resource, operation.input),
      }) as WriteResult | null
      if (!result) fail({ kind: 'not-found' })
      else if (!result.ok) fail({ kind: 'missing', relationships: result.missing })
      else results.push({ kind: 'record', record: result.record })
    } else if (operation.kind === 'delete') {
      const id = resolve(operation.target, resource.type)
      const result = (yield { kind: 'delete', resource, id }) as DeleteResult
      if (result.status === 'not-found') fail({ kind: 'not-found' })
      if (result.status === 'restricted') fail({ kind: 'restricted', id, by: result.by, count: result.count })
      results.push({ kind: 'none' })
    } else {
      const target = resource.relationships[operation.relationship]?.target ?? ''
      const ids = operation.members.map((ref) => resolve(ref, target))
      const id = resolve(operation.target, resource.type)
      const { relationship, change } = operation
      const result = (yield { kind: 'to-many', resource, id, relationship, ids, change }) as ToManyResult
      if (result.status === 'not-found') fail({ kind: 'not-found' })
      else if (result.status === 'missing') fail({ kind: 'missing-members', ids: result.ids })
      else results.push({ kind: 'members', members: result.members })
    }
  }
  return results
}

function answer<R>(step: Step, writer: SyncWriter | TransactionWriter): R {
  if (step.kind === 'create') return writer.create(step.resource, step.input) as R
  if (step.kind === 'update') return writer.update(step.resource, step.id, step.input) as R
  if (step.kind === 'delete') return writer.delete(step.resource, step.id) as R
  if (step.kind === 'read') return writer.read(step.target) as R
  return writer.changeToMany(step) as R
}

/**
 * Runs an atomic batch against a synchronous writer, in order, resolving lids to the ids the batch
 * assigned. Throws AtomicAbort at the first failure; the caller's transaction then undoes everything.
 * 'stale' when the options' expectation refused the targets: nothing was written.
 */
export function runAtomic(
  operations: readonly AtomicOperation[],
  writer: SyncWriter,
  options: AtomicOptions = {},
): AtomicResult[] | Stale {
  const steps = atomicSteps(operations, options)
  let next = steps.next()
  while (!next.done) next = steps.next(answer<StepResult>(next.value, writer))
  return next.value
}

/** The same against an asynchronous writer: each write awaited, in order, in the caller's one transaction. */
export async function runAtomicAsync(
  operations: readonly AtomicOperation[],
  writer: TransactionWriter,
  options: AtomicOptions = {},
): Promise<AtomicResult[] | Stale> {
  const steps = atomicSteps(operations, options)
  let next = steps.next()
  while (!next.done) next = steps.next(await answer<Promise<StepResult>>(next.value, writer))
  return next.value
}
