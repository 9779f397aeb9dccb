import type { ResourceDescription } from '../../model/description'
import type { Id } from '../../model/record'
import type { AtomicInput, AtomicOperation, RecordRef } from '../../model/writes'
import type { ResourceRegistry } from '../../resources/registry'
import type { ToManyRequest } from '../atomic'
import { quote } from '../sql/table'
import type { PostgresReader, Queryable } from './reader'

/**
 * The one order in which the PostgreSQL store's writes lock rows, so that two writes of the same
 * rows wait for each other rather than deadlock: a type before the types it refers to (books, then
 * authors and collections), and within a type, ids ascending. A book's own UPDATE already goes
 * that way (its row, then its foreign keys' FOR KEY SHARE on its author and collection, in the
 * order the table declares them, which is the registry's: the tie between authors and collections
 * follows it). A write that
 * locks more than one row (a to-many change, a collection's delete that sets its books' collection
 * to null, an atomic batch) takes them all first, through a LockPlan, before its first statement.
 */

/** Row lock modes, weakest first: a foreign key's on what it refers to, an update's, a delete's. */
const MODES = ['FOR KEY SHARE', 'FOR NO KEY UPDATE', 'FOR UPDATE'] as const
export type RowLock = (typeof MODES)[number]

const stronger = (a: RowLock, b: RowLock): RowLock => (MODES.indexOf(a) >= MODES.indexOf(b) ? a : b)

const orders = new WeakMap<ResourceRegistry, readonly ResourceDescription[]>()

/** The types in locking order: deeper in the chain of references first, then as registered. */
export function lockingOrder(registry: ResourceRegistry): readonly ResourceDescription[] {
  let order = orders.get(registry)
  if (order) return order
  const depth = (resource: ResourceDescription, seen: ReadonlySet<string>): number =>
    Math.max(
      0,
      ...Object.values(resource.relationships).map((r) =>
        r.kind === 'to-one' && !seen.has(r.target)
          ? 1 + depth(registry.get(r.target), new Set([...seen, r.target]))
          : 0,
      ),
    )
  const depths = new Map(registry.all.map((resource) => [resource, depth(resource, new Set([resource.type]))]))
  const position = new Map(registry.all.map((resource, index) => [resource, index]))
  const at = (map: Map<ResourceDescription, number>, resource: ResourceDescription) => map.get(resource) ?? 0
  order = [...registry.all].sort((a, b) => at(depths, b) - at(depths, a) || at(position, a) - at(position, b))
  orders.set(registry, order)
  return order
}

interface Wanted {
  readonly ids: Set<Id>
  /** Rows whose column holds one of these ids: the members of an owner, by the owner's to-one column. */
  readonly members: Map<string, Set<Id>>
  lock: RowLock
}

/**
 * The rows one write will lock, gathered, then taken in the one order (`take`): each type's in
 * one statement, ids ascending, in the strongest mode any of its rows needs (taking a weaker lock
 * first and a stronger one later could deadlock with another write doing the same).
 */
export class LockPlan {
  private readonly wanted = new Map<string, Wanted>()

  constructor(
    private readonly reader: PostgresReader,
    private readonly registry: ResourceRegistry,
  ) {}

  private entry(type: string, lock: RowLock): Wanted {
    let found = this.wanted.get(type)
    if (!found) {
      found = { ids: new Set(), members: new Map(), lock }
      this.wanted.set(type, found)
    }
    found.lock = stronger(found.lock, lock)
    return found
  }

  rows(type: string, ids: Iterable<Id>, lock: RowLock): this {
    const entry = this.entry(type, lock)
    for (const id of ids) entry.ids.add(id)
    return this
  }

  /** The rows of `type` whose `column` holds `owner`. */
  membersOf(type: string, column: string, owner: Id, lock: RowLock): this {
    const entry = this.entry(type, lock)
    const owners = entry.members.get(column) ?? new Set()
    owners.add(owner)
    entry.members.set(column, owners)
    return this
  }

  /** An update of the record: its row, and what it will refer to. */
  update(resource: ResourceDescription, id: Id, toOne: Readonly<Record<string, Id | null>>): this {
    this.rows(resource.type, [id], 'FOR NO KEY UPDATE')
    return this.refers(resource, toOne)
  }

  /** What a new or changed record will refer to (its foreign keys' locks). */
  refers(resource: ResourceDescription, toOne: Readonly<Record<string, Id | null>>): this {
    for (const [name, id] of Object.entries(toOne)) {
      const target = resource.relationships[name]?.target
      if (target && id !== null) this.rows(target, [id], 'FOR KEY SHARE')
    }
    return this
  }

  /** A delete of the record: its row, and the rows its delete sets to null (a collection's books). */
  delete(resource: ResourceDescription, id: Id): this {
    for (const { resource: by, relationship } of this.registry.dependents(resource.type)) {
      if (relationship.onTargetDelete === 'nullify')
        this.membersOf(by.type, relationship.column, id, 'FOR NO KEY UPDATE')
    }
    return this.rows(resource.type, [id], 'FOR UPDATE')
  }

  /**
   * A change of a to-many relationship: the records it names and, for a replace, the members it
   * may drop, then the owner (FOR UPDATE: no record joins it until the change commits, so the
   * members it answers are its own).
   */
  toMany({ resource, id, relationship, ids, change }: ToManyRequest): this {
    const target = resource.relationships[relationship]?.target ?? ''
    this.rows(target, ids, 'FOR NO KEY UPDATE')
    if (change === 'replace') {
      this.membersOf(target, this.registry.inverseOf(resource, relationship).column, id, 'FOR NO KEY UPDATE')
    }
    return this.rows(resource.type, [id], 'FOR UPDATE')
  }

  /**
   * What an atomic batch's operations lock, for the records they name by id (a record made in the
   * batch, named by lid, is the batch's alone). A conditional batch's reads of its targets lock
   * nothing more: its targets are records its operations change.
   */
  batch(operations: readonly AtomicOperation[]): this {
    const known = (ref: RecordRef): Id | undefined => ('id' in ref ? ref.id : undefined)
    const knownRefs = (input: AtomicInput): Record<string, Id | null> => {
      const ids: Record<string, Id | null> = {}
      for (const [name, ref] of Object.entries(input.toOne)) {
        const id = ref === null ? null : known(ref)
        if (id !== undefined) ids[name] = id
      }
      return ids
    }
    for (const operation of operations) {
      const { resource } = operation
      if (operation.kind === 'create') {
        this.refers(resource, knownRefs(operation.input))
        continue
      }
      const id = known(operation.target)
      if (operation.kind === 'update') {
        if (id === undefined) this.refers(resource, knownRefs(operation.input))
        else this.update(resource, id, knownRefs(operation.input))
      } else if (operation.kind === 'delete') {
        if (id !== undefined) this.delete(resource, id)
      } else {
        const members = operation.members.flatMap((ref) => known(ref) ?? [])
        const { relationship, change } = operation
        if (id !== undefined) this.toMany({ resource, id, relationship, ids: members, change })
        else this.rows(resource.relationships[relationship]?.target ?? '', members, 'FOR NO KEY UPDATE')
      }
    }
    return this
  }

  /**
   * Locks the rows, type after type in locking order; the ids found of each type. A record may join
   * an owner between the lock of the owner's members and the owner's own lock (which then keeps
   * any other from joining): those are locked last, out of order, so without waiting (NOWAIT); one
   * that another write holds fails the write with 55P03, and it runs again from the start
   * (postgres/retries.ts), when it finds that record among the members.
   */
  async take(tx: Queryable): Promise<Map<string, Set<Id>>> {
    const found = new Map<string, Set<Id>>()
    const lock = async (resource: ResourceDescription, wanted: Wanted, ids: boolean, wait: string) => {
      const values: unknown[] = ids ? [[...wanted.ids]] : []
      const where = ids ? [`"id" = ANY($1::bigint[])`] : []
      for (const [column, owners] of wanted.members) {
        values.push([...owners])
        where.push(`${quote(column)} = ANY($${values.length}::bigint[])`)
      }
      const table = this.reader.table(resource.type).name
      const rows = await this.reader.rows(
        tx,
        `SELECT "id" FROM ${table} WHERE ${where.join(' OR ')} ORDER BY "id" ${wanted.lock}${wait}`,
        values,
      )
      const ofType = found.get(resource.type) ?? new Set()
      for (const row of rows) ofType.add(Number(row.id))
      found.set(resource.type, ofType)
    }
    const order = lockingOrder(this.registry).flatMap((resource) => {
      const wanted = this.wanted.get(resource.type)
      return wanted ? [{ resource, wanted }] : []
    })
    for (const { resource, wanted } of order) await lock(resource, wanted, true, '')
    for (const { resource, wanted } of order)
      if (wanted.members.size > 0) await lock(resource, wanted, false, ' NOWAIT')
    return found
  }
}
