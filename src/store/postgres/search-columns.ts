import type { ResourceDescription } from '../../model/description'
import { type ResourceRegistry, searchOf } from '../../resources/registry'
import { quote } from '../sql/table'

/**
 * The stored column that holds the search words of a searched attribute's column (migration 9):
 * `name` -> `name_search`, a tsvector of search_vector(name) that PostgreSQL keeps up to date as a
 * generated column. A search that tests rows one by one (in id order, to stop at the first page)
 * reads the words stored there instead of computing search_vector() per row, which costs about
 * 5 µs a row (250 ms against 3.3 s for 1,000,000 rows).
 */
export function searchColumnName(column: string): string {
  return `${column}_search`
}

/** The columns of a type's searched attributes, as the table names them. */
export function searchedColumns(resource: ResourceDescription): string[] {
  const columns: string[] = []
  for (const field of searchOf(resource)?.fields ?? []) {
    if ('attribute' in field) columns.push(resource.attributes[field.attribute]?.column ?? field.attribute)
  }
  return columns
}

/**
 * Migration 9, drawn from the descriptions: for each searched attribute, its stored search column
 * and a GIN index on it, in place of migration 1's expression index on search_vector() of the
 * attribute (`<table>_search`), which indexed the same words. Adding the column rewrites the
 * table once (about 15 s for 1,000,000 books).
 */
export function searchColumnsSql(registry: ResourceRegistry): string {
  const statements: string[] = []
  for (const resource of registry.all) {
    const columns = searchedColumns(resource)
    if (columns.length === 0) continue
    const table = quote(resource.table)
    const added = columns.map(
      (c) =>
        `ADD COLUMN ${quote(searchColumnName(c))} tsvector GENERATED ALWAYS AS (search_vector(${quote(c)})) STORED`,
    )
    statements.push(`ALTER TABLE ${table} ${added.join(', ')};`)
    for (const c of columns) {
      const index = quote(`${resource.table}_${searchColumnName(c)}`)
      statements.push(`CREATE INDEX ${index} ON ${table} USING gin (${quote(searchColumnName(c))});`)
    }
    statements.push(`DROP INDEX IF EXISTS ${quote(`${resource.table}_search`)};`)
  }
  return statements.join('\n')
}
