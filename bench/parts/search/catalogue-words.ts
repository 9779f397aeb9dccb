/**
 * What the query family (bench/parts/search/family.ts) is drawn from: the words of the catalogue as
 * loaded, read back from its database (every book, in id order, in batches), not from the
 * generator, so that the queries are the catalogue's own whatever made it. Words are split and
 * folded as the service splits a search: runs of letters and digits after NFKC, lower-cased.
 */
import { Database } from 'bun:sqlite'
import { SQL } from 'bun'

/** A book as read back: its title and its author's and series' names. */
export interface CatalogueBook {
  readonly id: number
  readonly title: string
  readonly authorId: number
  readonly author: string
  readonly collection: string | null
}

export interface NamedCount {
  readonly name: string
  readonly books: number
}

export interface CatalogueWords {
  readonly books: number
  /** Each word of the titles, with the number of books whose title holds it. */
  readonly titleWords: ReadonlyMap<string, number>
  /** Every word of every title, author and series name, sorted: to know what matches nothing. */
  readonly allWords: readonly string[]
  readonly authors: readonly NamedCount[]
  readonly collections: readonly NamedCount[]
  /** Every SAMPLE_EVERY-th book (at least SAMPLE_LEAST of them): the books queries are taken from. */
  readonly samples: readonly CatalogueBook[]
}

const SAMPLE_LEAST = 4000

export const wordsOf = (text: string): string[] =>
  (text.normalize('NFKC').match(/[\p{L}\p{N}]+/gu) ?? []).map((w) => w.toLowerCase())

/** Counts a catalogue's words as its books are fed in, id order. */
export class WordTally {
  private readonly titleWords = new Map<string, number>()
  private readonly authorBooks = new Map<number, { name: string; books: number }>()
  private readonly collectionBooks = new Map<string, number>()
  private readonly samples: CatalogueBook[] = []
  private books = 0
  private readonly every: number

  constructor(expectedBooks: number) {
    this.every = Math.max(1, Math.floor(expectedBooks / SAMPLE_LEAST))
  }

  add(book: CatalogueBook): void {
    if (this.books % this.every === 0) this.samples.push(book)
    this.books++
    for (const word of new Set(wordsOf(book.title))) this.titleWords.set(word, (this.titleWords.get(word) ?? 0) + 1)
    const author = this.authorBooks.get(book.authorId)
    if (author) author.books++
    else this.authorBooks.set(book.authorId, { name: book.author, books: 1 })
    if (book.collection !== null) {
      this.collectionBooks.set(book.collection, (this.collectionBooks.get(book.collection) ?? 0) + 1)
    }
  }

  finish(): CatalogueWords {
    const all = new Set(this.titleWords.keys())
    for (const { name } of this.authorBooks.values()) for (const w of wordsOf(name)) all.add(w)
    for (const name of this.collectionBooks.keys()) for (const w of wordsOf(name)) all.add(w)
    return {
      books: this.books,
      titleWords: this.titleWords,
      allWords: [...all].sort(),
      // In id order of the authors, and of the series by name: the same catalogue, the same lists.
      authors: [...this.authorBooks.entries()].sort(([a], [b]) => a - b).map(([, author]) => author),
      collections: [...this.collectionBooks.entries()]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([name, books]) => ({ name, books })),
      samples: this.samples,
    }
  }
}

/** Whether some word of the catalogue starts with `prefix`: a binary search of the sorted words. */
export function anyWordStartsWith(words: readonly string[], prefix: string): boolean {
  let low = 0
  let high = words.length
  while (low < high) {
    const middle = (low + high) >> 1
    if ((words[middle] ?? '') < prefix) low = middle + 1
    else high = middle
  }
  return (words[low] ?? '').startsWith(prefix)
}

const BATCH = 50_000

interface Row {
  id: number | string
  title: string
  author_id: number | string
  author: string
  collection: string | null
}

const bookOf = (row: Row): CatalogueBook => ({
  id: Number(row.id),
  title: row.title,
  authorId: Number(row.author_id),
  author: row.author,
  collection: row.collection,
})

/** Reads every book of the catalogue at `url` (sqlite:// or postgres://) into a tally. */
export async function readCatalogueWords(url: string, expectedBooks: number): Promise<CatalogueWords> {
  const tally = new WordTally(expectedBooks)
  const select = `SELECT b.id, b.name AS title, b.author_id, a.name AS author, c.name AS collection
    FROM books b JOIN authors a ON a.id = b.author_id LEFT JOIN book_collections c ON c.id = b.book_collection_id`
  if (url.startsWith('sqlite://')) {
    const db = new Database(url.slice('sqlite://'.length), { readonly: true })
    try {
      const query = db.query<Row, [number, number]>(`${select} WHERE b.id > ? ORDER BY b.id LIMIT ?`)
      for (let after = 0; ; ) {
        const rows = query.all(after, BATCH)
        for (const row of rows) tally.add(bookOf(row))
        const last = rows.at(-1)
        if (last === undefined) break
        after = Number(last.id)
      }
    } finally {
      db.close()
    }
    return tally.finish()
  }
  const sql = new SQL(url, { max: 1 })
  try {
    for (let after = 0; ; ) {
      const rows = (await sql.unsafe(`${select} WHERE b.id > $1 ORDER BY b.id LIMIT $2`, [after, BATCH])) as Row[]
      for (const row of rows) tally.add(bookOf(row))
      const last = rows.at(-1)
      if (last === undefined) break
      after = Number(last.id)
    }
  } finally {
    await sql.close()
  }
  return tally.finish()
}
