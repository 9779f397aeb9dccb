import type { Id } from '../../src/model/record'
import { resources } from '../../src/resources/registry'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'

/** What a data set holds and how its records are named. */
export interface DataSet {
  readonly authors: number
  readonly collections: number
  readonly books: number
  readonly authorName: (n: number) => string
  readonly bookName: (n: number) => string
}

/** The data set of the first table: plain names, 100 books an author. */
export const SEED: DataSet = {
  authors: 100,
  collections: 20,
  books: 10_000,
  authorName: (n) => `Author ${n}`,
  bookName: (n) => `Book ${n}: a bench title`,
}

// 20 x 20 compound words ("Ashford", "Silvergate"): 400 distinct words, none the prefix of another,
// so a word-prefix search for one of them finds only that word.
const FIRST =
  'amber ash black bright cinder copper dawn ember frost gold hollow iron moon oak raven salt silver storm thorn winter'
const SECOND =
  'brook crest dale fall field ford gate glen haven hill holm mere moor reach ridge shore stead vale watch wick'
const capital = (word: string) => word.charAt(0).toUpperCase() + word.slice(1)
const VOCABULARY = FIRST.split(' ').flatMap((a) => SECOND.split(' ').map((b) => capital(a + b)))
// Every tenth author has a name one can search for; the others keep "Author <n>".
const NAMED_AUTHORS = [
  'Ada Quillon',
  'Basil Marrowby',
  'Cora Penhallow',
  'Desmond Vairlie',
  'Edith Ormsgill',
  'Felix Tarrow',
  'Greta Mundellow',
  'Hugo Brackenrith',
  'Iris Calloway',
  'Jonah Wetherell',
]

/**
 * The large data set: 1,000 books an author, titled "<word> of <word>" from the vocabulary. Both
 * words step through the 400 with strides prime to 400, the second shifted anew every 400 books:
 * each word is the first word of 250 titles and the second of 250 (a search for one finds about
 * 500 books), and no two titles are the same.
 */
export const LARGE: DataSet = {
  authors: 100,
  collections: 20,
  books: 100_000,
  authorName: (n) => (n % 10 === 0 ? (NAMED_AUTHORS[n / 10 - 1] as string) : `Author ${n}`),
  bookName: (n) => {
    const size = VOCABULARY.length
    return `${VOCABULARY[(n * 7919) % size]} of ${VOCABULARY[(n * 13 + Math.floor((n - 1) / size) * 37) % size]}`
  },
}

/** A word of the large set's titles, and an author's surname, to search for. */
export const SEARCH_WORD = 'silvergate'
export const AUTHOR_SURNAME = 'penhallow'

/** Which collection book `n` (1-based) is in: every tenth book is in none, to exercise `"data": null`. */
export function collectionOf(set: DataSet, n: number): Id | null {
  return n % 10 === 0 ? null : ((n - 1) % set.collections) + 1
}

/** Round-robin, so every author has the same number of books (books / authors). */
export function authorOf(set: DataSet, n: number): Id {
  return ((n - 1) % set.authors) + 1
}

/** Creates issued in one event-loop turn share one transaction (the store's group commit). */
const CHUNK = 1000

/**
 * Fills a fresh database file through the store, as the service itself would, so the rows and
 * the schema are exactly what the service writes. Ids come out 1..N in insertion order: the
 * writes of a turn run in the order they were issued.
 */
export async function seed(path: string, set: DataSet): Promise<void> {
  const store = SqliteStore.open(path, resources)
  try {
    const inChunks = async (count: number, create: (n: number) => ReturnType<SqliteStore['create']>) => {
      for (let from = 1; from <= count; from += CHUNK) {
        const to = Math.min(count, from + CHUNK - 1)
        await Promise.all(Array.from({ length: to - from + 1 }, (_, i) => created(create(from + i))))
      }
    }
    const authors = resources.get('authors')
    const collections = resources.get('book_collections')
    const books = resources.get('books')
    await inChunks(set.authors, (n) => store.create(authors, { attributes: { name: set.authorName(n) }, toOne: {} }))
    await inChunks(set.collections, (n) =>
      store.create(collections, { attributes: { name: `Collection ${n}` }, toOne: {} }),
    )
    await inChunks(set.books, (n) => {
      const toOne = { author: authorOf(set, n), book_collection: collectionOf(set, n) }
      return store.create(books, { attributes: { name: set.bookName(n) }, toOne })
    })
  } finally {
    // Closing the last connection checkpoints the WAL into the main file, so it can be copied.
    await store.close()
  }
}

async function created(result: ReturnType<SqliteStore['create']>): Promise<void> {
  const outcome = await result
  if (!outcome.ok) throw new Error(`seeding failed: missing ${outcome.missing.join(', ')}`)
}
