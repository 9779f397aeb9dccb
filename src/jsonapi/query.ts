import type { ResourceDescription } from '../resources/description'
import type { ListFilter } from '../store/store'
import { httpError } from './errors'
import { parseId } from './ids'

function rejectUnknown(params: URLSearchParams, known: ReadonlySet<string>): void {
  const seen = new Set<string>()
  for (const name of params.keys()) {
    if (!known.has(name)) {
      throw httpError(400, `Unknown query parameter "${name}"`, { parameter: name })
    }
    if (seen.has(name)) throw httpError(400, `Query parameter "${name}" is given more than once`, { parameter: name })
    seen.add(name)
  }
}

function searchParams(url: string): URLSearchParams | null {
  const at = url.indexOf('?')
  return at === -1 || at === url.length - 1 ? null : new URLSearchParams(url.slice(at + 1))
}

/** Requests other than lists take no query parameters yet; any given is refused with 400. */
export function parseRecordQuery(url: string): void {
  const params = searchParams(url)
  if (params) rejectUnknown(params, new Set())
}

/** The filters of a list request (`?author_id=3` on books), each naming a record id. */
export function parseListQuery(resource: ResourceDescription, url: string): ListFilter {
  const params = searchParams(url)
  if (!params) return {}
  rejectUnknown(params, new Set(Object.keys(resource.filters)))
  const filter: Record<string, number> = {}
  for (const [name, value] of params) {
    const description = resource.filters[name]
    if (!description) continue
    const id = parseId(value)
    if (id === null) {
      throw httpError(400, `${name} must be a record id, a positive integer (got "${value}")`, { parameter: name })
    }
    filter[description.relationship] = id
  }
  return filter
}
