import { Type as t } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { ResourceDescription, StringAttribute } from '../model/description'
import type { Id } from '../model/record'
import type { RecordInput } from '../model/writes'
import type { ResourceRegistry } from '../resources/registry'
import { type FieldError, httpError } from './errors'
import { parseId } from './ids'
import { humanize, messages, withArticle, words } from './messages'
import { nameBreaker, storedText, visibleCharacter } from './visible-text'

const identifier = t.Union([t.String(), t.Number()])
const linkage = t.Object({ type: t.String(), id: identifier })

/**
 * The shape every write document must have before its fields are looked at. A document that does
 * not fit is malformed (400); what is wrong inside `attributes` is a validation error (422).
 */
const writeEnvelope = TypeCompiler.Compile(
  t.Object({
    data: t.Object({
      type: t.String(),
      id: t.Optional(identifier),
      attributes: t.Optional(t.Record(t.String(), t.Unknown())),
      relationships: t.Optional(
        t.Record(t.String(), t.Object({ data: t.Union([t.Null(), linkage, t.Array(linkage)]) })),
      ),
    }),
  }),
)

export type WriteMode = { readonly kind: 'create' } | { readonly kind: 'update'; readonly id: Id }

/** A write document, checked against its resource description. */
export interface WriteRequest {
  readonly input: RecordInput
  /** To-one relationships known to point at nothing before the store is asked (absent, null or not an id). */
  readonly missing: ReadonlySet<string>
  /** Attribute-level failures, in field order; unknown fields after known ones. */
  readonly errors: readonly FieldError[]
}

/** `author` or `authors` for the authors type; anything else is not this type. */
function isTypeName(name: string, resource: ResourceDescription): boolean {
  return name === resource.type || name === resource.singular
}

function envelopeError(body: unknown): never {
  const error = writeEnvelope.Errors(body).First()
  const path = error?.path ?? ''
  if (path === '' || path === '/data') {
    throw httpError(
      400,
      'The request body must be a JSON:API document: an object whose data member is a resource object',
      { pointer: path === '' ? '' : '/data' },
    )
  }
  throw httpError(400, `Invalid JSON:API document at ${path}: ${error?.message.toLowerCase()}`, { pointer: path })
}

/** Why `value` (as storedText gives it) cannot be stored in `attribute`, in a sentence; null if it can. */
export function validateString(name: string, attribute: StringAttribute, value: unknown): string | null {
  if (typeof value !== 'string') return messages.notAString(name)
  // A lone surrogate (from a \ud800 escape) is no character: stored, it would turn into U+FFFD.
  if (!value.isWellFormed()) return messages.notUnicode(name)
  // A name that shows nothing is as blank as an empty one: white space and controls alone included.
  if (!visibleCharacter.test(value)) return messages.blank(name)
  if (attribute.isName && nameBreaker.test(value)) {
    let position = 0
    for (const character of value) {
      position++
      if (nameBreaker.test(character)) return messages.breaksLine(name, character.codePointAt(0) ?? 0, position)
    }
  }
  // Count code points, not UTF-16 units, as JSON Schema's maxLength does.
  let length = 0
  for (const _ of value) if (++length > attribute.maxLength) return messages.tooLong(name, attribute.maxLength)
  return null
}

function attributeError(name: string, detail: string): FieldError {
  return { detail, parameter: name, pointer: `data/attributes/${name}` }
}

/**
 * Checks a create or update document for `resource`: structure (400), type and id (409, 403),
 * then every field, collecting all validation failures rather than stopping at the first.
 */
export function parseWriteDocument(
  registry: ResourceRegistry,
  resource: ResourceDescription,
  body: unknown,
  mode: WriteMode,
): WriteRequest {
  if (!writeEnvelope.Check(body)) envelopeError(body)
  const { data } = body

  if (!isTypeName(data.type, resource)) {
    throw httpError(409, `Type "${data.type}" does not match this endpoint, which takes "${resource.type}"`, {
      pointer: '/data/type',
    })
  }
  if (mode.kind === 'create' && data.id !== undefined) {
    throw httpError(403, 'Client-generated ids are not supported: the service assigns ids', { pointer: '/data/id' })
  }
  if (mode.kind === 'update' && data.id !== undefined && parseId(data.id) !== mode.id) {
    throw httpError(409, `data.id "${data.id}" does not match the id in the URL ("${mode.id}")`, {
      pointer: '/data/id',
    })
  }

  const given = data.attributes ?? {}
  const attributes: Record<string, string> = {}
  // 'invalid' marks a reference that is not an id at all: it can only be reported as missing.
  const references = new Map<string, Id | null | 'invalid'>()
  const missing = new Set<string>()
  const errors: FieldError[] = []
  const idAliases = new Map<string, string>()

  for (const [name, relationship] of Object.entries(resource.relationships)) {
    if (relationship.kind === 'to-one') idAliases.set(relationship.idAttribute, name)
  }

  // Relationship linkage first; an `author_id` attribute says the same thing in the original's words.
  for (const [name, object] of Object.entries(data.relationships ?? {})) {
    // Own properties only: a client's `constructor` or `__proto__` names nothing of ours.
    const relationship = Object.hasOwn(resource.relationships, name) ? resource.relationships[name] : undefined
    const pointer = `/data/relationships/${name}`
    if (!relationship) {
      errors.push({ detail: messages.unknownRelationship(name), parameter: name, pointer: pointer.slice(1) })
      continue
    }
    if (relationship.kind === 'to-many') {
      throw httpError(
        403,
        `${humanize(withArticle(words(resource.singular)))}'s ${words(name)} cannot be set in this request: a book's author and collection are set on the book`,
        { pointer },
      )
    }
    const target = object.data
    if (Array.isArray(target))
      throw httpError(400, `${name} is a to-one relationship: data must be an object or null`, {
        pointer: `${pointer}/data`,
      })
    if (target !== null && !isTypeName(target.type, registry.get(relationship.target))) {
      throw httpError(
        409,
        `Type "${target.type}" does not match relationships.${name}, which takes "${relationship.target}"`,
        {
          pointer: `${pointer}/data/type`,
        },
      )
    }
    references.set(name, target === null ? null : (parseId(target.id) ?? 'invalid'))
  }

  for (const [name, attribute] of Object.entries(resource.attributes)) {
    if (!Object.hasOwn(given, name)) {
      if (mode.kind === 'create' && attribute.required) errors.push(attributeError(name, messages.blank(name)))
      continue
    }
    const value = storedText(attribute, given[name])
    const detail = validateString(name, attribute, value)
    if (detail) errors.push(attributeError(name, detail))
    else attributes[name] = value as string
  }

  for (const [name, value] of Object.entries(given)) {
    if (Object.hasOwn(resource.attributes, name)) continue
    const relationshipName = idAliases.get(name)
    if (relationshipName === undefined) {
      errors.push(attributeError(name, messages.unknownAttribute(name)))
      continue
    }
    const id = value === null ? null : (parseId(value) ?? 'invalid')
    if (references.has(relationshipName) && references.get(relationshipName) !== id) {
      throw httpError(409, `${name} and relationships.${relationshipName} name different records`, {
        pointer: `/data/attributes/${name}`,
      })
    }
    references.set(relationshipName, id)
  }

  const toOne: Record<string, Id | null> = {}
  for (const [name, relationship] of Object.entries(resource.relationships)) {
    if (relationship.kind !== 'to-one') continue
    const id = references.get(name)
    if (id === 'invalid' || (id === undefined && mode.kind === 'create' && relationship.required)) missing.add(name)
    else if (id !== undefined) toOne[name] = id
  }

  return { input: { attributes, toOne }, missing, errors }
}
