import { type TSchema, Type as t } from '@sinclair/typebox'
import type { ResourceDescription } from '../model/description'
import type { ResourceRegistry } from '../resources/registry'
import { DEFAULT_LIMITS as limits } from './limits'
import { textPattern } from './visible-text'

/**
 * JSON Schemas of the documents the service answers, derived from the resource descriptions
 * (request-schemas.ts has those of the bodies it reads). They feed the OpenAPI document, so what it says is what the code does.
 */

const idString = t.String({
  pattern: '^[1-9][0-9]*$',
  description: 'A record id: a positive integer rendered as a string',
})
const notIncluded = t.Object({ meta: t.Object({ included: t.Literal(false) }) }, { additionalProperties: false })

function attributeSchemas(resource: ResourceDescription): Record<string, TSchema> {
  return Object.fromEntries(
    Object.entries(resource.attributes).map(([name, a]) => [
      name,
      t.String({ maxLength: a.maxLength, pattern: textPattern(a), description: a.description }),
    ]),
  )
}

function identifier(target: ResourceDescription) {
  return t.Object({ type: t.Literal(target.type), id: idString }, { additionalProperties: false })
}

/** One word a search matched in a text field (src/service/search-matches.ts). */
const matchedWord = t.Object(
  {
    start: t.Integer({ minimum: 0, description: "Where the word begins in the field's text, in UTF-16 code units" }),
    end: t.Integer({ minimum: 0, description: 'Where it ends (exclusive), in UTF-16 code units' }),
    forgiven: t.Boolean({ description: 'Whether it matched only with typos forgiven' }),
    typos: t.Integer({ minimum: 0, maximum: 2, description: 'The edits forgiven (0: as written)' }),
  },
  { additionalProperties: false },
)

/**
 * A record in a page of a list: its item cursor, as the cursor pagination profile places it; in a
 * searched list, where the search matched.
 */
const itemMeta = t.Object(
  {
    page: t.Optional(
      t.Object(
        { cursor: t.String({ description: 'page[after] or page[before] with this cursor pages on from this record' }) },
        { additionalProperties: false },
      ),
    ),
    matches: t.Optional(
      t.Record(t.String(), t.Array(matchedWord), {
        description:
          'With filter[search]: per text field the search reads (`name`, `author.name`, `book_collection.name`), the words it matched there, in order (docs/search.md)',
      }),
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

/** A relationship document as the relationship endpoints answer it: links and linkage. */
export function relationshipDocumentSchema(target: ResourceDescription, toMany: boolean): TSchema {
  const linkage = toMany ? t.Array(identifier(target)) : t.Union([identifier(target), t.Null()])
  return t.Object(
    { links: t.Object({ self: t.String(), related: t.String() }), data: linkage },
    { additionalProperties: false, title: `${target.title} linkage` },
  )
}

export const atomicResultsSchema = t.Object(
  { 'atomic:results': t.Array(t.Object({ data: t.Optional(t.Unknown()) })) },
  { title: 'Atomic results document' },
)
