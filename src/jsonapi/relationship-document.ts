import { Type as t } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { ResourceDescription } from '../model/description'
import type { Id } from '../model/record'
import { httpError } from './errors'
import { parseId } from './ids'

const linkage = t.Object({ type: t.String(), id: t.Union([t.String(), t.Number()]) })
const relationshipDocument = TypeCompiler.Compile(t.Object({ data: t.Union([t.Null(), linkage, t.Array(linkage)]) }))

type Linkage = { type: string; id: string | number }

/** A relationship request body: `{"data": null | {type, id} | [{type, id}, ...]}` (400 otherwise). */
function linkageOf(body: unknown): Linkage | Linkage[] | null {
  if (!relationshipDocument.Check(body)) {
    const error = relationshipDocument.Errors(body).First()
    throw httpError(
      400,
      'The request body must be a relationship document: {"data": null, a resource identifier, or an array of them}',
      { pointer: error?.path.startsWith('/data') ? '/data' : '' },
    )
  }
  return body.data
}

/** 409 unless `type` names `target` (singular or plural). */
export function checkIdentifierType(target: ResourceDescription, type: string, pointer: string): void {
  if (type !== target.type && type !== target.singular) {
    throw httpError(409, `Type "${type}" does not match this relationship, which takes "${target.type}"`, {
      pointer: `${pointer}/type`,
    })
  }
}

/** The id of one identifier of `target`; 409 for another type, null for an id no record can have. */
function identifierId(target: ResourceDescription, identifier: Linkage, pointer: string): Id | null {
  checkIdentifierType(target, identifier.type, pointer)
  return parseId(identifier.id)
}

/**
 * What a to-one relationship request sets: `{ id }`, `{ id: null }` to clear, or `{ invalid }`,
 * the identifier's id when it is one no record can have.
 */
export function parseToOneDocument(
  target: ResourceDescription,
  body: unknown,
): { id: Id | null; invalid?: undefined } | { id?: undefined; invalid: string } {
  const data = linkageOf(body)
  if (Array.isArray(data)) {
    throw httpError(400, 'A to-one relationship takes one resource identifier or null', { pointer: '/data' })
  }
  if (data === null) return { id: null }
  const id = identifierId(target, data, '/data')
  return id === null ? { invalid: String(data.id) } : { id }
}

/** 400 when a to-many write names more than `max` records: the cost of a write grows with them. */
export function checkMemberCount(count: number, max: number): void {
  if (count > max) {
    throw httpError(400, `A relationship write takes at most ${max} resource identifiers (got ${count})`, {
      pointer: '/data',
    })
  }
}

/** The ids a to-many relationship request names; `invalid` holds the identifiers no record can have. */
export function parseToManyDocument(
  target: ResourceDescription,
  body: unknown,
  maxIds: number,
): { ids: Id[]; invalid: string[] } {
  const data = linkageOf(body)
  if (!Array.isArray(data)) {
    throw httpError(400, 'A to-many relationship takes an array of resource identifiers', { pointer: '/data' })
  }
  checkMemberCount(data.length, maxIds)
  const ids: Id[] = []
  const invalid: string[] = []
  data.forEach((identifier, i) => {
    const id = identifierId(target, identifier, `/data/${i}`)
    if (id === null) invalid.push(String(identifier.id))
    else ids.push(id)
  })
  return { ids, invalid }
}
