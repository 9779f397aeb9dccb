import type { TestApp } from './harness'

/** The ids of the records `seedLibrary` creates. */
export interface Library {
  readonly authorId: string
  readonly collectionId: string
  readonly bookId: string
}

/**
 * Creates, through the API, an author, a book collection and one book by that author in that
 * collection, so that tests have existing records of every type to read, update and point at.
 */
export async function seedLibrary(app: TestApp): Promise<Library> {
  const authorId = await app.create('authors', { name: 'Ursula K. Le Guin' })
  const collectionId = await app.create('book_collections', { name: 'Hainish Cycle' })
  const bookId = await app.create(
    'books',
    { name: 'The Left Hand of Darkness', author_id: Number(authorId) },
    { book_collection: { data: { type: 'book_collections', id: collectionId } } },
  )
  return { authorId, collectionId, bookId }
}
