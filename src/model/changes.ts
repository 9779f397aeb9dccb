import type { Id } from './record'

/** What happened to a record: the feed's `op`. */
export type ChangeOp = 'create' | 'update' | 'delete'

/**
 * One entry of the change feed: a record of `type` created, updated or deleted. `id` is the
 * change's position in the feed, opaque to clients (each backend writes its own form, see
 * src/store/change-log.ts); the feed is in the order of these positions.
 */
export interface Change {
  readonly id: string
  readonly type: string
  readonly recordId: Id
  readonly op: ChangeOp
}

/** A window of the feed: the changes after a position, of some types, at most `size` read. */
export interface ChangeWindow {
  /** A position the backend gave (or START_OF_FEED); null: from the oldest change kept. */
  readonly after: string | null
  /** Types kept; null: every type. A page reads `size` changes and keeps those of these types. */
  readonly types: readonly string[] | null
  readonly size: number
}

/** The position before every change: a follower that has seen nothing starts here. */
export const START_OF_FEED = '0'

/**
 * A window read: the changes, the position to ask after next (past every change read), and how
 * many rows of the log the read took, those of other types and place holders included (what
 * `size` counts: a window read in batches stops where one read would have).
 */
export type ChangeRead =
  | { readonly kind: 'page'; readonly changes: readonly Change[]; readonly next: string; readonly rows: number }
  /** The position asked after is older than what is kept: changes after it were pruned. */
  | { readonly kind: 'gone' }
