/**
 * The rules a write must keep whatever the request looks like: a referenced record must exist, a
 * required to-one cannot be null, and a record cannot be left without the owner its required
 * to-one names (a book without its author). REST controllers and atomic operations both enforce
 * them through this module, as JsonApiDotNetCore's services layer sits between its controllers
 * and its repositories: each rule and its error object is written once, here. The folder is the
 * layer between the parsed request (src/jsonapi) and the store (src/store); it never imports
 * src/http. Each function returns the error, or undefined, so that a caller can first answer 404
 * for a record that does not exist, as the REST endpoints do.
 *
 * Pointers: `base` is the pointer of the document holding `data`. REST documents use '' and get
 * the interface's relative `data/attributes/author` (interface.md shows it so); an atomic
 * operation's `/atomic:operations/N` gets `/atomic:operations/N/data/attributes/author`.
 */
import { type FieldError, httpError, type JsonApiError, unprocessable } from '../jsonapi/errors'
import { messages } from '../jsonapi/messages'
import type { WriteRequest } from '../jsonapi/request-document'
import type { ResourceDescription, ToManyRelationship } from '../model/description'
import type { Id } from '../model/record'
import type { RecordInput, ToManyChange } from '../model/writes'
import type { ResourceRegistry } from '../resources/registry'

/** Where `data/<path>` is under `base`. */
function underData(base: string, path: string): string {
  return base === '' ? `data/${path}` : `${base}/data/${path}`
}

/** "Author must exist" for each missing to-one relationship, in the description's order. */
export function mustExist(resource: ResourceDescription, missing: Iterable<string>, base = ''): FieldError[] {
  const names = new Set(missing)
  return Object.keys(resource.relationships)
    .filter((name) => names.has(name))
    .map((name) => ({
      detail: messages.mustExist(name),
      parameter: name,
      pointer: underData(base, `attributes/${name}`),
    }))
}

/** The 422 of a write the store refused: the records these relationships name do not exist. */
export function referencesMissing(resource: ResourceDescription, missing: Iterable<string>, base = ''): JsonApiError {
  return unprocessable(mustExist(resource, missing, base))
}

/** The 422 of a write: missing related records first, then field errors; undefined if it has neither. */
export function invalidWrite(
  resource: ResourceDescription,
  missing: Iterable<string>,
  errors: readonly FieldError[],
  base = '',
): JsonApiError | undefined {
  const fields = [...mustExist(resource, missing, base), ...errors]
  return fields.length > 0 ? unprocessable(fields) : undefined
}

/** What asks the store which references point at nothing: any backend's Store has it. */
export interface ReferenceChecker {
  missingReferences(resource: ResourceDescription, toOne: RecordInput['toOne']): Promise<string[]>
}

/** Whether a parsed write fails whatever the store holds: a field error or a reference already missing. */
export function failsAsParsed(write: WriteRequest): boolean {
  return write.errors.length > 0 || write.missing.size > 0
}

/**
 * Reports every failure of a parsed write at once. The store is asked about the references only
 * when the write already fails, so that a valid write costs no extra query: the store's own write
 * reports a missing record then (see `referencesMissing`).
 */
export async function checkReferencesExist(
  store: ReferenceChecker,
  resource: ResourceDescription,
  write: WriteRequest,
): Promise<JsonApiError | undefined> {
  if (!failsAsParsed(write)) return undefined
  const missing = [...write.missing, ...(await store.missingReferences(resource, write.input.toOne))]
  return invalidWrite(resource, missing, write.errors)
}

/** A required to-one given null: "Author must exist" (422). */
export function requiredToOne(
  resource: ResourceDescription,
  name: string,
  /** What the request gives it: null, or anything naming a record. */
  value: unknown,
  base = '',
): JsonApiError | undefined {
  const relationship = resource.relationships[name]
  if (value !== null || relationship?.kind !== 'to-one' || !relationship.required) return undefined
  return referencesMissing(resource, [name], base)
}

/**
 * Removing or replacing the members of a to-many relationship whose inverse is required would
 * leave them owned by nothing: 403. Only adding is allowed (a book moves to another author by
 * adding it there). `pointer` is where the request names the change; REST has none.
 */
export function refuseOrphaning(
  registry: ResourceRegistry,
  resource: ResourceDescription,
  name: string,
  change: ToManyChange,
  pointer?: string,
): JsonApiError | undefined {
  // inverseOf throws unless `name` is a to-many relationship: the registry checked that at start.
  if (change === 'add' || !registry.inverseOf(resource, name).required) return undefined
  const members = (resource.relationships[name] as ToManyRelationship).target
  const detail = messages.cannotLeave(members, resource.singular)
  return httpError(403, detail, pointer === undefined ? undefined : { pointer })
}

/**
 * A record others still point at through a required to-one cannot be deleted (an author with
 * books): 409, as the store reported it. `pointer` is the operation's; REST has none.
 */
export function stillReferenced(
  resource: ResourceDescription,
  id: Id,
  restricted: { readonly by: ResourceDescription; readonly count: number },
  pointer?: string,
): JsonApiError {
  const dependent = { singular: restricted.by.singular, plural: restricted.by.type }
  const detail = messages.stillReferenced(resource.singular, id, restricted.count, dependent)
  return httpError(409, detail, pointer === undefined ? undefined : { pointer })
}
