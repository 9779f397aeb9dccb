/**
 * What the app shows of each type: its names for people, its list's columns and the search box's
 * label. The columns other than the name are a book's related records, read with `include`.
 */
export type TypeName = 'books' | 'authors' | 'book_collections'

export interface Column {
  readonly header: string
  /** `name`; a to-one relationship whose record's name is shown; or a link to the record's books. */
  readonly field: 'name' | 'author' | 'book_collection' | 'books'
  /** The key of `sort` that orders by it, if any. */
  readonly sort?: string
}

export interface Kind {
  readonly type: TypeName
  /** The list's path under the app, and its heading. */
  readonly path: string
  readonly title: string
  readonly one: string
  readonly searchLabel: string
  readonly columns: readonly Column[]
  readonly include?: string
  /** The books list's query parameter that keeps to one record of this type (`author=3`). */
  readonly booksFilter?: string
}

export const KINDS: readonly Kind[] = [
  {
    type: 'books',
    path: 'books',
    title: 'Books',
    one: 'book',
    searchLabel: 'Search books',
    columns: [
      { header: 'Title', field: 'name', sort: 'name' },
      { header: 'Author', field: 'author' },
      { header: 'Collection', field: 'book_collection' },
    ],
    include: 'author,book_collection',
  },
  {
    type: 'authors',
    path: 'authors',
    title: 'Authors',
    one: 'author',
    searchLabel: 'Search authors',
    booksFilter: 'author',
    columns: [
      { header: 'Name', field: 'name', sort: 'name' },
      { header: 'Books', field: 'books' },
    ],
  },
  {
    type: 'book_collections',
    path: 'collections',
    title: 'Collections',
    one: 'collection',
    searchLabel: 'Search collections',
    booksFilter: 'collection',
    columns: [
      { header: 'Name', field: 'name', sort: 'name' },
      { header: 'Books', field: 'books' },
    ],
  },
]

export function kindOfPath(path: string): Kind | undefined {
  return KINDS.find((kind) => kind.path === path)
}

export function kindOfType(type: string): Kind | undefined {
  return KINDS.find((kind) => kind.type === type)
}
