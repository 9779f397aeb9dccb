import { messages } from '../../jsonapi/messages'
import { validateString } from '../../jsonapi/request-document'
import { storedText } from '../../jsonapi/visible-text'
import type { ResourceDescription, ToOneRelationship } from '../../model/description'
import type { Id, StoredRecord } from '../../model/record'
import type { ResourceRegistry } from '../../resources/registry'
import type { TypeTally } from '../../store/catalogue-copy'
import { printable } from './printable'

/*
 * The file `catalogue export` writes and `catalogue import` restores (docs/operator-commands.md):
 * JSON Lines, a first line that describes the file, then one JSON:API resource object per record.
 * Everything here follows the resource descriptions: a new type is exported and restored with no
 * new code.
 */

/** The first line's `format`: what tells an export from a file of books. */
export const FORMAT_NAME = 'library-catalogue-export'
/** The version of the format this build writes and reads. */
export const FORMAT_VERSION = 1

/**
 * The highest `lastId` a file may give (15 digits, as the API describes ids): a restore raises the
 * type's id counter to it, and the service hands out ids after it. Past 2^53 (16 digits) an id is
 * no longer an exact number: records created after a lastId near it all showed the same id and
 * could not be fetched. This leaves some 8 × 10^15 ids to hand out; no real catalogue nears it.
 */
export const MAX_LAST_ID = 999_999_999_999_999

/** Every type's tally, in the order of the file. */
export type FileTallies = ReadonlyMap<ResourceDescription, TypeTally>

/** The to-one relationships of a type, in description order: what a record line holds besides attributes. */
export function toOneOf(resource: ResourceDescription): [string, ToOneRelationship][] {
  return Object.entries(resource.relationships).flatMap(([name, relationship]) =>
    relationship.kind === 'to-one' ? [[name, relationship] as [string, ToOneRelationship]] : [],
  )
}

/**
 * The types in the order a file lists them: each after the types its to-one relationships point
 * at, so that restoring the file in order never meets a reference to a record not yet restored.
 */
export function fileOrder(registry: ResourceRegistry): ResourceDescription[] {
  const ordered: ResourceDescription[] = []
  const visiting = new Set<string>()
  const visit = (resource: ResourceDescription) => {
    if (ordered.includes(resource)) return
    if (visiting.has(resource.type)) {
      throw new Error(`the to-one relationships of ${resource.type} go round in a cycle: no order restores them`)
    }
    visiting.add(resource.type)
    for (const [, relationship] of toOneOf(resource)) {
      if (relationship.target !== resource.type) visit(registry.get(relationship.target))
    }
    visiting.delete(resource.type)
    ordered.push(resource)
  }
  for (const resource of registry.all) visit(resource)
  return ordered
}

/** The first line: the format, and each type's number of records and highest id ever handed out. */
export function headerLine(tallies: FileTallies): string {
  const types: Record<string, { records: number; lastId: Id }> = {}
  for (const [resource, tally] of tallies) types[resource.type] = { records: tally.records, lastId: tally.lastId }
  return `${JSON.stringify({ format: FORMAT_NAME, version: FORMAT_VERSION, types })}\n`
}

/** One record as a JSON:API resource object, attributes and to-one linkage in description order. */
export function recordLine(resource: ResourceDescription, record: StoredRecord): string {
  const attributes: Record<string, string | undefined> = {}
  for (const name of Object.keys(resource.attributes)) attributes[name] = record.attributes[name]
  const line: Record<string, unknown> = { type: resource.type, id: String(record.id), attributes }
  const toOne = toOneOf(resource)
  if (toOne.length > 0) {
    const relationships: Record<string, unknown> = {}
    for (const [name, relationship] of toOne) {
      const id = record.toOne[name] ?? null
      relationships[name] = { data: id === null ? null : { type: relationship.target, id: String(id) } }
    }
    line.relationships = relationships
  }
  return `${JSON.stringify(line)}\n`
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Whether a first line is an export's (it names a `format`), parsed; null for any other line (books). */
export function exportHeaderOf(firstLine: string): Record<string, unknown> | null {
  let value: unknown
  try {
    value = JSON.parse(firstLine)
  } catch {
    return null
  }
  return isObject(value) && Object.hasOwn(value, 'format') ? value : null
}

/** The tallies of an export's first line, in file order, or why the line cannot be read. */
export function parseHeader(header: Record<string, unknown>, registry: ResourceRegistry): FileTallies | string {
  if (header.format !== FORMAT_NAME) {
    return `its first line names the format ${printable(JSON.stringify(header.format) ?? '')}, not ${FORMAT_NAME}`
  }
  if (header.version !== FORMAT_VERSION) {
    return `it is version ${printable(JSON.stringify(header.version) ?? '')} of ${FORMAT_NAME}, and this build reads version ${FORMAT_VERSION}`
  }
  if (!isObject(header.types)) return 'its first line has no "types" object'
  const given = header.types
  for (const type of Object.keys(given)) {
    if (!registry.all.some((resource) => resource.type === type)) {
      return `it holds the type "${printable(type)}", which this build does not know`
    }
  }
  const tallies = new Map<ResourceDescription, TypeTally>()
  for (const resource of fileOrder(registry)) {
    // A type the file does not name (one added since the export) holds no record.
    const tally = given[resource.type] ?? { records: 0, lastId: 0 }
    const { records, lastId } = isObject(tally) ? tally : {}
    if (!isCount(records) || !isCount(lastId) || records > lastId || lastId > MAX_LAST_ID) {
      return `its first line gives ${resource.type} no sound "records" and "lastId" (whole numbers, records at most lastId, lastId at most ${MAX_LAST_ID})`
    }
    tallies.set(resource, { records, lastId })
  }
  return tallies
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0
}

/** An id as the file writes it: a string of a positive integer. */
function idOf(value: unknown): Id | null {
  if (typeof value !== 'string' || !/^[1-9][0-9]{0,15}$/.test(value)) return null
  const id = Number(value)
  return Number.isSafeInteger(id) ? id : null
}

/** A record of a line: its type and fields, checked against the description as the API checks them; or why not. */
export function parseRecordLine(
  text: string,
  registry: ResourceRegistry,
): { resource: ResourceDescription; record: StoredRecord } | string {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    return `not valid JSON (${printable((error as Error).message)})`
  }
  if (!isObject(value)) return 'not a JSON object such as {"type": "...", "id": "...", "attributes": {...}}'
  const unknown = Object.keys(value).find((key) => !['type', 'id', 'attributes', 'relationships'].includes(key))
  if (unknown !== undefined) return `unknown member "${printable(unknown)}"`
  const resource = registry.all.find((candidate) => candidate.type === value.type)
  if (!resource) return `unknown type ${printable(JSON.stringify(value.type) ?? 'absent')}`
  const id = idOf(value.id)
  if (id === null) return 'the id must be a string of a positive integer, such as "7"'
  if (!isObject(value.attributes)) return 'no "attributes" object'
  const attributes: Record<string, string> = {}
  for (const name of Object.keys(value.attributes)) {
    if (!Object.hasOwn(resource.attributes, name)) return messages.unknownAttribute(name)
  }
  for (const [name, attribute] of Object.entries(resource.attributes)) {
    // As the API stores it (a name in NFC), and checked as stored: its length counted in NFC.
    const given = storedText(attribute, value.attributes[name])
    const wrong = validateString(name, attribute, given === undefined ? '' : given)
    if (wrong) return wrong
    attributes[name] = given as string
  }
  const toOne: Record<string, Id | null> = {}
  const relationships = value.relationships ?? {}
  if (!isObject(relationships)) return '"relationships" is not an object'
  const described = toOneOf(resource)
  for (const name of Object.keys(relationships)) {
    if (!described.some(([known]) => known === name)) return messages.unknownRelationship(name)
  }
  for (const [name, relationship] of described) {
    const member = relationships[name]
    const data = isObject(member) ? member.data : undefined
    if (data === null && !relationship.required) {
      toOne[name] = null
      continue
    }
    if (data === null || data === undefined) return messages.mustExist(name)
    const target = isObject(data) && data.type === relationship.target ? idOf(data.id) : null
    if (target === null) return `${name} must be {"data": {"type": "${relationship.target}", "id": "..."}}`
    toOne[name] = target
  }
  return { resource, record: { id, attributes, toOne } }
}
