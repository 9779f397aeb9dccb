import type { ResourceDescription } from '../model/description'
import type { IncludePlan, Linkage, Members, RecordGraph } from '../model/query'
import type { Id, StoredRecord } from '../model/record'
import type { ResourceRegistry } from '../resources/registry'

/** Builds a RecordGraph while a backend follows an include plan. */
export class GraphBuilder implements RecordGraph {
  readonly included: { resource: ResourceDescription; record: StoredRecord }[] = []
  // Keyed by type, then id: no string building on the hot path of a single GET.
  private readonly links = new Map<string, Map<Id, Record<string, Linkage>>>()
  private readonly seen = new Map<string, Set<Id>>()

  /** The primary records: they are never repeated in `included`. */
  constructor(primaryType: string, primaryIds: Iterable<Id>) {
    this.seen.set(primaryType, new Set(primaryIds))
  }

  link(type: string, id: Id, relationship: string, linkage: Linkage): void {
    let byId = this.links.get(type)
    if (!byId) {
      byId = new Map()
      this.links.set(type, byId)
    }
    let relationships = byId.get(id)
    if (!relationships) {
      relationships = Object.create(null) as Record<string, Linkage>
      byId.set(id, relationships)
    }
    relationships[relationship] = linkage
  }

  linkage(type: string, id: Id, relationship: string): Linkage | undefined {
    return this.links.get(type)?.get(id)?.[relationship]
  }

  include(resource: ResourceDescription, record: StoredRecord): void {
    let ids = this.seen.get(resource.type)
    if (!ids) {
      ids = new Set()
      this.seen.set(resource.type, ids)
    }
    if (ids.has(record.id)) return
    ids.add(record.id)
    this.included.push({ resource, record })
  }
}

/** Whether a plan follows only to-one relationships and nothing below them: a single GET's default. */
export function followsOnlyToOne(resource: ResourceDescription, plan: IncludePlan): boolean {
  for (const [name, node] of plan) {
    const relationship = resource.relationships[name]
    if (relationship && (relationship.kind !== 'to-one' || node.children.size > 0)) return false
  }
  return true
}

/**
 * The graph of one record along a plan for which followsOnlyToOne holds (a book with its author and
 * collection), read by one lookup per included relationship: what followPlan would give, without
 * its generator and maps, which cost half as much again as the reads of a single GET.
 */
export function toOneGraph(
  registry: ResourceRegistry,
  resource: ResourceDescription,
  record: StoredRecord,
  plan: IncludePlan,
  find: (type: string, id: Id) => StoredRecord | null,
): RecordGraph {
  const linkages: Record<string, Linkage> = Object.create(null)
  const included: { resource: ResourceDescription; record: StoredRecord }[] = []
  for (const [name, node] of plan) {
    const relationship = resource.relationships[name]
    if (!relationship) continue
    const id = record.toOne[name] ?? null
    linkages[name] = id
    if (!node.include || id === null) continue
    const type = relationship.target
    // The primary record is never included, nor a record twice.
    if (type === resource.type && id === record.id) continue
    if (included.some((entry) => entry.resource.type === type && entry.record.id === id)) continue
    const found = find(type, id)
    if (found) included.push({ resource: registry.get(type), record: found })
  }
  return {
    included,
    linkage: (type, id, name) => (type === resource.type && id === record.id ? linkages[name] : undefined),
  }
}

/** A read the include traversal needs: records of a type by id, or the members of owners. */
export type GraphRead =
  | { readonly kind: 'records'; readonly type: string; readonly ids: readonly Id[] }
  | { readonly kind: 'members'; readonly type: string; readonly relationship: string; readonly owners: readonly Id[] }

/** What a GraphRead answers: the records found, or the member ids by owner. */
export type GraphAnswer = StoredRecord[] | Members

/**
 * Follows `plan` from `records` into `graph`: one read per relationship and level, never one per
 * record. It yields each read it needs rather than making it, so that the one traversal serves a
 * synchronous backend (SQLite, inside its read transaction: see followSync) and an asynchronous one
 * (PostgreSQL: see followAsync) alike.
 */
export function* followPlan(
  registry: ResourceRegistry,
  resource: ResourceDescription,
  records: readonly StoredRecord[],
  plan: IncludePlan,
  graph: GraphBuilder,
): Generator<GraphRead, void, GraphAnswer> {
  for (const [name, node] of plan) {
    const relationship = resource.relationships[name]
    if (!relationship) continue
    const target = registry.get(relationship.target)
    let reached: StoredRecord[]
    if (relationship.kind === 'to-one') {
      for (const record of records) graph.link(resource.type, record.id, name, record.toOne[name] ?? null)
      if (!node.include && node.children.size === 0) continue
      const ids = new Set<Id>()
      for (const record of records) {
        const id = record.toOne[name]
        if (id != null) ids.add(id)
      }
      reached = (yield { kind: 'records', type: target.type, ids: [...ids] }) as StoredRecord[]
    } else {
      const owners = records.map((r) => r.id)
      const members = (yield { kind: 'members', type: resource.type, relationship: name, owners }) as Members
      for (const record of records) graph.link(resource.type, record.id, name, members.get(record.id) ?? [])
      if (!node.include && node.children.size === 0) continue
      reached = (yield { kind: 'records', type: target.type, ids: [...members.values()].flat() }) as StoredRecord[]
    }
    if (node.include) for (const record of reached) graph.include(target, record)
    if (node.children.size > 0) yield* followPlan(registry, target, reached, node.children, graph)
  }
}

/** Runs a traversal whose reads answer at once. */
export function followSync(
  traversal: Generator<GraphRead, void, GraphAnswer>,
  read: (r: GraphRead) => GraphAnswer,
): void {
  for (let step = traversal.next(); !step.done; ) step = traversal.next(read(step.value))
}

/** Runs a traversal whose reads are awaited, one after another. */
export async function followAsync(
  traversal: Generator<GraphRead, void, GraphAnswer>,
  read: (r: GraphRead) => Promise<GraphAnswer>,
): Promise<void> {
  for (let step = traversal.next(); !step.done; ) step = traversal.next(await read(step.value))
}
