import { validateString } from '../../jsonapi/request-document'
import { storedText } from '../../jsonapi/visible-text'
import type { NamedBook } from '../../model/imports'
import { authors } from '../../resources/authors'
import { bookCollections } from '../../resources/book-collections'
import { books } from '../../resources/books'
import { printable } from './printable'

/** The fields of a line, in the order of the CSV header; the members of a JSON line. */
export const BOOK_FIELDS = ['title', 'author', 'collection'] as const

/**
 * A book of an import line, or why the line is bad. The names pass the rules the API applies to
 * the same names, with the same words: a title is a book's name, an author's and a collection's
 * name theirs. An empty collection ('' or null; absent in JSON) means none.
 */
export function namedBook(sentTitle: unknown, sentAuthor: unknown, sentCollection: unknown): NamedBook | string {
  // Names as the API stores them (NFC): the same name typed either way finds the same author.
  const title = storedText(books.attributes.name, sentTitle)
  const author = storedText(authors.attributes.name, sentAuthor)
  const collection = storedText(bookCollections.attributes.name, sentCollection)
  const wrong =
    validateString('title', books.attributes.name, title === undefined ? '' : title) ??
    validateString('author', authors.attributes.name, author === undefined ? '' : author)
  if (wrong) return wrong
  if (collection === undefined || collection === null || collection === '') {
    return { title: title as string, author: author as string, collection: null }
  }
  const wrongCollection = validateString('collection', bookCollections.attributes.name, collection)
  if (wrongCollection) return wrongCollection
  return { title: title as string, author: author as string, collection: collection as string }
}

/** Where a CSV record holds the title, the author and the collection (none: every book in none). */
export interface BookColumns {
  readonly title: number
  readonly author: number
  readonly collection: number | null
}

/**
 * A book from the fields of a CSV record (after the header, whose `names` it has as many fields
 * as). Spaces around a name are dropped: a spreadsheet's `Dune, Frank Herbert` names Frank Herbert.
 */
export function bookFromCsv(
  fields: readonly string[],
  columns: BookColumns,
  names: readonly string[],
): NamedBook | string {
  if (fields.length !== names.length) {
    const header = printable(names.join(','))
    return `${fields.length} field${fields.length === 1 ? '' : 's'} where the header has ${names.length} (${header})`
  }
  const field = (at: number | null) => (at === null ? '' : (fields[at] ?? '').trim())
  return namedBook(field(columns.title), field(columns.author), field(columns.collection))
}

/** A book from a JSON line: an object with title, author and, optionally, collection. */
export function bookFromJson(text: string): NamedBook | string {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    return `not valid JSON (${printable((error as Error).message)})`
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return 'not a JSON object such as {"title": "...", "author": "...", "collection": null}'
  }
  const record = value as Record<string, unknown>
  const unknown = Object.keys(record).find((key) => !(BOOK_FIELDS as readonly string[]).includes(key))
  if (unknown !== undefined) return `unknown member "${printable(unknown)}" (a line has ${BOOK_FIELDS.join(', ')})`
  return namedBook(record.title, record.author, record.collection)
}
