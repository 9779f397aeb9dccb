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

interface JsonTemplate {
  readonly type: string
  readonly attributeKeys: readonly [name: string, key: string][]
  readonly tail: string
}
const templates = new Map<string, JsonTemplate>()

/**
 * The JSON text of `unlinkedResource(resource, record)`, assembled from fragments prepared once
 * per type: a list renders thousands of these, and skipping the objects is several times faster.
 */
export function unlinkedResourceJson(resource: ResourceDescription, record: StoredRecord): string {
  let template = templates.get(resource.type)
  if (!template) {
    template = {
      type: JSON.stringify(resource.type),
      attributeKeys: Object.keys(resource.attributes).map((name, i) => [
        name,
        `${i > 0 ? ',' : ''}${JSON.stringify(name)}:`,
      ]),
      tail: `},"relationships":${JSON.stringify(unlinked(resource))}}`,
    }
    templates.set(resource.type, template)
  }
  // Ids are integers: their text needs no escaping.
  let json = `{"id":"${record.id}","type":${template.type},"attributes":{`
  for (const [name, key] of template.attributeKeys) json += key + JSON.stringify(record.attributes[name])
  return json + template.tail
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
