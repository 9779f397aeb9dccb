/**
 * Limits on what one request may ask for, so that no request costs more than a bounded amount
 * however it is written. Each is set well above what a real client sends; docs/api.md's "Limits" lists
 * them with the answer a client gets past each.
 */
export interface RequestLimits {
  /** Words in `filter[search]`: each word is one more prefix query for FTS5 to merge. */
  readonly maxSearchWords: number
  /** Relationships in one `include` path: `books.author` is 2. */
  readonly maxIncludeDepth: number
  /** Comma-separated paths in `include`, as written (a repeated path counts each time). */
  readonly maxIncludePaths: number
  /** Ids in one relationship filter: `filter[author]=1,2,3` or `?author_id=1,2,3`. */
  readonly maxFilterIds: number
  /** Resource identifiers in one to-many relationship write, REST or atomic. */
  readonly maxRelationshipIds: number
  /**
   * Resource identifiers in all the to-many operations of one atomic request together: the store
   * writes each on the main thread, some 20 µs apiece (bench/parts/limits/bounds.ts), so 3,000 keep a request
   * within about 60 ms of it.
   */
  readonly maxAtomicIds: number
  /**
   * Object members (name/value pairs) in a request body, counted before it is parsed: parsing and
   * checking 110,000 (1 MB of unknown attributes) cost some 100 ms of the main thread, 20,000
   * about 15 ms. config.ts raises it, when unset, to what the identifier limits let through.
   */
  readonly maxBodyMembers: number
  /** Errors an error document lists in full; one more error counts the rest. */
  readonly maxErrors: number
}

/** The defaults: each setting of config.ts falls back to these. */
export const DEFAULT_LIMITS: RequestLimits = Object.freeze({
  maxSearchWords: 10,
  maxIncludeDepth: 3,
  maxIncludePaths: 10,
  maxFilterIds: 100,
  maxRelationshipIds: 1000,
  maxAtomicIds: 3000,
  maxBodyMembers: 20_000,
  maxErrors: 100,
})
