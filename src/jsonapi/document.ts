import type { RelationshipDescription, ResourceDescription } from '../model/description'
import type { RecordGraph } from '../model/query'
import type { Id, StoredRecord } from '../model/record'
import type { ResourceRegistry } from '../resources/registry'

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
  readonly page?: { readonly cursor: string }
  /** In a page of a search: where the search's words matched in the record's text fields (docs/search.md). */
  readonly matches?: unknown
}

/**
 * The members of a record's meta in a page, as JSON text without its braces (`"page":{...}`), or
 * empty: the streams write it into each resource object as it goes.
 */
export type ItemMetaMembers = (record: StoredRecord) => string

/** The item cursor as meta members. Cursors are base64url: no escaping. */
export function cursorMembers(cursor: string): string {
  return `"page":{"cursor":"${cursor}"}`
}

/** `,"meta":{...}` around meta members, or nothing when there are none. */
function itemMetaJson(members: string | undefined): string {
  return members === undefined || members === '' ? '' : `,"meta":{${members}}`
}

const notIncluded: RelationshipObject = Object.freeze({ meta: Object.freeze({ included: false as const }) })
const unlinkedByType = new WeakMap<ResourceDescription, Readonly<Record<string, RelationshipObject>>>()

/** Every relationship as `{"meta": {"included": false}}`: lists, create and update answers, included records. */
function unlinked(resource: ResourceDescription): Readonly<Record<string, RelationshipObject>> {
  let relationships = unlinkedByType.get(resource)
  if (!relationships) {
    relationships = Object.freeze(
      Object.fromEntries(Object.keys(resource.relationships).map((name) => [name, notIncluded])),
    )
    unlinkedByType.set(resource, relationships)
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

/** Pushes the JSON text of one unlinked resource object onto `parts`, in fragments. */
type UnlinkedWriter = (record: StoredRecord, meta: string, parts: (string | number)[]) => void
const unlinkedWriters = new WeakMap<ResourceDescription, UnlinkedWriter>()

/**
 * The writer of a type's unlinked resource objects, written once per type: a list renders
 * thousands of these, and pushing literal fragments to be joined once is several times faster
 * than building the objects, and than concatenating each record's text on its own (measured: 0.20
 * against 0.28 ms for 1,000 books with their SQL). The fragments and property names come from the
 * description (our code), each a JSON string literal in the function's source; the values are
 * JSON.stringify-ed, ids being integers.
 */
function unlinkedWriter(resource: ResourceDescription): UnlinkedWriter {
  let write = unlinkedWriters.get(resource)
  if (!write) {
    const literal = (text: string) => JSON.stringify(text)
    const attributes = Object.keys(resource.attributes).map(
      (name, i) =>
        `${literal(`${i > 0 ? ',' : ''}${JSON.stringify(name)}:`)}, JSON.stringify(record.attributes[${literal(name)}])`,
    )
    const head = literal(`","type":${JSON.stringify(resource.type)},"attributes":{`)
    const tail = literal(`},"relationships":${JSON.stringify(unlinked(resource))}`)
    write = new Function(
      'record',
      'meta',
      'parts',
      `parts.push('{"id":"', record.id, ${head}, ${attributes.join(', ')}, ${tail}, meta, '}')`,
    ) as UnlinkedWriter
    unlinkedWriters.set(resource, write)
  }
  return write
}

/** The JSON text of `unlinkedResource(resource, record, cursor)`. */
export function unlinkedResourceJson(resource: ResourceDescription, record: StoredRecord, cursor?: string): string {
  const parts: (string | number)[] = []
  pushUnlinkedResource(resource, record, parts, cursor === undefined ? undefined : cursorMembers(cursor))
  return parts.join('')
}

/** Pushes the JSON text of an unlinked resource object, with these meta members, onto `parts`, in fragments. */
export function pushUnlinkedResource(
  resource: ResourceDescription,
  record: StoredRecord,
  parts: (string | number)[],
  meta?: string,
): void {
  unlinkedWriter(resource)(record, itemMetaJson(meta), parts)
}

/**
 * Pushes the JSON text of the unlinked resource objects of `records`, joined by commas, onto
 * `parts` in fragments; `metaOf` gives each its meta members (an item cursor, matches). The caller
 * joins them once with what surrounds them: joining here and again there would copy a document's
 * text twice.
 */
export function pushUnlinkedResources(
  resource: ResourceDescription,
  records: readonly StoredRecord[],
  parts: (string | number)[],
  metaOf?: ItemMetaMembers,
): void {
  const write = unlinkedWriter(resource)
  for (let i = 0; i < records.length; i++) {
    const record = records[i] as StoredRecord
    if (i > 0) parts.push(',')
    write(record, metaOf ? itemMetaJson(metaOf(record)) : '', parts)
  }
}

/** What rendering a record needs beyond the record: the linkage read with it and the sparse fieldsets. */
export interface RenderContext {
  readonly registry: ResourceRegistry
  readonly graph: RecordGraph
  /** Plural type -> the attributes and relationships to render; a type not named renders all. */
  readonly fields: ReadonlyMap<string, ReadonlySet<string>>
}

const relationshipsByType = new WeakMap<ResourceDescription, readonly [string, RelationshipDescription][]>()

/** A type's relationships as entries, made once: a single GET renders them for every record it shows. */
function relationshipsOf(resource: ResourceDescription): readonly [string, RelationshipDescription][] {
  let entries = relationshipsByType.get(resource)
  if (!entries) {
    entries = Object.entries(resource.relationships)
    relationshipsByType.set(resource, entries)
  }
  return entries
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
  for (const name in record.attributes)
    if (!only || only.has(name)) attributes[name] = record.attributes[name] as string
  const relationships: Record<string, RelationshipObject> = {}
  for (const [name, relationship] of relationshipsOf(resource)) {
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
  const parts: (string | number)[] = []
  pushResource(context, resource, record, parts, cursor === undefined ? undefined : cursorMembers(cursor))
  return parts.join('')
}

/**
 * Pushes the JSON text of `resourceJson(context, resource, record)`, with these meta members, onto `parts` in
 * fragments, three for each id of a linkage, for the caller to join once with what surrounds them:
 * text built by `+=` leaves a rope and a string per id behind, some 20 MB of garbage for 100
 * authors of 1,000 books each.
 */
export function pushResource(
  context: RenderContext,
  resource: ResourceDescription,
  record: StoredRecord,
  parts: (string | number)[],
  meta?: string,
): void {
  const only = context.fields.get(resource.type)
  parts.push('{"id":"', record.id, '","type":', JSON.stringify(resource.type), ',"attributes":{')
  let first = true
  for (const name in record.attributes) {
    if (only && !only.has(name)) continue
    parts.push(first ? '' : ',', JSON.stringify(name), ':', JSON.stringify(record.attributes[name]))
    first = false
  }
  parts.push('},"relationships":{')
  first = true
  for (const [name, relationship] of relationshipsOf(resource)) {
    if (only && !only.has(name)) continue
    parts.push(first ? '' : ',', JSON.stringify(name), ':')
    first = false
    const linkage = context.graph.linkage(resource.type, record.id, name)
    if (linkage === undefined) {
      parts.push('{"meta":{"included":false}}')
      continue
    }
    // Ids are integers and type names plain words: neither needs escaping.
    const prefix = `{"type":${JSON.stringify(context.registry.get(relationship.target).type)},"id":"`
    if (linkage === null) parts.push('{"data":null}')
    else if (typeof linkage === 'number') parts.push('{"data":', prefix, linkage, '"}}')
    else {
      parts.push('{"data":[')
      const next = `,${prefix}`
      for (let i = 0; i < linkage.length; i++) parts.push(i > 0 ? next : prefix, linkage[i] as Id, '"}')
      parts.push(']}')
    }
  }
  parts.push('}', itemMetaJson(meta), '}')
}
