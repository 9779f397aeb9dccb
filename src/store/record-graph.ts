import type { ResourceDescription } from '../resources/description'
import type { Id, Linkage, RecordGraph, StoredRecord } from './store'

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
