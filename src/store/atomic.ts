import type { ResourceDescription } from '../resources/description'
import type {
  AtomicFailure,
  AtomicInput,
  AtomicOperation,
  AtomicResult,
  DeleteResult,
  Id,
  RecordInput,
  RecordRef,
  ToManyChange,
  ToManyResult,
  WriteResult,
} from './store'

/** The writes of a backend, run at once inside a transaction it holds open. */
export interface SyncWriter {
  create(resource: ResourceDescription, input: RecordInput): WriteResult
  update(resource: ResourceDescription, id: Id, input: RecordInput): WriteResult | null
  delete(resource: ResourceDescription, id: Id): DeleteResult
  changeToMany(
    resource: ResourceDescription,
    id: Id,
    relationship: string,
    ids: readonly Id[],
    change: ToManyChange,
  ): ToManyResult
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

/**
 * Runs an atomic batch against a writer, in order, resolving lids to the ids the batch assigned.
 * Throws AtomicAbort at the first failure; the caller's transaction then undoes everything.
 */
export function runAtomic(operations: readonly AtomicOperation[], writer: SyncWriter): AtomicResult[] {
  const lids = new Map<string, { type: string; id: Id }>()
  return operations.map((operation, index): AtomicResult => {
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
      const result = writer.create(resource, inputOf(resource, operation.input))
      if (!result.ok) return fail({ kind: 'missing', relationships: result.missing })
      if (operation.lid !== undefined) lids.set(operation.lid, { type: resource.type, id: result.record.id })
      return { kind: 'record', record: result.record }
    }
    if (operation.kind === 'update') {
      const result = writer.update(
        resource,
        resolve(operation.target, resource.type),
        inputOf(resource, operation.input),
      )
      if (!result) return fail({ kind: 'not-found' })
      if (!result.ok) return fail({ kind: 'missing', relationships: result.missing })
      return { kind: 'record', record: result.record }
    }
    if (operation.kind === 'delete') {
      const id = resolve(operation.target, resource.type)
      const result = writer.delete(resource, id)
      if (result.status === 'not-found') return fail({ kind: 'not-found' })
      if (result.status === 'restricted') return fail({ kind: 'restricted', id, by: result.by, count: result.count })
      return { kind: 'none' }
    }
    const target = resource.relationships[operation.relationship]?.target ?? ''
    const members = operation.members.map((ref) => resolve(ref, target))
    const id = resolve(operation.target, resource.type)
    const result = writer.changeToMany(resource, id, operation.relationship, members, operation.change)
    if (result.status === 'not-found') return fail({ kind: 'not-found' })
    if (result.status === 'missing') return fail({ kind: 'missing-members', ids: result.ids })
    return { kind: 'members', members: result.members }
  })
}
