import type { ApiResponse } from '../responses'
import { clientGone } from '../search-lanes'
import {
  type CrossedFailure,
  type MainMessage,
  type OffloadedRead,
  type OffloadOptions,
  type ReadWorkerData,
  rebuildFailure,
  type WorkerMessage,
} from './read-calls'

type Settled = Exclude<WorkerMessage, { kind: 'ready' }>

/**
 * A read whose worker died: the machine's fault (memory, a crash of the runtime), not the
 * client's, so a 503 that invites a retry, which a new worker will answer.
 */
function workerLost(reason: string): CrossedFailure {
  return { kind: 'store', reason: 'unavailable', code: 'READ_WORKER_LOST', message: `a read worker stopped: ${reason}` }
}

/**
 * A worker is held while a read it was sent this long ago has not answered: one sent after it
 * would wait, in a thread that answers one read at a time, for all of its time (a heavy search
 * takes 0.1-2 s, see search-lanes.ts). A page's budget at 100,000 books.
 */
const HELD_MS = 50

/** Whether a read has held the worker for HELD_MS or more, at `now`. */
function held(entry: PoolWorker, now: number): boolean {
  for (const sent of entry.starts.values()) if (now - sent >= HELD_MS) return true
  return false
}

interface PoolWorker {
  readonly worker: Worker
  /** The calls in progress on this worker, each waiting for its next message. */
  readonly calls: Map<number, (message: Settled) => void>
  /** When each call not yet answered was sent, by call. */
  readonly starts: Map<number, number>
  dead: boolean
  /** Fails its calls at once and terminates it; its slot is free for a new worker. */
  readonly stop: (reason: string) => void
}

/**
 * The worker's module. In the executable it is an entry point of `bun build --compile` (see
 * package.json), found by its path from src/ among the executable's files; this module is bundled
 * into the main one there, so a path relative to it would not resolve.
 */
const workerUrl = import.meta.url.includes('$bunfs')
  ? './http/read-threads/read-worker.ts'
  : new URL('./read-worker.ts', import.meta.url).href

/**
 * Threads that answer the reads whose cost grows with the data: lists, and records that include a
 * to-many relationship. Each has its own read-only store, and reads, filters, ranks and renders
 * there: a search ranking 100,000 hits or a list of 100,000 books with its included records costs a
 * worker's time, and the main thread goes on answering single records and writes meanwhile. The
 * answer comes back as JSON text, streamed piece by piece as the client takes it, with one round
 * trip in flight per answer. Each read goes to the worker with the fewest reads in progress that
 * no read holds (see run), a heavy search to a worker of its own (search-lanes.ts); the workers
 * start with the first read, and one that dies fails its reads and is started again by the next.
 */
export class ReadPool {
  private readonly workers: (PoolWorker | undefined)[]
  private nextCall = 1
  private closing = false

  constructor(
    private readonly data: ReadWorkerData,
    /** The workers of the ordinary reads; the heavy lane's is one more. */
    private readonly size: number,
    /**
     * Told the seconds of each round trip to a worker (a read's answer, each piece of a streamed
     * one), as measured here: the worker's database time, with its rendering and queueing.
     */
    private readonly roundTrip: (seconds: number) => void = () => {},
  ) {
    // The ordinary workers, then the spare, then the heavy lane's.
    this.workers = Array.from({ length: size + 2 }, () => undefined)
  }

  /** The workers started and not stopped since. */
  get started(): number {
    return this.workers.filter((entry) => entry !== undefined && !entry.dead).length
  }

  /**
   * Runs a read on the worker with the fewest reads in progress that no read holds (see HELD_MS);
   * when every one is held, on the spare, started then; in the heavy lane (search-lanes.ts, which
   * sends it one read at a time), on a worker of its own: the heavy reads then take one core at
   * most, and never hold the others' workers. A heavy read whose client goes away (`signal`) stops
   * its worker, which a new one replaces at the next heavy read: SQLite cannot be interrupted
   * within a statement, so the old one ends with the statement it is in.
   */
  async run(read: OffloadedRead, options: OffloadOptions = {}): Promise<ApiResponse> {
    if (this.closing) throw new Error('the read workers are stopping')
    const { lane, signal } = options
    if (lane === 'heavy') {
      if (signal?.aborted) throw clientGone()
      const heavy = this.size + 1
      const worker = this.workers[heavy] ?? this.spawn(heavy)
      return this.runOn(worker, read, this.roundTrip, signal)
    }
    const now = performance.now()
    let target: PoolWorker | undefined
    let free: PoolWorker | undefined
    for (let slot = 0; slot < this.size; slot++) {
      // A message posted before the worker has started waits in its queue.
      const entry = this.workers[slot] ?? this.spawn(slot)
      if (!target || entry.calls.size < target.calls.size) target = entry
      if (!held(entry, now) && (!free || entry.calls.size < free.calls.size)) free = entry
    }
    if (!free) {
      const spare = this.workers[this.size] ?? this.spawn(this.size)
      if (!held(spare, now)) free = spare
    }
    return this.runOn(free ?? (target as PoolWorker), read, this.roundTrip)
  }

  /**
   * Starts the first `count` workers (all by default) and runs `reads` on each, one after another,
   * their answers read to the end and dropped, and not timed (they are no client's): what a
   * client's first read there would otherwise wait for, the thread's start (its modules, its store)
   * and its first statements, is done. Rejects with the first failure, once each has run them.
   */
  async warm(reads: readonly OffloadedRead[], count = this.size): Promise<void> {
    if (this.closing) throw new Error('the read workers are stopping')
    const workers = this.workers.slice(0, count).map((entry, slot) => entry ?? this.spawn(slot))
    const untimed = () => {}
    const runs = workers.map(async (worker) => {
      for (const read of reads) {
        const { body } = await this.runOn(worker, read, untimed)
        if (body instanceof ReadableStream) for await (const _ of body) untimed()
      }
    })
    const outcomes = await Promise.allSettled(runs)
    const failed = outcomes.find((outcome) => outcome.status === 'rejected')
    if (failed) throw failed.reason
  }

  private async runOn(
    worker: PoolWorker,
    read: OffloadedRead,
    roundTrip: (seconds: number) => void,
    /** The client's, in the heavy lane: when it aborts before the answer, the worker is stopped. */
    stopOn?: AbortSignal,
  ): Promise<ApiResponse> {
    const call = this.nextCall++
    const lostWhileWaiting: Settled = { kind: 'failed', call, failure: workerLost('it had stopped') }
    const next = () =>
      new Promise<Settled>((resolve) => {
        if (worker.dead) resolve(lostWhileWaiting)
        else worker.calls.set(call, resolve)
      })
    const post = (message: MainMessage) => worker.worker.postMessage(message)
    const started = performance.now()
    const answered = next()
    post({ kind: 'start', call, read })
    worker.starts.set(call, started)
    // Stopped only when this read is all it runs: a stream still sent from it would be cut short.
    const stop = () => {
      if (worker.calls.size === 1 && worker.calls.has(call)) worker.stop('its client went away')
    }
    stopOn?.addEventListener('abort', stop, { once: true })
    const answer = await answered.finally(() => {
      worker.starts.delete(call)
      stopOn?.removeEventListener('abort', stop)
    })
    roundTrip((performance.now() - started) / 1000)
    if (answer.kind === 'failed') {
      worker.calls.delete(call)
      throw stopOn?.aborted ? clientGone() : rebuildFailure(answer.failure)
    }
    if (answer.kind !== 'answer') throw new Error(`a read worker answered ${answer.kind} first`)
    if (answer.body !== null) {
      worker.calls.delete(call)
      return {
        status: answer.status,
        body: answer.body,
        headers: answer.headers,
        state: answer.state,
        spentMs: answer.ms,
      }
    }
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const asked = performance.now()
        const piece = next()
        post({ kind: 'pull', call })
        const message = await piece
        roundTrip((performance.now() - asked) / 1000)
        if (message.kind === 'piece') {
          for (const bytes of message.bytes) controller.enqueue(bytes)
          return
        }
        worker.calls.delete(call)
        if (message.kind === 'end') controller.close()
        else if (message.kind === 'failed') controller.error(rebuildFailure(message.failure))
      },
      cancel() {
        worker.calls.delete(call)
        post({ kind: 'cancel', call })
      },
    })
    return {
      status: answer.status,
      body,
      headers: answer.headers,
      state: answer.state,
      coding: answer.coding,
      spentMs: answer.ms,
    }
  }

  /** Stops the workers, each closing its store; reads still streaming are cut off. */
  async close(): Promise<void> {
    this.closing = true
    const running = this.workers.filter((w): w is PoolWorker => w !== undefined)
    await Promise.all(
      running.map(
        ({ worker }) =>
          new Promise<void>((resolve) => {
            worker.addEventListener('close', () => resolve(), { once: true })
            worker.postMessage({ kind: 'close' } satisfies MainMessage)
          }),
      ),
    )
  }

  private spawn(slot: number): PoolWorker {
    // smol: JavaScriptCore's small heap, which collects sooner; measured, it keeps the peak memory
    // of a 20 MB list with includes some 5 MiB lower, for no measurable loss of speed.
    const worker = new Worker(workerUrl, { workerData: this.data, smol: true } as WorkerOptions)
    const entry: PoolWorker = {
      worker,
      calls: new Map(),
      starts: new Map(),
      dead: false,
      stop: (reason) => {
        lost(reason)
        void worker.terminate()
      },
    }
    this.workers[slot] = entry
    worker.onmessage = (event: MessageEvent<WorkerMessage>) => {
      const message = event.data
      if (message.kind === 'ready') return
      entry.calls.get(message.call)?.(message)
    }
    const lost = (reason: string) => {
      entry.dead = true
      if (this.workers[slot] === entry) this.workers[slot] = undefined
      const failure = workerLost(reason)
      for (const [call, settle] of entry.calls) settle({ kind: 'failed', call, failure })
      entry.calls.clear()
    }
    worker.onerror = (event) => lost(event.message)
    worker.addEventListener('close', () => lost('it exited'))
    return entry
  }
}
