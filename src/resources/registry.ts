import type { FilterDescription, ResourceDescription, ToOneRelationship } from '../model/description'
import { authors } from './authors'
import { bookCollections } from './book-collections'
import { books } from './books'

export type SearchDescription = Extract<FilterDescription, { kind: 'search' }>

/** The full-text search a type declares among its filters, if any (at most one). */
export function searchOf(resource: ResourceDescription): SearchDescription | undefined {
  for (const filter of Object.values(resource.filters)) if (filter.kind === 'search') return filter
  return undefined
}

/** A to-one relationship of another type that points at a type. */
export interface Dependent {
  readonly resource: ResourceDescription
  readonly name: string
  readonly relationship: ToOneRelationship
}

/** All resource types the service serves, with look-ups by the names clients use. */
export class ResourceRegistry {
  readonly all: readonly ResourceDescription[]
  private readonly byType = new Map<string, ResourceDescription>()
  private readonly dependentsByType = new Map<string, Dependent[]>()

  constructor(descriptions: readonly ResourceDescription[]) {
    this.all = descriptions
    for (const description of descriptions) this.byType.set(description.type, description)
    for (const description of descriptions) this.checkReferences(description)
  }

  get(type: string): ResourceDescription {
    const description = this.byType.get(type)
    if (!description) throw new Error(`unknown resource type ${type}`)
    return description
  }

  /**
   * The to-one relationships of other types that point at `type` (what deleting one affects):
   * found once per type, since every DELETE asks.
   */
  dependents(type: string): readonly Dependent[] {
    let found = this.dependentsByType.get(type)
    if (!found) {
      found = []
      for (const resource of this.all) {
        for (const [name, relationship] of Object.entries(resource.relationships)) {
          if (relationship.kind === 'to-one' && relationship.target === type)
            found.push({ resource, name, relationship })
        }
      }
      this.dependentsByType.set(type, found)
    }
    return found
  }

  /** The to-one relationship on the target that a to-many relationship is the inverse of. */
  inverseOf(resource: ResourceDescription, name: string): ToOneRelationship {
    const relationship = resource.relationships[name]
    if (relationship?.kind !== 'to-many') throw new Error(`${resource.type}.${name} is not a to-many relationship`)
    const inverse = this.get(relationship.target).relationships[relationship.inverse]
    if (inverse?.kind !== 'to-one') throw new Error(`${resource.type}.${name} has no to-one inverse`)
    return inverse
  }

  private checkReferences(resource: ResourceDescription): void {
    for (const [name, relationship] of Object.entries(resource.relationships)) {
      this.get(relationship.target)
      if (relationship.kind === 'to-many') this.inverseOf(resource, name)
    }
    for (const name of resource.defaultInclude) {
      if (!resource.relationships[name]) throw new Error(`${resource.type} includes unknown ${name}`)
    }
    for (const filter of Object.values(resource.filters)) {
      const known =
        filter.kind === 'search' ||
        (filter.kind === 'attribute'
          ? Object.hasOwn(resource.attributes, filter.attribute)
          : resource.relationships[filter.relationship]?.kind === 'to-one')
      if (!known) throw new Error(`${resource.type} has a filter on nothing it has`)
    }
    const searches = Object.values(resource.filters).filter((f) => f.kind === 'search')
    if (searches.length > 1) throw new Error(`${resource.type} declares more than one search`)
    for (const field of searchOf(resource)?.fields ?? []) {
      if ('attribute' in field) {
        if (!Object.hasOwn(resource.attributes, field.attribute)) {
          throw new Error(`${resource.type} searches unknown attribute ${field.attribute}`)
        }
        continue
      }
      // A related record is matched through its own type's search index.
      const relationship = resource.relationships[field.relationship]
      if (relationship?.kind !== 'to-one' || !searchOf(this.get(relationship.target))) {
        throw new Error(`${resource.type} searches ${field.relationship}, which is no searchable to-one relationship`)
      }
    }
    for (const name of Object.values(resource.plainFilters)) {
      if (!resource.filters[name]) throw new Error(`${resource.type} has a plain filter for unknown ${name}`)
    }
    for (const name of resource.sortable) {
      if (!Object.hasOwn(resource.attributes, name)) throw new Error(`${resource.type} sorts by unknown ${name}`)
    }
  }
}

export const resources = new ResourceRegistry([authors, bookCollections, books])
