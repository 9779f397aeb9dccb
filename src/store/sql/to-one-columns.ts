import type { ResourceDescription, ToOneRelationship } from '../../model/description'
import type { ResourceRegistry } from '../../resources/registry'
import { relatedSortIndexSql } from './sort-indexes'

/**
 * A to-one relationship's column as both schema generators write it (src/store/sqlite/ddl.ts,
 * src/store/postgres/ddl.ts): the same definition and the same steps to add one, in each
 * dialect's type of an id and with its index on the column.
 */

type Lookup = Pick<ResourceRegistry, 'get'>

/** What differs between the dialects for a to-one column. */
export interface ToOneDialect {
  /** The column type of an id: `INTEGER`, `bigint`. */
  readonly idType: string
  foreignKeyIndexSql(resource: ResourceDescription, relationship: ToOneRelationship): string
}

/** The column and its foreign key, which restricts the target's delete or sets the column to NULL. */
export function toOneColumnSql(relationship: ToOneRelationship, lookup: Lookup, dialect: ToOneDialect): string {
  const target = lookup.get(relationship.target).table
  const onDelete = relationship.onTargetDelete === 'restrict' ? 'RESTRICT' : 'SET NULL'
  const notNull = relationship.required ? ' NOT NULL' : ''
  return `${relationship.column} ${dialect.idType}${notNull} REFERENCES ${target} (id) ON DELETE ${onDelete}`
}

/** An optional to-one relationship added to a type's table: its column, the index on it, the related sort indexes. */
export function addToOneColumnSql(
  resource: ResourceDescription,
  name: string,
  lookup: Lookup,
  dialect: ToOneDialect,
): string[] {
  const relationship = resource.relationships[name]
  if (relationship?.kind !== 'to-one') throw new Error(`${resource.type}.${name} is no to-one relationship`)
  return [
    `ALTER TABLE ${resource.table} ADD COLUMN ${toOneColumnSql(relationship, lookup, dialect)};`,
    dialect.foreignKeyIndexSql(resource, relationship),
    ...relatedSortIndexSql(resource, name, relationship),
  ]
}
