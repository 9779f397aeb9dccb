import type { ResourceRegistry } from '../resources/registry'
import type {
  CrossedError,
  ReadArgs,
  ReadExecutor,
  ReadMethod,
  ReadReply,
  ReadResult,
  ReadWorkerData,
} from './sqlite-read-calls'
import { decodeResult, type Encoded } from './sqlite-read-codec'
import type { Table } from './sqlite-table'

/** A read that failed on a worker, rebuilt with SQLite's code and errno so that it can be classified. */
export class WorkerReadError extends Error {
  readonly code?: string
  readonly errno?: number
  constructor(crossed: CrossedError) {
    super(crossed.message)
    this.name = crossed.name
    this.code = crossed.code
    this.errno = crossed.errno
    if (crossed.stack) this.stack = crossed.stack
  }
}

interface Pending {
  readonly method: ReadMethod
  readonly args: readonly unknown[]
  readonly resolve: (value: never) => void
  readonly reject: (error: unknown) => void
}

type Tables = (type: string) => Table

interface PoolWorker {
  worker: Worker
  readonly pending: Map<number, Pending>
}

/**
 * The worker's module. In the executable it is an entry point of `bun build --compile` (see
 * package.json), found by its path from src/ in the executable's embedded files; this module is
 * bundled into the main one there, so a path relative to it would not resolve.
 */
const workerUrl = import.meta.url.includes('$bunfs')
  ? './store/sqlite-read-worker.ts'
  : new URL('./sqlite-read-worker.ts', import.meta.url).href

/**
 * Worker threads, each with a read-only connection, that run the reads of lists. A search ranking
 * 100,000 hits or a list of 100,000 books then costs a worker's time, not the event loop's: the
 * main thread keeps answering single records and writes meanwhile. Each call goes to the worker
 * with the fewest calls waiting; a worker that dies fails its calls and is replaced.
 */
export class ReadPool implements ReadExecutor {
  /** Started with the first read, so that a process (or a test) that lists nothing starts none. */
  private readonly workers: (PoolWorker | undefined)[]
  private nextCall = 1
  private closing = false

  private constructor(
    private readonly data: ReadWorkerData,
    size: number,
    /** Rebuilds a worker's encoded answer (see sqlite-read-codec.ts). */
    private readonly decode: (method: ReadMethod, args: readonly unknown[], encoded: Encoded) => unknown,
  ) {
    this.workers = Array.from({ length: size }, () => undefined)
  }

  static lazy(path: string, registry: ResourceRegistry, size: number, busyTimeoutMs: number, tables: Tables): ReadPool {
    return new ReadPool({ path, busyTimeoutMs, descriptions: registry.all }, size, (method, args, encoded) =>
      decodeResult(tables, method, args as ReadArgs<typeof method>, encoded),
    )
  }

  run<M extends ReadMethod>(method: M, args: ReadArgs<M>): Promise<ReadResult<M>> {
    if (this.closing) return Promise.reject(new Error('the store is closed'))
    let target: PoolWorker | undefined
    for (let slot = 0; slot < this.workers.length; slot++) {
      // A message posted before the worker has started waits in its queue.
      const entry = this.workers[slot] ?? this.spawn(slot)
      if (!target || entry.pending.size < target.pending.size) target = entry
    }
    const chosen = target as PoolWorker
    const call = this.nextCall++
    return new Promise<ReadResult<M>>((resolve, reject) => {
      chosen.pending.set(call, { method, args, resolve: resolve as (value: never) => void, reject })
      chosen.worker.postMessage({ call, method, args })
    })
  }

  async close(): Promise<void> {
    this.closing = true
    const running = this.workers.filter((w): w is PoolWorker => w !== undefined)
    await Promise.all(
      running.map(
        ({ worker }) =>
          new Promise<void>((resolve) => {
            worker.addEventListener('close', () => resolve(), { once: true })
            worker.postMessage('close')
          }),
      ),
    )
  }

  private spawn(slot: number): PoolWorker {
    const worker = new Worker(workerUrl, { workerData: this.data } as WorkerOptions)
    const entry: PoolWorker = { worker, pending: new Map() }
    this.workers[slot] = entry
    worker.onmessage = (event: MessageEvent<ReadReply | 'ready'>) => {
      const reply = event.data
      if (reply === 'ready') return
      const pending = entry.pending.get(reply.call)
      if (!pending) return
      entry.pending.delete(reply.call)
      if (!reply.ok) pending.reject(new WorkerReadError(reply.error))
      else pending.resolve(this.decode(pending.method, pending.args, reply.value as Encoded) as never)
    }
    const lost = (reason: string) => {
      // The next read starts a new worker in this slot; the calls this one held fail.
      if (this.workers[slot] === entry) this.workers[slot] = undefined
      const error = new WorkerReadError({ name: 'Error', message: `a read worker stopped: ${reason}` })
      for (const { reject } of entry.pending.values()) reject(error)
      entry.pending.clear()
    }
    worker.onerror = (event) => lost(event.message)
    worker.addEventListener('close', () => lost('it exited'))
    return entry
  }
}
