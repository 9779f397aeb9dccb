import type { Change } from '../model/changes'
import type { ResourceDescription } from '../model/description'
import type { StoredRecord } from '../model/record'
import type { ResourceRegistry } from '../resources/registry'
import { invalidParameter } from './errors'
import { parseSize } from './query-paging'

/** GET /api/v1/changes: a window of the feed, or with `stream` where a live stream starts. */
export interface ChangesQuery {
  /** The position asked after (page[after]); null: from the oldest kept (a stream: from now). */
  readonly after: string | null
  readonly size: number
  /** Whether page[size] was given: the next link keeps it then. */
  readonly sizeGiven: boolean
  /** filter[type]: the plural types kept; null: every type. */
  readonly types: readonly string[] | null
  /** include=resource: the current state of each changed record that still exists. */
  readonly includeResources: boolean
}

export interface ChangesLimits {
  readonly defaultSize: number
  readonly maxSize: number
  /** Whether a text is a position the store writes. */
  readonly isPosition: (text: string) => boolean
}

/** The page's default size, as the issue of the feed set it: larger than a list's 20, within MAX_PAGE_SIZE. */
export const DEFAULT_CHANGES_PAGE_SIZE = 100

/** The query parameters of the feed: any other is a 400, as on every route. */
export function parseChangesQuery(
  url: string,
  registry: ResourceRegistry,
  limits: ChangesLimits,
  stream: boolean,
): ChangesQuery {
  const at = url.indexOf('?')
  const params = new URLSearchParams(at === -1 ? '' : url.slice(at + 1))
  let after: string | null = null
  let size = limits.defaultSize
  let sizeGiven = false
  let types: string[] | null = null
  let includeResources = false
  const seen = new Set<string>()
  for (const [name, value] of params) {
    if (seen.has(name)) throw invalidParameter(name, `Query parameter "${name}" is given more than once`)
    seen.add(name)
    if (name === 'page[after]') {
      if (!limits.isPosition(value)) {
        throw invalidParameter(name, `page[after] must be the id of a change from this feed (got "${value}")`)
      }
      after = value
    } else if (name === 'page[size]') {
      size = parseSize(name, value, limits, null)
      sizeGiven = true
    } else if (name === 'filter[type]') {
      types = value.split(',').map((type) => {
        const known = registry.all.find((r) => r.type === type)
        if (!known) {
          const names = registry.all.map((r) => r.type).join(', ')
          throw invalidParameter(name, `filter[type] names types among ${names} (got "${type}")`)
        }
        return known.type
      })
    } else if (name === 'include') {
      if (value !== 'resource') throw invalidParameter(name, `include takes only "resource" here (got "${value}")`)
      if (stream) throw invalidParameter(name, 'A stream sends changes only: read a record after its change')
      includeResources = true
    } else {
      throw invalidParameter(name, `Unknown query parameter "${name}"`)
    }
  }
  return { after, size, sizeGiven, types, includeResources }
}

/** A change as a resource object of type `changes`. */
export function changeObject(change: Change) {
  return {
    type: 'changes',
    id: change.id,
    attributes: { op: change.op },
    relationships: { resource: { data: { type: change.type, id: String(change.recordId) } } },
  }
}

/** One Server-Sent Event: the change's id, `event: change`, and the change record as one line. */
export function changeEvent(change: Change): string {
  return `id: ${change.id}\nevent: change\ndata: ${JSON.stringify(changeObject(change))}\n\n`
}

/**
 * A record as the feed includes it: its attributes and its to-one linkage (where it is now: a
 * moved book's author); a to-many relationship is `meta.included: false`, as its members' own
 * changes say where they are.
 */
export function includedRecord(registry: ResourceRegistry, resource: ResourceDescription, record: StoredRecord) {
  const relationships: Record<string, unknown> = {}
  for (const [name, relationship] of Object.entries(resource.relationships)) {
    if (relationship.kind !== 'to-one') {
      relationships[name] = { meta: { included: false } }
      continue
    }
    const target = record.toOne[name]
    const type = registry.get(relationship.target).type
    relationships[name] = { data: target == null ? null : { type, id: String(target) } }
  }
  return { id: String(record.id), type: resource.type, attributes: record.attributes, relationships }
}

/**
 * The link to the next window: the position after the last change read, with the same parameters.
 * Encoded as every list's links are (URLSearchParams): `[`, `]` and `,` are not allowed as they are
 * in a URI's query (RFC 3986 §3.4), so `page[after]` goes as `page%5Bafter%5D`.
 */
export function nextLink(path: string, query: ChangesQuery, next: string): string {
  const params = new URLSearchParams({ 'page[after]': next })
  if (query.sizeGiven) params.set('page[size]', String(query.size))
  if (query.types) params.set('filter[type]', query.types.join(','))
  if (query.includeResources) params.set('include', 'resource')
  return `${path}?${params}`
}
