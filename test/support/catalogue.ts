import { expect } from 'bun:test'
import type { Answer, TestApp } from './harness'

/**
 * A small catalogue for the fetching-parameter tests (include, fields, sort, filter, page), created
 * through the API, and the exact resource objects the service renders for it.
 *
 * Books, in creation (id) order:
 *
 * | key           | name                      | author | collection |
 * |---------------|---------------------------|--------|------------|
 * | leftHand      | The Left Hand of Darkness | ursula | hainish    |
 * | dispossessed  | The Dispossessed          | ursula | hainish    |
 * | guards        | Guards! Guards!           | terry  | discworld  |
 * | mort          | Mort                      | terry  | discworld  |
 * | ursulaStories | Collected Stories         | ursula | none       |
 * | terryStories  | Collected Stories         | terry  | none       |
 * | smallGods     | Small Gods                | terry  | discworld  |
 *
 * Authors: ursula (Ursula K. Le Guin), terry (Terry Pratchett), nobody (Nobody Yet, no books).
 * Collections: hainish (Hainish Cycle), discworld (Discworld), empty (Empty shelf, no books).
 *
 * Every name starts with a capital letter and names differ first at letters of the same case, so
 * that byte order, case-insensitive order and locale order all sort them alike. Two books share
 * the name "Collected Stories" to show how ties are broken.
 */

export const notIncluded = { meta: { included: false } } as const

export interface Identifier {
  readonly type: string
  readonly id: string
}

export interface Resource {
  readonly id: string
  readonly type: string
  readonly attributes: Record<string, unknown>
  readonly relationships: Record<string, unknown>
}

export interface SeededAuthor {
  readonly id: string
  readonly name: string
}

export interface SeededCollection {
  readonly id: string
  readonly name: string
}

export interface SeededBook {
  readonly id: string
  readonly name: string
  readonly author: string
  readonly collection: string | null
}

export type BookRelationship = 'author' | 'book_collection'

export interface Catalogue {
  readonly authors: { readonly ursula: SeededAuthor; readonly terry: SeededAuthor; readonly nobody: SeededAuthor }
  readonly collections: {
    readonly hainish: SeededCollection
    readonly discworld: SeededCollection
    readonly empty: SeededCollection
  }
  readonly books: {
    readonly leftHand: SeededBook
    readonly dispossessed: SeededBook
    readonly guards: SeededBook
    readonly mort: SeededBook
    readonly ursulaStories: SeededBook
    readonly terryStories: SeededBook
    readonly smallGods: SeededBook
  }
  /** Every book, in id order. */
  readonly allBooks: readonly SeededBook[]
  /** Every author, in id order. */
  readonly allAuthors: readonly SeededAuthor[]
  /** Every collection, in id order. */
  readonly allCollections: readonly SeededCollection[]
  /**
   * A book as the service renders it: `attributes.name`, and each relationship in `linked` with
   * `data` linkage, the others as `{"meta":{"included":false}}`.
   */
  book(book: SeededBook, linked?: readonly BookRelationship[]): Resource
  /** An author; `books` with linkage (every book of the author, in id order) when `linked`. */
  author(author: SeededAuthor, linked?: boolean): Resource
  /** A book collection; `books` with linkage (its books, in id order) when `linked`. */
  collection(collection: SeededCollection, linked?: boolean): Resource
}

export async function seedCatalogue(t: TestApp): Promise<Catalogue> {
  const author = async (name: string): Promise<SeededAuthor> => ({ id: await t.create('authors', { name }), name })
  const collection = async (name: string): Promise<SeededCollection> => ({
    id: await t.create('book_collections', { name }),
    name,
  })
  const ursula = await author('Ursula K. Le Guin')
  const terry = await author('Terry Pratchett')
  const nobody = await author('Nobody Yet')
  const hainish = await collection('Hainish Cycle')
  const discworld = await collection('Discworld')
  const empty = await collection('Empty shelf')

  const book = async (name: string, by: SeededAuthor, within: SeededCollection | null): Promise<SeededBook> => {
    const attributes: Record<string, unknown> = { name, author_id: Number(by.id) }
    if (within) attributes.book_collection_id = Number(within.id)
    return { id: await t.create('books', attributes), name, author: by.id, collection: within?.id ?? null }
  }
  const books = {
    leftHand: await book('The Left Hand of Darkness', ursula, hainish),
    dispossessed: await book('The Dispossessed', ursula, hainish),
    guards: await book('Guards! Guards!', terry, discworld),
    mort: await book('Mort', terry, discworld),
    ursulaStories: await book('Collected Stories', ursula, null),
    terryStories: await book('Collected Stories', terry, null),
    smallGods: await book('Small Gods', terry, discworld),
  }
  const allBooks = Object.values(books).sort((a, b) => Number(a.id) - Number(b.id))
  const bookIds = (which: (b: SeededBook) => boolean): Identifier[] =>
    allBooks.filter(which).map((b) => ({ type: 'books', id: b.id }))

  return {
    authors: { ursula, terry, nobody },
    collections: { hainish, discworld, empty },
    books,
    allBooks,
    allAuthors: [ursula, terry, nobody],
    allCollections: [hainish, discworld, empty],
    book: (b, linked = []) => ({
      id: b.id,
      type: 'books',
      attributes: { name: b.name },
      relationships: {
        author: linked.includes('author') ? { data: { type: 'authors', id: b.author } } : notIncluded,
        book_collection: linked.includes('book_collection')
          ? { data: b.collection === null ? null : { type: 'book_collections', id: b.collection } }
          : notIncluded,
      },
    }),
    author: (a, linked = false) => ({
      id: a.id,
      type: 'authors',
      attributes: { name: a.name },
      relationships: { books: linked ? { data: bookIds((b) => b.author === a.id) } : notIncluded },
    }),
    collection: (c, linked = false) => ({
      id: c.id,
      type: 'book_collections',
      attributes: { name: c.name },
      relationships: { books: linked ? { data: bookIds((b) => b.collection === c.id) } : notIncluded },
    }),
  }
}

const typeOrder = ['authors', 'book_collections', 'books']

/** Records ordered by type, then by numeric id: `included` has no order of its own to assert. */
export function byTypeAndId<T extends Identifier>(records: readonly T[]): T[] {
  return [...records].sort(
    (a, b) => typeOrder.indexOf(a.type) - typeOrder.indexOf(b.type) || Number(a.id) - Number(b.id),
  )
}

/**
 * Asserts a 200 whose body is exactly `expected`, except that `included` is compared without
 * regard to order (it has none). Duplicates in `included` still fail, as the lengths differ. When
 * `expected` has no `included`, the body must not have the key at all.
 */
export function expectDocument(answer: Answer, expected: { data: unknown; included?: readonly Resource[] }): void {
  expect(answer.status).toBe(200)
  const body = answer.json
  const normalized =
    body && Array.isArray(body.included) ? { ...body, included: byTypeAndId(body.included as Resource[]) } : body
  const wanted = expected.included ? { ...expected, included: byTypeAndId(expected.included) } : expected
  expect(normalized).toEqual(wanted)
  if (!expected.included) expect(Object.keys(body ?? {})).not.toContain('included')
}

/** The ids of the primary records of a list answer, in order. */
export function ids(answer: Answer): string[] {
  return (answer.json.data as Identifier[]).map((record) => record.id)
}

/** A query string built from pairs, with values percent-encoded and brackets in names left as they are. */
export function query(params: Record<string, string>): string {
  return Object.entries(params)
    .map(([name, value]) => `${name}=${encodeURIComponent(value)}`)
    .join('&')
}
