import type { ResourceDescription } from '../resources/description'
import type { ResourceRegistry } from '../resources/registry'
import type { Id, RecordGraph, StoredRecord } from '../store/store'

export interface ResourceIdentifier {
  readonly type: string
  readonly id: string
}

export type RelationshipObject =
  | { readonly meta: { readonly included: false } }
  | { readonly data: ResourceIdentifier | null | readonly ResourceIdentifier[] }

export interface ResourceObject {
  readonly id: string
  readonly type: string
  readonly attributes: Readonly<Record<string, string>>
  readonly relationships: Readonly<Record<string, RelationshipObject>>
  /** In a page of a list: the record's item cursor, as the cursor pagination profile places it. */
  readonly meta?: ItemMeta
}

export interface ItemMeta {
  readonly page: { readonly cursor: string }
}

/** `,"meta":{"page":{"cursor":...}}` for a record of a page, or nothing. Cursors are base64url: no escaping. */
function itemMetaJson(cursor: string | undefined): string {
  return cursor === undefined ? '' : `,"meta":{"page":{"cursor":"${cursor}"}}`
}

const notIncluded: RelationshipObject = Object.freeze({ meta: Object.freeze({ included: false as const }) })
const unlinkedByType = new Map<string, Readonly<Record<string, RelationshipObject>>>()

/** Every relationship as `{"meta": {"included": false}}`: lists, create and update answers, included records. */
function unlinked(resource: ResourceDescription): Readonly<Record<string, RelationshipObject>> {
  let relationships = unlinkedByType.get(resource.type)
  if (!relationships) {
    relationships = Object.freeze(
      Object.fromEntries(Object.keys(resource.relationships).map((name) => [name, notIncluded])),
    )
    unlinkedByType.set(resource.type, relationships)
  }
  return relationships
}

/**
 * A resource object whose relationships carry no linkage (interface.md rule 1); with `cursor`, the
 * item cursor of a record in a page.
 */
export function unlinkedResource(resource: ResourceDescription, record: StoredRecord, cursor?: string): ResourceObject {
  const object: ResourceObject = {
    id: String(record.id),
    type: resource.type,
    attributes: record.attributes,
    relationships: unlinked(resource),
  }
  return cursor === undefined ? object : { ...object, meta: { page: { cursor } } }
}

type UnlinkedJson = (record: StoredRecord, meta: string) => string
const unlinkedJsonByType = new Map<string, UnlinkedJson>()

/**
 * The JSON text of `unlinkedResource(resource, record, cursor)`, by a function written once per
 * type: a list renders thousands of these, and a concatenation of literal fragments is several
 * times faster than building the objects. The fragments and property names come from the
 * description (our code), each a JSON string literal in the function's source; the values are
 * JSON.stringify-ed, ids being integers.
 */
export function unlinkedResourceJson(resource: ResourceDescription, record: StoredRecord, cursor?: string): string {
  let render = unlinkedJsonByType.get(resource.type)
  if (!render) {
    const literal = (text: string) => JSON.stringify(text)
    const attributes = Object.keys(resource.attributes).map(
      (name, i) =>
        `${literal(`${i > 0 ? ',' : ''}${JSON.stringify(name)}:`)} + JSON.stringify(record.attributes[${literal(name)}])`,
    )
    const head = literal(`","type":${JSON.stringify(resource.type)},"attributes":{`)
    const tail = literal(`},"relationships":${JSON.stringify(unlinked(resource))}`)
    render = new Function(
      'record',
      'meta',
      `return '{"id":"' + record.id + ${head}${attributes.map((a) => ` + ${a}`).join('')} + ${tail} + meta + '}'`,
    ) as UnlinkedJson
    unlinkedJsonByType.set(resource.type, render)
  }
  return render(record, itemMetaJson(cursor))
}

/** What rendering a record needs beyond the record: the linkage read with it and the sparse fieldsets. */
export interface RenderContext {
  readonly registry: ResourceRegistry
  readonly graph: RecordGraph
  /** Plural type -> the attributes and relationships to render; a type not named renders all. */
  readonly fields: ReadonlyMap<string, ReadonlySet<string>>
}

/**
 * A resource object: a relationship the graph holds linkage for renders `data`, any other
 * `{"meta": {"included": false}}`; only the fields its type's sparse fieldset names appear. With
 * `cursor`, the item cursor of a record in a page, last.
 */
export function resourceObject(
  context: RenderContext,
  resource: ResourceDescription,
  record: StoredRecord,
  cursor?: string,
): ResourceObject {
  const only = context.fields.get(resource.type)
  const attributes: Record<string, string> = {}
  for (const [name, value] of Object.entries(record.attributes)) if (!only || only.has(name)) attributes[name] = value
  const relationships: Record<string, RelationshipObject> = {}
  for (const [name, relationship] of Object.entries(resource.relationships)) {
    if (only && !only.has(name)) continue
    const linkage = context.graph.linkage(resource.type, record.id, name)
    if (linkage === undefined) {
      relationships[name] = notIncluded
      continue
    }
    const type = context.registry.get(relationship.target).type
    const identifier = (id: Id) => ({ type, id: String(id) })
    relationships[name] = {
      data: linkage === null ? null : typeof linkage === 'number' ? identifier(linkage) : linkage.map(identifier),
    }
  }
  const object = { id: String(record.id), type: resource.type, attributes, relationships }
  return cursor === undefined ? object : { ...object, meta: { page: { cursor } } }
}

/**
 * `JSON.stringify(resourceObject(context, resource, record, cursor))`, written as text: no object
 * per resource identifier, which matters for a record that links thousands (an author's books).
 */
export function resourceJson(
  context: RenderContext,
  resource: ResourceDescription,
  record: StoredRecord,
  cursor?: string,
): string {
  const only = context.fields.get(resource.type)
  let json = `{"id":"${record.id}","type":${JSON.stringify(resource.type)},"attributes":{`
  let first = true
  for (const [name, value] of Object.entries(record.attributes)) {
    if (only && !only.has(name)) continue
    json += `${first ? '' : ','}${JSON.stringify(name)}:${JSON.stringify(value)}`
    first = false
  }
  json += '},"relationships":{'
  first = true
  for (const [name, relationship] of Object.entries(resource.relationships)) {
    if (only && !only.has(name)) continue
    json += `${first ? '' : ','}${JSON.stringify(name)}:`
    first = false
    const linkage = context.graph.linkage(resource.type, record.id, name)
    if (linkage === undefined) {
      json += '{"meta":{"included":false}}'
      continue
    }
    // Ids are integers and type names plain words: neither needs escaping.
    const prefix = `{"type":${JSON.stringify(context.registry.get(relationship.target).type)},"id":"`
    if (linkage === null) json += '{"data":null}'
    else if (typeof linkage === 'number') json += `{"data":${prefix}${linkage}"}}`
    else {
      json += '{"data":['
      for (let i = 0; i < linkage.length; i++) json += `${i > 0 ? ',' : ''}${prefix}${linkage[i]}"}`
      json += ']}'
    }
  }
  return `${json}}${itemMetaJson(cursor)}}`
}
