import type { ResourceDescription } from '../model/description'
import type { SortKey, StoreFilter } from '../model/query'
import type { ResourceRegistry } from '../resources/registry'
import { invalidParameter } from './errors'
import { parseId } from './ids'
import type { RequestLimits } from './limits'
import { humanize, withArticle, words } from './messages'
import { storedText } from './visible-text'

/**
 * The query parameters that say what a fetch selects, checked against the resource descriptions:
 * the related records to include, the fields to render, a list's order and its filters (query.ts
 * reads the query string; query-paging.ts the page).
 */

/** Relationship paths to include, as a tree: `books.book_collection` is books -> book_collection. */
export type IncludeTree = ReadonlyMap<string, IncludeTree>

/** How many relationships `path` names, counted from its dots without splitting it. */
function pathDepth(path: string): number {
  let depth = 1
  for (let at = path.indexOf('.'); at !== -1; at = path.indexOf('.', at + 1)) depth++
  return depth
}

export function parseInclude(
  registry: ResourceRegistry,
  resource: ResourceDescription,
  value: string,
  limits: Pick<RequestLimits, 'maxIncludeDepth' | 'maxIncludePaths'>,
): IncludeTree {
  const tree = new Map<string, Map<string, unknown>>()
  if (value === '') return tree as IncludeTree
  const paths = value.split(',')
  if (paths.length > limits.maxIncludePaths) {
    throw invalidParameter('include', `include takes at most ${limits.maxIncludePaths} paths (got ${paths.length})`)
  }
  // Every path's depth before any path's names: a path a thousand levels deep costs a scan, no more.
  for (const path of paths) {
    const depth = pathDepth(path)
    if (depth > limits.maxIncludeDepth) {
      throw invalidParameter(
        'include',
        `include paths go at most ${limits.maxIncludeDepth} relationships deep ("${path}" goes ${depth})`,
      )
    }
  }
  for (const path of paths) {
    let type = resource
    let level = tree
    for (const name of path.split('.')) {
      const relationship = Object.hasOwn(type.relationships, name) ? type.relationships[name] : undefined
      if (!relationship) {
        throw invalidParameter(
          'include',
          `${humanize(withArticle(words(type.singular)))} has no relationship "${name}" (in include path "${path}")`,
        )
      }
      let next = level.get(name) as Map<string, Map<string, unknown>> | undefined
      if (!next) {
        next = new Map()
        level.set(name, next)
      }
      level = next
      type = registry.get(relationship.target)
    }
  }
  return tree as IncludeTree
}

export function parseFields(
  registry: ResourceRegistry,
  parameter: string,
  type: string,
  value: string,
): ReadonlySet<string> {
  const resource = registry.all.find((r) => r.type === type)
  if (!resource) throw invalidParameter(parameter, `There is no resource type "${type}"`)
  const names = value === '' ? [] : value.split(',')
  for (const name of names) {
    if (!Object.hasOwn(resource.attributes, name) && !Object.hasOwn(resource.relationships, name)) {
      throw invalidParameter(
        parameter,
        `${humanize(withArticle(words(resource.singular)))} has no attribute or relationship "${name}"`,
      )
    }
  }
  return new Set(names)
}

export function parseSort(resource: ResourceDescription, value: string): SortKey[] {
  const keys: SortKey[] = []
  for (const part of value.split(',')) {
    const descending = part.startsWith('-')
    const field = descending ? part.slice(1) : part
    if (field !== 'id' && !resource.sortable.includes(field)) {
      throw invalidParameter(
        'sort',
        `${humanize(resource.type)} cannot be sorted by "${part}"; sort keys: id, ${resource.sortable.join(', ')}`,
      )
    }
    if (keys.some((k) => k.field === field)) throw invalidParameter('sort', `sort names "${field}" twice`)
    keys.push({ field, descending })
  }
  if (keys.some((k) => k.field === 'id')) return keys
  // Ties go in the direction of the last key: `-name` is name then id, both descending, which an
  // index on (name, id) read backwards gives whole; a mixed order would be sorted on every read.
  return [...keys, { field: 'id', descending: keys.at(-1)?.descending ?? false }]
}

/**
 * The words of a search, as the stores read them: runs of letters and digits after NFKC
 * (src/store/*-search.ts take the same runs).
 */
function searchWordCount(text: string): number {
  return text.normalize('NFKC').match(/[\p{L}\p{N}]+/gu)?.length ?? 0
}

export function parseFilter(
  resource: ResourceDescription,
  parameter: string,
  name: string,
  value: string,
  limits: Pick<RequestLimits, 'maxSearchWords' | 'maxFilterIds'>,
): StoreFilter {
  const filter = Object.hasOwn(resource.filters, name) ? resource.filters[name] : undefined
  if (!filter) throw invalidParameter(parameter, `${humanize(resource.type)} have no filter "${name}"`)
  if (filter.kind === 'attribute') {
    const attribute = resource.attributes[filter.attribute]
    return { kind: 'attribute', attribute: filter.attribute, value: attribute ? storedText(attribute, value) : value }
  }
  if (filter.kind === 'search') {
    const words = searchWordCount(value)
    if (words === 0) throw invalidParameter(parameter, `${parameter} needs at least one word to search for`)
    if (words > limits.maxSearchWords) {
      throw invalidParameter(parameter, `${parameter} takes at most ${limits.maxSearchWords} words (got ${words})`)
    }
    return { kind: 'search', text: value }
  }
  const relationship = resource.relationships[filter.relationship]
  const nullable = relationship?.kind === 'to-one' && !relationship.required
  const ids: number[] = []
  let orNone = false
  for (const part of value.split(',')) {
    const id = parseId(part)
    if (id !== null) ids.push(id)
    else if (part === 'null' && nullable) orNone = true
    else {
      throw invalidParameter(
        parameter,
        `${parameter} takes record ids separated by commas${nullable ? ', or null' : ''} (got "${value}")`,
      )
    }
  }
  if (ids.length > limits.maxFilterIds) {
    throw invalidParameter(parameter, `${parameter} takes at most ${limits.maxFilterIds} ids (got ${ids.length})`)
  }
  return { kind: 'relationship', relationship: filter.relationship, ids, orNone }
}
