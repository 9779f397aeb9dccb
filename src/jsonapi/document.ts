import type { ResourceDescription } from '../resources/description'
import type { ResourceRegistry } from '../resources/registry'
import type { Id, StoredRecord } from '../store/store'

export interface ResourceIdentifier {
  readonly type: string
  readonly id: string
}

export type RelationshipObject =
  | { readonly meta: { readonly included: false } }
  | { readonly data: ResourceIdentifier | null | readonly ResourceIdentifier[] }

export interface ResourceObject {
  readonly id: string
  readonly type: string
  readonly attributes: Readonly<Record<string, string>>
  readonly relationships: Readonly<Record<string, RelationshipObject>>
}

const notIncluded: RelationshipObject = Object.freeze({ meta: Object.freeze({ included: false as const }) })
const unlinkedByType = new Map<string, Readonly<Record<string, RelationshipObject>>>()

/** Every relationship as `{"meta": {"included": false}}`: lists, create and update answers, included records. */
function unlinked(resource: ResourceDescription): Readonly<Record<string, RelationshipObject>> {
  let relationships = unlinkedByType.get(resource.type)
  if (!relationships) {
    relationships = Object.freeze(
      Object.fromEntries(Object.keys(resource.relationships).map((name) => [name, notIncluded])),
    )
    unlinkedByType.set(resource.type, relationships)
  }
  return relationships
}

/** A resource object whose relationships carry no linkage (interface.md rule 1). */
export function unlinkedResource(resource: ResourceDescription, record: StoredRecord): ResourceObject {
  return {
    id: String(record.id),
    type: resource.type,
    attributes: record.attributes,
    relationships: unlinked(resource),
  }
}

/**
 * A resource object with linkage for every relationship (interface.md rule 2). `toMany` holds the
 * related ids of each to-many relationship.
 */
export function linkedResource(
  registry: ResourceRegistry,
  resource: ResourceDescription,
  record: StoredRecord,
  toMany: Readonly<Record<string, readonly Id[]>>,
): ResourceObject {
  const relationships: Record<string, RelationshipObject> = {}
  for (const [name, relationship] of Object.entries(resource.relationships)) {
    const type = registry.get(relationship.target).type
    if (relationship.kind === 'to-one') {
      const id = record.toOne[name]
      relationships[name] = { data: id === null || id === undefined ? null : { type, id: String(id) } }
    } else {
      relationships[name] = { data: (toMany[name] ?? []).map((id) => ({ type, id: String(id) })) }
    }
  }
  return { id: String(record.id), type: resource.type, attributes: record.attributes, relationships }
}

export interface SingleDocument {
  readonly data: ResourceObject
  readonly included?: readonly ResourceObject[]
}
