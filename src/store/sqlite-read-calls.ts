import type { ResourceDescription } from '../resources/description'
import type { SqliteReader } from './sqlite-reader'

/** The reads that can run on a worker: each takes and returns plain data, so it crosses as a message. */
export type ReadMethod = 'list' | 'page' | 'matchingIds' | 'findMany' | 'members'

export type ReadArgs<M extends ReadMethod> = Parameters<SqliteReader[M]>
export type ReadResult<M extends ReadMethod> = ReturnType<SqliteReader[M]>

/** Runs a read somewhere: inline on a connection of this thread, or on a worker thread. */
export interface ReadExecutor {
  run<M extends ReadMethod>(method: M, args: ReadArgs<M>): Promise<ReadResult<M>>
  close(): Promise<void>
}

export interface ReadRequest {
  readonly call: number
  readonly method: ReadMethod
  readonly args: readonly unknown[]
}

/** An error as it crosses from a worker: enough to classify it (SQLite's code and errno) and log it. */
export interface CrossedError {
  readonly name: string
  readonly message: string
  readonly code?: string
  readonly errno?: number
  readonly stack?: string
}

export type ReadReply =
  | { readonly call: number; readonly ok: true; readonly value: unknown }
  | { readonly call: number; readonly ok: false; readonly error: CrossedError }

/** What a worker is started with. */
export interface ReadWorkerData {
  readonly path: string
  readonly busyTimeoutMs: number
  /** The resource descriptions are plain data: the worker builds its own registry from them. */
  readonly descriptions: readonly ResourceDescription[]
}

/** The inline executor: reads on the caller's own connection, for `:memory:` and READ_WORKERS=0. */
export function inlineReads(reader: SqliteReader): ReadExecutor {
  return {
    async run(method, args) {
      return (reader[method] as (...a: typeof args) => ReadResult<typeof method>)(...args)
    },
    async close() {},
  }
}
