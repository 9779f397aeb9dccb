import type { ResourceDescription, ToOneRelationship } from '../../model/description'

/**
 * The indexes both backends have for a type, by the same names and columns: what sorting needs.
 * (Part of the schema generators, src/store/sqlite/ddl.ts and src/store/postgres/ddl.ts.)
 */

/** A type's to-one relationships, by name, in description order. */
export function toOnes(resource: ResourceDescription): [name: string, relationship: ToOneRelationship][] {
  return Object.entries(resource.relationships).flatMap(([name, r]) =>
    r.kind === 'to-one' ? [[name, r] as [string, ToOneRelationship]] : [],
  )
}

/**
 * The indexes that serve sorting by an attribute (and keyset pages in that order, and its exact
 * filter), and the related records of one record in that order.
 */
export function sortIndexSql(resource: ResourceDescription): string[] {
  const columnOf = (name: string) => resource.attributes[name]?.column ?? name
  return [
    ...resource.sortable.map((s) => `CREATE INDEX ${resource.table}_${s} ON ${resource.table} (${columnOf(s)}, id);`),
    ...toOnes(resource).flatMap(([name, r]) => relatedSortIndexSql(resource, name, r)),
  ]
}

export function relatedSortIndexSql(
  resource: ResourceDescription,
  name: string,
  relationship: ToOneRelationship,
): string[] {
  const columnOf = (sortable: string) => resource.attributes[sortable]?.column ?? sortable
  return resource.sortable.map(
    (s) =>
      `CREATE INDEX ${resource.table}_${name}_${s} ON ${resource.table} (${relationship.column}, ${columnOf(s)}, id);`,
  )
}
