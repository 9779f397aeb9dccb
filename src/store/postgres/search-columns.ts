import type { ResourceDescription } from '../../model/description'
import { searchOf } from '../../resources/registry'

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
