import { type TSchema, Type as t } from '@sinclair/typebox'
import type { ResourceDescription, ToOneRelationship } from '../model/description'
import type { ResourceRegistry } from '../resources/registry'
import { textPattern } from './visible-text'

/**
 * JSON Schemas of the bodies clients send, for the OpenAPI document, with examples. They are as
 * strict as the service or stricter: a body that fits one is accepted (given records that exist and
 * ids that agree), so that a client generator or a fuzzer working from them sends requests that
 * succeed. Unknown members are refused throughout, even where the service ignores them (`meta`,
 * `links`). The service does not validate with these: request-document.ts and its neighbours check
 * bodies and word the errors.
 */

const closed = { additionalProperties: false } as const

/** An id as parseId takes it; strings of at most 15 digits, so that every one is below 2^53. */
const idInput = t.Union(
  [t.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), t.String({ pattern: '^[1-9][0-9]{0,14}$' })],
  { description: 'A record id: a positive integer, as a number or a string' },
)
const lid = t.String({ minLength: 1, description: 'A local id: names a record added earlier in the same request' })

/** Atomic operations compare `ref.type` with `data.type` as written, so they take the plural form only. */
type Mode = 'create' | 'update' | 'atomic-add' | 'atomic-update'

function typeName(resource: ResourceDescription, mode: Mode | 'plural' | 'both') {
  const plural = mode === 'plural' || mode === 'atomic-add' || mode === 'atomic-update'
  return t.Unsafe<string>({
    type: 'string',
    enum: plural ? [resource.type] : [resource.singular, resource.type],
    description: plural ? undefined : `${resource.singular} (as the original interface shows) or ${resource.type}`,
  })
}

/** `{type, id}`, or in atomic operations also `{type, lid}`. */
function identifier(target: ResourceDescription, mode: Mode | 'plural' | 'both'): TSchema {
  const byId = t.Object({ type: typeName(target, mode), id: idInput }, closed)
  if (mode !== 'atomic-add' && mode !== 'atomic-update') return byId
  return t.Union([byId, t.Object({ type: typeName(target, mode), lid }, closed)])
}

/** A string attribute as the service takes it: a string with a visible character, not too long; a name on one line. */
export function attributeValueSchema(attribute: ResourceDescription['attributes'][string]) {
  const name = attribute.isName ? ' One line: no control character or line break. Stored in Unicode NFC.' : ''
  return t.String({
    minLength: 1,
    maxLength: attribute.maxLength,
    pattern: textPattern(attribute),
    description: `${attribute.description} At least one visible character; at most ${attribute.maxLength} characters.${name}`,
  })
}

function toOneRelationships(resource: ResourceDescription): [string, ToOneRelationship][] {
  return Object.entries(resource.relationships).filter((e): e is [string, ToOneRelationship] => e[1].kind === 'to-one')
}

/**
 * The `data` of a write: a create, an update, or an atomic add or update. A required to-one
 * relationship must be given on create, as linkage or as its id attribute (`author_id`); if both
 * are given they must name the same record.
 */
function resourceData(registry: ResourceRegistry, resource: ResourceDescription, mode: Mode): TSchema {
  const create = mode === 'create' || mode === 'atomic-add'
  const attributes: Record<string, TSchema> = {}
  for (const [name, attribute] of Object.entries(resource.attributes)) {
    const required = create && attribute.required
    attributes[name] = required ? attributeValueSchema(attribute) : t.Optional(attributeValueSchema(attribute))
  }
  const relationships: Record<string, TSchema> = {}
  const mustGive: unknown[] = []
  for (const [name, relationship] of toOneRelationships(resource)) {
    const target = registry.get(relationship.target)
    const nullable = relationship.required ? [] : [t.Null()]
    attributes[relationship.idAttribute] = t.Optional(
      t.Union([idInput, ...nullable], { description: `Sets ${name}, as relationships.${name} does` }),
    )
    relationships[name] = t.Optional(
      t.Object(
        { data: nullable.length > 0 ? t.Union([identifier(target, mode), t.Null()]) : identifier(target, mode) },
        { ...closed, description: relationship.description },
      ),
    )
    if (create && relationship.required) {
      const either = (member: string, key: string, schema: TSchema) => ({
        required: [member],
        properties: { [member]: { required: [key], properties: { [key]: schema } } },
      })
      mustGive.push({
        anyOf: [
          either('attributes', relationship.idAttribute, idInput),
          either('relationships', name, relationships[name] as TSchema),
        ],
      })
    }
  }
  const data: Record<string, TSchema> = {
    type: typeName(resource, mode),
    attributes: create ? t.Object(attributes, closed) : t.Optional(t.Object(attributes, closed)),
  }
  if (mode === 'update') data.id = t.Optional(t.Union([idInput], { description: 'Must match the id in the path' }))
  if (mode === 'atomic-add') data.lid = t.Optional(lid)
  if (Object.keys(relationships).length > 0) data.relationships = t.Optional(t.Object(relationships, closed))
  return t.Object(data, {
    ...closed,
    ...(mustGive.length > 0 ? { allOf: mustGive } : {}),
    description:
      mustGive.length > 0
        ? `${toOneRelationships(resource)
            .filter(([, r]) => r.required)
            .map(([name, r]) => `${name} (or ${r.idAttribute})`)
            .join(', ')} must be given.`
        : undefined,
  })
}

/** The body of a create (`update: false`) or update request. */
export function writeDocumentSchema(registry: ResourceRegistry, resource: ResourceDescription, update: boolean) {
  return t.Object(
    { data: resourceData(registry, resource, update ? 'update' : 'create') },
    { ...closed, title: `${resource.title} ${update ? 'update' : 'create'} document` },
  )
}

/**
 * An id the examples use: the first record of each type a fresh database holds, those the README's
 * example session creates (J.R.R. Tolkien, Middle-earth, The Hobbit).
 */
export const EXAMPLE_ID = '1'

function attributeExamples(resource: ResourceDescription) {
  return Object.fromEntries(Object.entries(resource.attributes).map(([name, a]) => [name, a.example]))
}

/** A create request that works once record EXAMPLE_ID of every related type exists; an update of it. */
export function writeExample(registry: ResourceRegistry, resource: ResourceDescription, update: boolean) {
  const relationships = Object.fromEntries(
    toOneRelationships(resource).map(([name, r]) => [
      name,
      { data: { type: registry.get(r.target).type, id: EXAMPLE_ID } },
    ]),
  )
  const data: Record<string, unknown> = { type: resource.type, attributes: attributeExamples(resource) }
  if (!update && Object.keys(relationships).length > 0) data.relationships = relationships
  return { data }
}

/** The body of a relationship write: `{"data": ...}` with identifiers of the target type. */
export function relationshipRequestSchema(
  target: ResourceDescription,
  relationship: { readonly toMany: boolean; readonly required: boolean; readonly maxIds: number },
): TSchema {
  const linkage = identifier(target, 'both')
  const data = relationship.toMany
    ? t.Array(linkage, { maxItems: relationship.maxIds, description: `At most ${relationship.maxIds} identifiers.` })
    : relationship.required
      ? linkage
      : t.Union([linkage, t.Null()])
  return t.Object({ data }, { ...closed, title: `${target.title} linkage request` })
}

export function relationshipExample(target: ResourceDescription, toMany: boolean) {
  const identifier = { type: target.type, id: EXAMPLE_ID }
  return { data: toMany ? [identifier] : identifier }
}

export interface AtomicLimitsDoc {
  readonly maxOperations: number
  readonly maxRelationshipIds: number
  readonly maxAtomicIds: number
}

/** One kind of operation of an atomic request, per type and relationship. */
function atomicOperations(registry: ResourceRegistry, maxIds: number): TSchema[] {
  const operations: TSchema[] = []
  const op = (name: string) => t.Literal(name)
  for (const resource of registry.all) {
    const ref = t.Union([
      t.Object({ type: typeName(resource, 'plural'), id: idInput }, closed),
      t.Object({ type: typeName(resource, 'plural'), lid }, closed),
    ])
    operations.push(
      t.Object({ op: op('add'), data: resourceData(registry, resource, 'atomic-add') }, closed),
      t.Object({ op: op('update'), ref, data: resourceData(registry, resource, 'atomic-update') }, closed),
      t.Object({ op: op('remove'), ref }, closed),
    )
    for (const [name, relationship] of Object.entries(resource.relationships)) {
      const target = registry.get(relationship.target)
      const relationshipRef = t.Union(
        [
          t.Object({ type: typeName(resource, 'plural'), id: idInput, relationship: t.Literal(name) }, closed),
          t.Object({ type: typeName(resource, 'plural'), lid, relationship: t.Literal(name) }, closed),
        ],
        { description: `The ${name} of one ${resource.singular.replaceAll('_', ' ')}` },
      )
      const linkage = identifier(target, 'atomic-update')
      if (relationship.kind === 'to-one') {
        const data = relationship.required ? linkage : t.Union([linkage, t.Null()])
        operations.push(t.Object({ op: op('update'), ref: relationshipRef, data }, closed))
        continue
      }
      // Taking records from a relationship they need (books from their author) is always refused.
      const changes = registry.inverseOf(resource, name).required ? ['add'] : ['add', 'update', 'remove']
      for (const change of changes) {
        const data = t.Array(linkage, { maxItems: maxIds })
        operations.push(t.Object({ op: op(change), ref: relationshipRef, data }, closed))
      }
    }
  }
  return operations
}

/** An Atomic Operations request, as the extension defines it, as far as this service takes it. */
export function atomicRequestSchema(registry: ResourceRegistry, limits: AtomicLimitsDoc) {
  return t.Object(
    {
      'atomic:operations': t.Array(t.Union(atomicOperations(registry, limits.maxRelationshipIds)), {
        minItems: 1,
        maxItems: limits.maxOperations,
        description: `At most ${limits.maxOperations} operations, run in order; at most ${limits.maxRelationshipIds} identifiers in one relationship operation, and ${limits.maxAtomicIds} in all of them together.`,
      }),
    },
    { ...closed, title: 'Atomic operations document' },
  )
}

/**
 * Adds one record of every type, in registry order, each linked by lid to the records added before
 * it that its to-one relationships name: an author, a collection, then a book of both.
 */
export function atomicExample(registry: ResourceRegistry) {
  const added = new Set<string>()
  const operations = registry.all.map((resource) => {
    const relationships: Record<string, unknown> = {}
    for (const [name, relationship] of toOneRelationships(resource)) {
      if (added.has(relationship.target)) {
        relationships[name] = { data: { type: relationship.target, lid: registry.get(relationship.target).singular } }
      }
    }
    added.add(resource.type)
    const data: Record<string, unknown> = {
      type: resource.type,
      lid: resource.singular,
      attributes: attributeExamples(resource),
    }
    if (Object.keys(relationships).length > 0) data.relationships = relationships
    return { op: 'add', data }
  })
  return { 'atomic:operations': operations }
}
