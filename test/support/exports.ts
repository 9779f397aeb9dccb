import type { ResourceDescription } from '../../src/model/description'
import type { Id, StoredRecord } from '../../src/model/record'
import { authors } from '../../src/resources/authors'
import { bookCollections } from '../../src/resources/book-collections'
import { books } from '../../src/resources/books'
import { resources } from '../../src/resources/registry'
import type { Store } from '../../src/store/store'

/*
 * Catalogues for the tests of export and restore (test/commands/restore*.test.ts), seeded and read
 * through the Store alone, so that what they check does not rest on the snapshot or the restore.
 */

async function make(
  store: Store,
  resource: ResourceDescription,
  name: string,
  toOne: Record<string, Id | null> = {},
): Promise<Id> {
  const made = await store.create(resource, { attributes: { name }, toOne })
  if (!made.ok) throw new Error(`seeding ${resource.type} ${name} failed: ${made.missing.join(', ')}`)
  return made.record.id
}

/**
 * A catalogue with what a lossy export loses: authors and collections without books, a book in no
 * collection, ids with gaps (deleted records) and deleted records above the highest ids left, names
 * with quotes, backslashes, spaces around them and other scripts. Afterwards:
 * - authors 1, 2, 4 (no books), 5; the highest id handed out 6;
 * - book collections 1, 3 (no books); the highest 4;
 * - books 1, 3 (no collection), 4 (its collection deleted), 5, 6; the highest 7.
 */
export async function seedGappyCatalogue(store: Store): Promise<void> {
  const leGuin = await make(store, authors, 'Ursula K. Le Guin')
  const butler = await make(store, authors, 'Octavia E. Butler')
  const gone = await make(store, authors, 'Deleted Author')
  await make(store, authors, 'No Books Yet')
  const zola = await make(store, authors, 'Émile Zola')
  const lastAuthor = await make(store, authors, 'Deleted Last Author')
  const earthsea = await make(store, bookCollections, 'Earthsea')
  const goneShelf = await make(store, bookCollections, 'Gone Shelf')
  await make(store, bookCollections, 'Empty Shelf')
  const lastShelf = await make(store, bookCollections, 'Deleted Last Shelf')
  await make(store, books, 'A Wizard of Earthsea', { author: leGuin, book_collection: earthsea })
  const goneBook = await make(store, books, 'Deleted Book', { author: gone, book_collection: earthsea })
  await make(store, books, 'Kindred', { author: butler, book_collection: null })
  await make(store, books, 'The "Quoted", \\ back\\slash {json}', { author: zola, book_collection: goneShelf })
  await make(store, books, '  spaced  ', { author: zola, book_collection: earthsea })
  await make(store, books, '源氏物語 📚', { author: leGuin, book_collection: null })
  const lastBook = await make(store, books, 'Deleted Last Book', { author: lastAuthor, book_collection: lastShelf })
  for (const [resource, id] of [
    [books, goneBook],
    [books, lastBook],
    [authors, gone],
    [authors, lastAuthor],
    [bookCollections, goneShelf],
    [bookCollections, lastShelf],
  ] as const) {
    const deleted = await store.delete(resource, id)
    if (deleted.status !== 'deleted') throw new Error(`seeding: deleting ${resource.type} ${id} gave ${deleted.status}`)
  }
}

/** Every record of every type, in id order, read through the Store. */
export async function dumpCatalogue(store: Store): Promise<Record<string, StoredRecord[]>> {
  const dump: Record<string, StoredRecord[]> = {}
  for (const resource of resources.all) {
    const records: StoredRecord[] = []
    const order = { filters: [], sort: [{ field: 'id', descending: false }] }
    for await (const batch of store.stream(resource, order, 500)) records.push(...batch)
    dump[resource.type] = records
  }
  return dump
}

/** The ids the store hands out next: it creates an author, a collection and a book of that author. */
export async function nextIds(store: Store): Promise<{ author: Id; collection: Id; book: Id }> {
  const author = await make(store, authors, 'Created after the restore')
  const collection = await make(store, bookCollections, 'Created after the restore')
  const book = await make(store, books, 'Created after the restore', { author, book_collection: collection })
  return { author, collection, book }
}

/** Writes records until `done` resolves: each round an author and a book of theirs, and every third the book moved. */
export async function writeUntil(store: Store, done: Promise<unknown>): Promise<number> {
  let stopped = false
  void done.finally(() => {
    stopped = true
  })
  let rounds = 0
  while (!stopped) {
    const author = await make(store, authors, `Written meanwhile ${rounds}`)
    const book = await make(store, books, `Written meanwhile ${rounds}`, { author, book_collection: null })
    if (rounds % 3 === 0) await store.update(books, book, { attributes: {}, toOne: { author: 1 } })
    rounds++
  }
  return rounds
}
