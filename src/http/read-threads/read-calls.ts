import { JsonApiError } from '../../jsonapi/errors'
import type { FetchLimits } from '../../jsonapi/query'
import type { ResourceDescription } from '../../model/description'
import type { StoreFilter } from '../../model/query'
import { type StoreFaultReason, StoreUnavailableError } from '../../store/faults'
import type { Coding } from '../compression'
import type { ApiResponse } from '../responses'
import type { SearchLane } from '../search-lanes'

/**
 * A read handed to a read worker (see read-pool.ts): everything it needs as plain data, so that
 * the worker can answer it as the main thread would, with its own store.
 */
export type OffloadedRead =
  | {
      readonly op: 'list'
      readonly type: string
      readonly url: string
      /** Narrows the list before the client's filters: the books of one author, say. */
      readonly scope: readonly StoreFilter[]
      /** The cursor pagination profile's URI when the client's Accept asks for it. */
      readonly cursorProfile: string | null
      /** The client's Accept-Encoding: the worker compresses what it streams. */
      readonly acceptEncoding?: string | null
    }
  | {
      readonly op: 'show'
      readonly type: string
      readonly url: string
      readonly id: string
      readonly acceptEncoding?: string | null
    }

/** How a read is run: in the heavy lane (see search-lanes.ts), and its client's signal. */
export interface OffloadOptions {
  readonly lane?: SearchLane
  /** Its client's: in the heavy lane, a read whose client goes away is stopped (see ReadPool). */
  readonly signal?: AbortSignal
}

/** Where the reads whose cost grows with the data are answered: the read workers (see read-pool.ts). */
export interface ReadOffload {
  run(read: OffloadedRead, options?: OffloadOptions): Promise<ApiResponse>
  /**
   * The process has one core to run on: a worker cannot run beside the main thread, so longer
   * lists stay on the main thread (see ONE_CORE_LIST_MAX in read-place.ts).
   */
  readonly oneCore: boolean
}

/** What a read worker is started with. */
export interface ReadWorkerData {
  readonly databaseUrl: string
  /** The main store's Store.identity: a worker finds the same database or serves nothing (503). */
  readonly sameDatabaseAs?: string
  readonly busyTimeoutMs: number
  readonly descriptions: readonly ResourceDescription[]
  readonly prefix: string
  readonly limits: FetchLimits & { readonly maxRelationshipIds: number }
}

/** A failure as it crosses from a worker, rebuilt on the main thread as the same kind of error. */
export type CrossedFailure =
  | {
      readonly kind: 'jsonapi'
      readonly status: number
      readonly errors: JsonApiError['errors']
      readonly headers: Readonly<Record<string, string>>
    }
  | {
      readonly kind: 'store'
      readonly reason: StoreFaultReason
      readonly code: string
      readonly message: string
    }
  | { readonly kind: 'error'; readonly name: string; readonly message: string; readonly stack?: string }

export function crossFailure(error: unknown): CrossedFailure {
  if (error instanceof JsonApiError) {
    return { kind: 'jsonapi', status: error.status, errors: error.errors, headers: error.headers }
  }
  if (error instanceof StoreUnavailableError) {
    return { kind: 'store', reason: error.reason, code: error.code, message: error.message }
  }
  if (error instanceof Error) return { kind: 'error', name: error.name, message: error.message, stack: error.stack }
  return { kind: 'error', name: 'Error', message: String(error) }
}

export function rebuildFailure(failure: CrossedFailure): Error {
  switch (failure.kind) {
    case 'jsonapi':
      return new JsonApiError(failure.status, failure.errors, failure.headers)
    case 'store':
      return new StoreUnavailableError(failure.reason, failure.code, failure.message)
    default: {
      const error = new Error(failure.message)
      error.name = failure.name
      if (failure.stack) error.stack = failure.stack
      return error
    }
  }
}

/**
 * A worker sends the pieces of a streamed answer as they come until they hold at least this many
 * bytes, then waits to be asked again: the pieces stay small (64 KB of text, see
 * document-stream.ts), which keeps memory low, and a round trip carries four, which keeps a 20 MB
 * answer as quick as one 256 KB piece per trip did (two to a trip measured 7 % slower for
 * /books?include=author at 100,000 books). A piece of half as much or more (a batch of plain
 * records, about 170 KB) goes alone, as it did; joining a trip's pieces into one buffer measured
 * 7 MiB more at the peak of /books.
 */
export const ROUND_TRIP_BYTES = 256 * 1024

export type MainMessage =
  | { readonly kind: 'start'; readonly call: number; readonly read: OffloadedRead }
  /** The stream of an answer wants its next piece. */
  | { readonly kind: 'pull'; readonly call: number }
  /** The client went away. */
  | { readonly kind: 'cancel'; readonly call: number }
  | { readonly kind: 'close' }

export type WorkerMessage =
  | { readonly kind: 'ready' }
  | {
      readonly kind: 'answer'
      readonly call: number
      readonly status: number
      readonly headers?: Readonly<Record<string, string>>
      /** The whole body, or null: it follows piece by piece, one per pull. */
      readonly body: string | null
      /** The stored state of the record the answer shows, for its ETag. */
      readonly state?: string
      /** The content coding of the pieces that follow (null: none). */
      readonly coding: Coding | null
      /** The worker's CPU time for the read up to this answer (thread-time.ts), without its wait in the queue. */
      readonly ms: number
    }
  /** The next pieces of a streamed answer, in order: about ROUND_TRIP_BYTES, several to a trip. */
  | { readonly kind: 'piece'; readonly call: number; readonly bytes: readonly Uint8Array[] }
  | { readonly kind: 'end'; readonly call: number }
  | { readonly kind: 'failed'; readonly call: number; readonly failure: CrossedFailure; readonly ms?: number }
