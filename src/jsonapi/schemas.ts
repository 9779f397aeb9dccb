import { type TSchema, Type as t } from '@sinclair/typebox'
import type { ResourceDescription } from '../resources/description'
import type { ResourceRegistry } from '../resources/registry'
import { DEFAULT_LIMITS as limits } from './limits'

/**
 * JSON Schemas of the documents the service reads and writes, derived from the resource
 * descriptions. They feed the OpenAPI document, so what it says is what the code does.
 */

const idString = t.String({
  pattern: '^[1-9][0-9]*$',
  description: 'A record id: a positive integer rendered as a string',
})
const idInput = t.Union([t.Integer({ minimum: 1 }), idString], { description: 'A record id, as a number or a string' })
const notIncluded = t.Object({ meta: t.Object({ included: t.Literal(false) }) }, { additionalProperties: false })

function typeInput(resource: ResourceDescription) {
  return t.Union([t.Literal(resource.singular), t.Literal(resource.type)], {
    description: `${resource.singular} (as the original interface shows) or ${resource.type}`,
  })
}

function attributeSchemas(resource: ResourceDescription): Record<string, TSchema> {
  return Object.fromEntries(
    Object.entries(resource.attributes).map(([name, a]) => [
      name,
      t.String({ maxLength: a.maxLength, pattern: '\\S', description: a.description }),
    ]),
  )
}

function identifier(target: ResourceDescription) {
  return t.Object({ type: t.Literal(target.type), id: idString }, { additionalProperties: false })
}

/** A record in a page of a list: its item cursor, as the cursor pagination profile places it. */
const itemMeta = t.Object(
  {
    page: t.Object(
      { cursor: t.String({ description: 'page[after] or page[before] with this cursor pages on from this record' }) },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
)

/**
 * A resource object as responses carry it. `written` (create and update answers): every attribute,
 * relationships as `meta.included = false`. `fetched` (GETs): sparse fieldsets may leave out any
 * attribute or relationship, and a relationship is linkage or `meta.included = false`.
 */
export function resourceObjectSchema(
  registry: ResourceRegistry,
  resource: ResourceDescription,
  mode: 'written' | 'fetched',
) {
  const relationships: Record<string, TSchema> = {}
  for (const [name, relationship] of Object.entries(resource.relationships)) {
    const target = registry.get(relationship.target)
    const linkage =
      relationship.kind === 'to-many'
        ? t.Array(identifier(target))
        : relationship.required
          ? identifier(target)
          : t.Union([identifier(target), t.Null()])
    const linked = t.Object({ data: linkage }, { additionalProperties: false, description: relationship.description })
    relationships[name] = mode === 'written' ? notIncluded : t.Optional(t.Union([linked, notIncluded]))
  }
  const attributes = Object.fromEntries(
    Object.entries(attributeSchemas(resource)).map(([name, schema]) => [
      name,
      mode === 'written' ? schema : t.Optional(schema),
    ]),
  )
  return t.Object(
    {
      id: idString,
      type: t.Literal(resource.type),
      attributes: t.Object(attributes, { additionalProperties: false }),
      relationships: t.Object(relationships, { additionalProperties: false }),
      ...(mode === 'fetched' ? { meta: t.Optional(itemMeta) } : {}),
    },
    { additionalProperties: false, title: mode === 'written' ? resource.title : `${resource.title} (fetched)` },
  )
}

/** The body of a create (`update: false`) or update request. */
export function writeDocumentSchema(registry: ResourceRegistry, resource: ResourceDescription, update: boolean) {
  const attributes: Record<string, TSchema> = {}
  for (const [name, schema] of Object.entries(attributeSchemas(resource))) {
    attributes[name] = update || !resource.attributes[name]?.required ? t.Optional(schema) : schema
  }
  const relationships: Record<string, TSchema> = {}
  for (const [name, relationship] of Object.entries(resource.relationships)) {
    if (relationship.kind !== 'to-one') continue
    const target = registry.get(relationship.target)
    const linkage = t.Object({ type: typeInput(target), id: idInput })
    attributes[relationship.idAttribute] = t.Optional(
      t.Union([idInput, ...(relationship.required ? [] : [t.Null()])], {
        description: `Sets ${name}, as relationships.${name} does`,
      }),
    )
    relationships[name] = t.Optional(
      t.Object(
        { data: relationship.required ? linkage : t.Union([linkage, t.Null()]) },
        {
          description: `${relationship.description}${relationship.required && !update ? ' Required on create (or its id attribute).' : ''}`,
        },
      ),
    )
  }
  const data: Record<string, TSchema> = {
    type: typeInput(resource),
    attributes: update ? t.Optional(t.Object(attributes)) : t.Object(attributes),
  }
  if (update) data.id = t.Optional(t.Union([idInput], { description: 'Must match the id in the path' }))
  if (Object.keys(relationships).length > 0) data.relationships = t.Optional(t.Object(relationships))
  return t.Object({ data: t.Object(data) }, { title: `${resource.title} ${update ? 'update' : 'create'} document` })
}

/** Any record `include` can bring, of any type. */
function includedSchema(registry: ResourceRegistry) {
  return t.Array(t.Union(registry.all.map((r) => resourceObjectSchema(registry, r, 'fetched'))))
}

/** The answer of a create or update. */
export function writtenDocumentSchema(registry: ResourceRegistry, resource: ResourceDescription) {
  return t.Object({ data: resourceObjectSchema(registry, resource, 'written') }, { additionalProperties: false })
}

/** The answer of a single-record GET (a to-one related resource may be `data: null`). */
export function singleDocumentSchema(registry: ResourceRegistry, resource: ResourceDescription, nullable = false) {
  const data = resourceObjectSchema(registry, resource, 'fetched')
  return t.Object(
    { data: nullable ? t.Union([data, t.Null()]) : data, included: t.Optional(includedSchema(registry)) },
    { additionalProperties: false },
  )
}

const pageLinks = t.Object(
  {
    self: t.String(),
    first: t.String(),
    prev: t.Optional(t.Union([t.String(), t.Null()], { description: 'null only under the cursor pagination profile' })),
    next: t.Optional(t.Union([t.String(), t.Null()], { description: 'null only under the cursor pagination profile' })),
    last: t.Optional(t.String({ description: 'Numbered and offset pages only' })),
  },
  { additionalProperties: false },
)

/** The answer of a list: paginated lists add meta.total and links. */
export function listDocumentSchema(registry: ResourceRegistry, resource: ResourceDescription) {
  return t.Object(
    {
      data: t.Array(resourceObjectSchema(registry, resource, 'fetched')),
      included: t.Optional(includedSchema(registry)),
      meta: t.Optional(t.Object({ total: t.Integer({ minimum: 0 }) }, { additionalProperties: false })),
      links: t.Optional(pageLinks),
    },
    { additionalProperties: false },
  )
}

export const errorDocumentSchema = t.Object(
  {
    errors: t.Array(
      t.Object({
        status: t.Optional(t.String()),
        title: t.Optional(t.String()),
        detail: t.Optional(t.String()),
        source: t.Optional(
          t.Object({
            pointer: t.Optional(t.String()),
            parameter: t.Optional(t.String()),
            header: t.Optional(t.String()),
          }),
        ),
        meta: t.Optional(t.Object({}, { description: "The cursor pagination profile's page.maxSize" })),
        links: t.Optional(t.Object({ type: t.Optional(t.String()) }, { description: 'The profile error type' })),
      }),
      {
        description: `At most ${limits.maxErrors} errors in full (by default); past that, one more error counts the rest.`,
      },
    ),
  },
  { title: 'Error document' },
)

/**
 * The query parameters of a GET, for the OpenAPI document. Every one is an optional string here
 * (additional ones pass too): the controller reads and checks the raw query itself, so that its
 * 400s name the parameter exactly as sent.
 */
export function fetchQuerySchema(registry: ResourceRegistry, resource: ResourceDescription, target: 'list' | 'record') {
  // No pattern or format: Elysia would enforce it before the controller could name the parameter.
  const text = (description: string) => t.Optional(t.String({ description }))
  const properties: Record<string, TSchema> = {
    include: text(
      `Relationship paths to include, comma-separated and dot-nested (from ${resource.type}: ${Object.keys(resource.relationships).join(', ')}). By default at most ${limits.maxIncludePaths} paths, each at most ${limits.maxIncludeDepth} relationships deep.`,
    ),
  }
  for (const r of registry.all) {
    properties[`fields[${r.type}]`] = text(`Sparse fieldset: the attributes and relationships of ${r.type} to render.`)
  }
  if (target === 'list') {
    properties.sort = text(
      `Sort keys, comma-separated, - for descending: id, ${resource.sortable.join(', ')}. Ties break by id.`,
    )
    const bounds = {
      attribute: '',
      search: ` At most ${limits.maxSearchWords} words by default.`,
      relationship: ` At most ${limits.maxFilterIds} ids by default.`,
    }
    for (const [name, filter] of Object.entries(resource.filters))
      properties[`filter[${name}]`] = text(`${filter.description}${bounds[filter.kind]}`)
    for (const [name, filter] of Object.entries(resource.plainFilters)) {
      properties[name] = text(`The original interface's form of filter[${filter}]: one id.`)
    }
    properties['page[number]'] = text('Page number, from 1; with it or page[size] the list is paginated.')
    properties['page[size]'] = text('Records a page: 20 unless given, at most the configured maximum (100 by default).')
    properties['page[offset]'] = text(
      'Offset paging, another spelling of page[number]: the records to skip, from 0. Not with page[number] or page[size].',
    )
    properties['page[limit]'] = text(
      'Offset paging: records a page, as page[size] (20 unless given, at most the configured maximum).',
    )
    properties['page[after]'] = text(
      'Cursor paging: the page after this cursor (empty: from the start). Cursors come from links.',
    )
    properties['page[before]'] = text(
      'Cursor paging: the page before this cursor (empty: from the end). Cursors come from links.',
    )
  }
  return t.Object(properties, { additionalProperties: true })
}

/** A relationship document as the relationship endpoints answer it: links and linkage. */
export function relationshipDocumentSchema(target: ResourceDescription, toMany: boolean): TSchema {
  const linkage = toMany ? t.Array(identifier(target)) : t.Union([identifier(target), t.Null()])
  return t.Object(
    { links: t.Object({ self: t.String(), related: t.String() }), data: linkage },
    { additionalProperties: false, title: `${target.title} linkage` },
  )
}

/** The body of a relationship write: `{"data": ...}` with identifiers of the target type. */
export function relationshipRequestSchema(target: ResourceDescription, toMany: boolean): TSchema {
  const linkage = t.Object({ type: typeInput(target), id: idInput })
  const members = t.Array(linkage, {
    description: `At most ${limits.maxRelationshipIds} identifiers by default.`,
  })
  return t.Object({ data: toMany ? members : t.Union([linkage, t.Null()]) })
}

const atomicRef = t.Object({
  type: t.String(),
  id: t.Optional(t.String()),
  lid: t.Optional(t.String()),
  relationship: t.Optional(t.String()),
})

/** An Atomic Operations request, as the extension defines it. */
export const atomicRequestSchema = t.Object(
  {
    'atomic:operations': t.Array(
      t.Object({
        op: t.Union([t.Literal('add'), t.Literal('update'), t.Literal('remove')]),
        ref: t.Optional(atomicRef),
        data: t.Optional(
          t.Unknown({
            description: `A resource object (with lid on add), identifiers (at most ${limits.maxRelationshipIds} by default), or null`,
          }),
        ),
      }),
      { minItems: 1, description: 'At most MAX_OPERATIONS operations (100 by default).' },
    ),
  },
  { title: 'Atomic operations document' },
)

export const atomicResultsSchema = t.Object(
  { 'atomic:results': t.Array(t.Object({ data: t.Optional(t.Unknown()) })) },
  { title: 'Atomic results document' },
)
