/* The books of an import file, and what an import added. */

/** A book as an import file gives it: its author and collection by name, not by id. */
export interface NamedBook {
  readonly title: string
  readonly author: string
  /** Null: in no collection. */
  readonly collection: string | null
}

/** What an import added (or, in a dry run, would add). */
export interface ImportCounts {
  readonly books: number
  /** Books left out because the catalogue (or an earlier line) already holds the same one. */
  readonly present: number
  readonly authors: number
  readonly collections: number
}
