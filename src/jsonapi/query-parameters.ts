import type { ResourceDescription } from '../model/description'
import type { ResourceRegistry } from '../resources/registry'
import type { FetchLimits } from './query'

/**
 * The query parameters of the GETs, as OpenAPI parameter objects, as strict as query.ts that
 * reads them: a value that fits its schema is accepted when sent alone (a few combinations are
 * refused, such as page[number] with page[after]; the 400 says which). Lists of values are arrays
 * sent comma-separated (`style: form, explode: false`). Documentation only: the controllers read
 * the raw query themselves, so that every 400 names the parameter exactly as sent.
 */
export interface ParameterDoc {
  readonly name: string
  readonly in: 'query' | 'path'
  readonly required: boolean
  readonly description: string
  readonly schema: Readonly<Record<string, unknown>>
  readonly style?: 'form'
  readonly explode?: false
  readonly example?: unknown
  /** In place of `example` where the example is only offered: see `offered`. */
  readonly examples?: Readonly<Record<string, OfferedExample>>
}

/**
 * An example shown but not sent: Scalar's "Test Request" lists the parameter with this value,
 * unticked (its `x-disabled` extension), and sends it only once the user ticks it.
 */
interface OfferedExample {
  readonly summary: string
  readonly value: unknown
  readonly 'x-disabled': true
}

/** Past this many values an enumeration gives way to a looser pattern (more sortable fields, deeper graphs). */
const MAX_ENUMERATED = 200
const MAX_ID = Number.MAX_SAFE_INTEGER
const id = { type: 'integer', minimum: 1, maximum: MAX_ID }
const letterOrDigit = '[\\p{L}\\p{N}]'
const other = '[^\\p{L}\\p{N}]'

/**
 * `example` is left out for the cursors (no value fits every list) and the offset spelling: beside
 * page[number] they are refused. A filter's example is `offered`: it names a record of the README's
 * example session, so sent by default it would narrow the docs page's "Test Request" to nothing on
 * any other catalogue; shown unticked, the list it sends is the whole one, paged.
 */
function parameter(
  name: string,
  description: string,
  schema: Record<string, unknown>,
  example?: unknown,
  offered = false,
): ParameterDoc {
  const list = schema.type === 'array' ? { style: 'form' as const, explode: false as const } : {}
  const shown =
    example === undefined
      ? {}
      : offered
        ? {
            examples: { readme: { summary: "The README's example data", value: example, 'x-disabled': true as const } },
          }
        : { example }
  return { name, in: 'query', required: false, description, schema, ...list, ...shown }
}

/** Every include path from `resource`, at most `depth` relationships deep, or null past MAX_ENUMERATED. */
function includePaths(registry: ResourceRegistry, resource: ResourceDescription, depth: number): string[] | null {
  const paths: string[] = []
  const walk = (type: ResourceDescription, prefix: string, left: number): boolean => {
    for (const [name, relationship] of Object.entries(type.relationships)) {
      const path = prefix === '' ? name : `${prefix}.${name}`
      paths.push(path)
      if (paths.length > MAX_ENUMERATED) return false
      if (left > 1 && !walk(registry.get(relationship.target), path, left - 1)) return false
    }
    return true
  }
  return walk(resource, '', depth) ? paths : null
}

/** Every sort value: keys separated by commas, each at most once, `-` for descending. */
function sortValues(resource: ResourceDescription): string[] | null {
  const fields = ['id', ...resource.sortable]
  const values: string[] = []
  const extend = (prefix: string[], left: string[]): boolean => {
    for (const field of left) {
      for (const key of [field, `-${field}`]) {
        const value = [...prefix, key]
        values.push(value.join(','))
        if (values.length > MAX_ENUMERATED) return false
        if (
          !extend(
            value,
            left.filter((f) => f !== field),
          )
        )
          return false
      }
    }
    return true
  }
  return extend([], fields) ? values : null
}

function anyOf(values: readonly string[] | null, fallback: Record<string, unknown>) {
  return values ? { type: 'string', enum: values } : fallback
}

/** The parameters of a list (`list`) or of a single record (`record`) of `resource`. */
export function fetchParameters(
  registry: ResourceRegistry,
  resource: ResourceDescription,
  target: 'list' | 'record',
  limits: FetchLimits,
): ParameterDoc[] {
  const relationshipName = '[a-z_]+'
  const parameters = [
    parameter(
      'include',
      `Relationship paths to include, dot-nested (from ${resource.type}: ${Object.keys(resource.relationships).join(', ')}): at most ${limits.maxIncludePaths} paths, each at most ${limits.maxIncludeDepth} relationships deep. Empty: include nothing. Given, even empty, the answer has \`included\` (\`[]\` when nothing is included).`,
      {
        type: 'array',
        maxItems: limits.maxIncludePaths,
        items: anyOf(includePaths(registry, resource, limits.maxIncludeDepth), {
          type: 'string',
          pattern: `^${relationshipName}(\\.${relationshipName}){0,${limits.maxIncludeDepth - 1}}$`,
        }),
      },
      resource.defaultInclude,
    ),
  ]
  for (const type of registry.all) {
    const fields = [...Object.keys(type.attributes), ...Object.keys(type.relationships)]
    parameters.push(
      parameter(
        `fields[${type.type}]`,
        `Sparse fieldset: the attributes and relationships of ${type.type} to render (${fields.join(', ')}). Empty: none.`,
        { type: 'array', items: { type: 'string', enum: fields } },
        fields.slice(0, 1),
      ),
    )
  }
  if (target === 'record') return parameters

  const sortable = ['id', ...resource.sortable]
  parameters.push(
    parameter(
      'sort',
      `Sort keys, comma-separated, each at most once, - for descending: ${sortable.join(', ')}. Ties break by id. Without it a search is ranked by relevance, other lists go in id order.`,
      anyOf(sortValues(resource), {
        type: 'string',
        pattern: `^-?(${sortable.join('|')})(,-?(${sortable.join('|')}))*$`,
      }),
      `-${sortable.at(-1)}`,
    ),
  )
  for (const [name, filter] of Object.entries(resource.filters)) {
    const key = `filter[${name}]`
    if (filter.kind === 'attribute') {
      const example = resource.attributes[filter.attribute]?.example
      parameters.push(parameter(key, filter.description, { type: 'string' }, example, true))
    } else if (filter.kind === 'search') {
      const max = limits.maxSearchWords
      // A word is a run of letters and digits, as query-selection.ts counts them.
      const words = `^${other}*(${letterOrDigit}+(${other}+|$)){1,${max}}$`
      const example = Object.values(resource.attributes)[0]?.example.split(' ').at(-1)?.toLowerCase()
      parameters.push(
        parameter(
          key,
          `${filter.description} Needs a word (letters and digits). At most ${max} words.`,
          { type: 'string', minLength: 1, pattern: words },
          example,
          true,
        ),
      )
    } else parameters.push(idsParameter(resource, key, filter.relationship, filter.description, limits))
  }
  for (const [name, filter] of Object.entries(resource.plainFilters)) {
    const relationship = resource.filters[filter]
    if (relationship?.kind !== 'relationship') continue
    const description = `The original interface's form of filter[${filter}].`
    parameters.push(idsParameter(resource, name, relationship.relationship, description, limits))
  }
  parameters.push(
    parameter(
      'page[number]',
      'Page number, from 1; with it or page[size] the list is paginated (links and meta.total). Not with page[after] or page[before].',
      id,
      1,
    ),
    parameter(
      'page[size]',
      `Records a page: ${limits.defaultSize} unless given, at most ${limits.maxSize}.`,
      { type: 'integer', minimum: 1, maximum: limits.maxSize },
      limits.defaultSize,
    ),
    // No examples for the offset spelling: beside page[number] and page[size] it is refused.
    parameter(
      'page[offset]',
      'Offset paging, another spelling of page[number]: the records to skip, from 0. Not with page[number] or page[size].',
      { type: 'integer', minimum: 0, maximum: MAX_ID },
    ),
    parameter(
      'page[limit]',
      `Offset paging: records a page, as page[size] (${limits.defaultSize} unless given, at most ${limits.maxSize}).`,
      { type: 'integer', minimum: 1, maximum: limits.maxSize },
    ),
    parameter(
      'page[after]',
      'Cursor paging: the page after this cursor; empty: from the start. Cursors come from links and fit the list and sort they came from.',
      { type: 'string' },
    ),
    parameter(
      'page[before]',
      'Cursor paging: the page before this cursor; empty: from the end. Not with page[after].',
      { type: 'string' },
    ),
  )
  return parameters
}

/** A relationship filter: ids, comma-separated, and `null` where the relationship may be empty. */
function idsParameter(
  resource: ResourceDescription,
  key: string,
  name: string,
  description: string,
  limits: FetchLimits,
): ParameterDoc {
  const relationship = resource.relationships[name]
  const nullable = relationship?.kind === 'to-one' && !relationship.required
  const items = nullable ? { anyOf: [id, { type: 'string', enum: ['null'] }] } : id
  return parameter(
    key,
    `${description} At most ${limits.maxFilterIds} ids.`,
    { type: 'array', minItems: 1, maxItems: limits.maxFilterIds, items },
    [1],
    true,
  )
}
