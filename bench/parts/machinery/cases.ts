/**
 * What `bun run bench -- machinery` measures (bench/machinery.ts): each piece of the SQLite
 * backend's optional machinery (src/store/sqlite/commits/switches.ts) on the scenarios it exists for,
 * the service with it against the same service started with CATALOGUE_WITHOUT=<piece>.
 */
import type { MachineryPiece } from '../../../src/store/sqlite/commits/switches'
import type { Durability } from '../../../src/store/sqlite/open-database'
import { SEED } from '../../data/seed'
import { getBook, patchBook, postBook } from '../../harness/requests'

type Plan = typeof postBook | typeof patchBook | ReturnType<typeof getBook>

/** A load that wrk sends: one plan, or two at once (reads beside writes), each at its connections. */
export interface Load {
  readonly name: string
  readonly parts: readonly { readonly label: string; readonly plan: Plan; readonly concurrency: number }[]
}

export interface MachineryCase {
  readonly piece: MachineryPiece
  readonly durability: Durability
  /** `--workers`: 1, one process pinned to the server's core; more, spread over every core. */
  readonly workers: number
  readonly load: Load
}

const CONCURRENCY = 32

const post: Load = { name: 'POST a book', parts: [{ label: 'POST', plan: postBook, concurrency: CONCURRENCY }] }
const patch: Load = {
  name: 'PATCH a book (rename)',
  parts: [{ label: 'PATCH', plan: patchBook, concurrency: CONCURRENCY }],
}
/** Reads while writes (and so checkpoints and flushes) go on: what a read waits for meanwhile. */
const mixed: Load = {
  name: 'GET one book beside POST (16 + 16 connections)',
  parts: [
    { label: 'GET', plan: getBook(SEED), concurrency: CONCURRENCY / 2 },
    { label: 'POST', plan: postBook, concurrency: CONCURRENCY / 2 },
  ],
}

const on = (piece: MachineryPiece, durability: Durability, loads: readonly Load[], workers = 1): MachineryCase[] =>
  loads.map((load) => ({ piece, durability, workers, load }))

/**
 * - wal-flush: only at `full` (at `normal` nothing is flushed); the flush inside COMMIT stops the
 *   event loop, so reads beside writes are where it should show.
 * - checkpointer: at `normal`, the setting its figure came from (docs/performance.md), and at `full`.
 * - group-commit: without it each write is a transaction of its own (the WAL flush, where on, still
 *   shares one fdatasync among the commits made meanwhile).
 */
export const machineryCases: readonly MachineryCase[] = [
  ...on('wal-flush', 'full', [post, patch, mixed]),
  ...on('checkpointer', 'normal', [post, patch, mixed]),
  ...on('checkpointer', 'full', [post, mixed]),
  ...on('group-commit', 'full', [post, patch]),
  ...on('group-commit', 'normal', [post, patch]),
]
