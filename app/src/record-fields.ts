import { type Answer, api, type Doc, type ErrorObject, query } from './api/client'
import type { Kind, TypeName } from './kinds'

/*
 * A record as the form edits it: its name, and for a book its author and collection (each an id
 * with the name the person sees); read with the ETag that guards the write (If-Match), and
 * written back as a JSON:API document. The API's refusals are told to the field they name.
 */

/** A related record as a combobox offers it. */
export interface Choice {
  readonly id: string
  readonly name: string
}

export interface Fields {
  readonly name: string
  readonly author: Choice | null
  readonly collection: Choice | null
}

export const EMPTY: Fields = { name: '', author: null, collection: null }

/** The fields of the form: the name, and a book's two relationships. */
export type FieldName = keyof Fields

/** A record as stored now, and the tag that says so. */
export interface Stored {
  readonly fields: Fields
  /** The strong ETag of the record's GET: what If-Match sends back. */
  readonly etag: string | null
}

type RecordDocument = Doc<'get_book'> | Doc<'get_author'> | Doc<'get_book_collection'>
type Linkage = { readonly type: string; readonly id: string } | null | undefined

/**
 * The record as stored. `include` names only what the form shows: an author's or a collection's
 * default answer includes all their books, which for a long list is streamed with a weak tag
 * that guards no write (docs/caching.md); without them the tag is strong.
 */
export async function readStored(kind: Kind, id: string, signal?: AbortSignal): Promise<Stored> {
  const include = kind.type === 'books' ? 'author,book_collection' : ''
  const answer: Answer<RecordDocument> = await api('GET', `/${kind.type}/${id}${query({ include })}`, {
    ...(signal ? { signal } : {}),
  })
  const { data, included = [] } = answer.document as {
    data: { attributes: { name?: string }; relationships?: Record<string, { data?: Linkage }> }
    included?: readonly { type: string; id: string; attributes: { name?: string } }[]
  }
  const related = (name: string): Choice | null => {
    const linkage = data.relationships?.[name]?.data
    if (!linkage) return null
    const record = included.find((r) => r.type === linkage.type && r.id === linkage.id)
    return { id: linkage.id, name: record?.attributes.name ?? `#${linkage.id}` }
  }
  const fields: Fields = {
    name: data.attributes.name ?? '',
    author: kind.type === 'books' ? related('author') : null,
    collection: kind.type === 'books' ? related('book_collection') : null,
  }
  return { fields, etag: answer.etag }
}

export function sameFields(a: Fields, b: Fields): boolean {
  return a.name === b.name && a.author?.id === b.author?.id && a.collection?.id === b.collection?.id
}

interface WriteDocument {
  readonly data: {
    readonly type: TypeName
    readonly id?: string
    readonly attributes: { readonly name: string }
    readonly relationships?: Record<string, { readonly data: { type: TypeName; id: string } | null }>
  }
}

/**
 * The document a create or an update sends: every field of the form (If-Match makes sure they
 * replace only what the person saw). An emptied Author is sent as `null`, which the API's schema
 * does not allow, so that the API refuses it in its own words (`Author must exist`), shown by the
 * field like any other refusal.
 */
function writeDocument(kind: Kind, fields: Fields, id?: string): WriteDocument {
  const linkage = (type: TypeName, choice: Choice | null) => ({ data: choice ? { type, id: choice.id } : null })
  return {
    data: {
      type: kind.type,
      ...(id === undefined ? {} : { id }),
      attributes: { name: fields.name },
      ...(kind.type === 'books'
        ? {
            relationships: {
              author: linkage('authors', fields.author),
              book_collection: linkage('book_collections', fields.collection),
            },
          }
        : {}),
    },
  }
}

/** Creates the record; answers its id. */
export async function createRecord(kind: Kind, fields: Fields): Promise<string> {
  const answer = await api<{ data: { id: string } }>('POST', `/${kind.type}`, { body: writeDocument(kind, fields) })
  return answer.document.data.id
}

/** Updates the record if it is still as `etag` says (412 otherwise). */
export async function updateRecord(kind: Kind, id: string, fields: Fields, etag: string | null): Promise<void> {
  await api('PATCH', `/${kind.type}/${id}`, {
    body: writeDocument(kind, fields, id),
    ...(etag ? { ifMatch: etag } : {}),
  })
}

/** Deletes the record if it is still as `etag` says (412 otherwise; 409 for an author with books). */
export async function deleteRecord(kind: Kind, id: string, etag: string | null): Promise<void> {
  await api('DELETE', `/${kind.type}/${id}`, etag ? { ifMatch: etag } : {})
}

/**
 * The field an error is about, from its `source.pointer` (`data/attributes/name`, with or without
 * the leading slash; a relationship as `data/relationships/author` or the attribute that sets it,
 * `author_id`) or `source.parameter`; none for an error about the request as a whole.
 */
export function fieldOf(error: ErrorObject): FieldName | undefined {
  const pointer = error.source?.pointer?.replace(/^\//, '')
  const member = pointer?.match(/^data\/(?:attributes|relationships)\/([a-z_]+)/)?.[1] ?? error.source?.parameter
  switch (member) {
    case 'name':
      return 'name'
    case 'author':
    case 'author_id':
      return 'author'
    case 'book_collection':
    case 'book_collection_id':
      return 'collection'
    default:
      return undefined
  }
}
