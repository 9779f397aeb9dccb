import type { ApiResponse } from '../responses'
import {
  type CrossedFailure,
  type MainMessage,
  type OffloadedRead,
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

interface PoolWorker {
  readonly worker: Worker
  /** The calls in progress on this worker, each waiting for its next message. */
  readonly calls: Map<number, (message: Settled) => void>
  dead: boolean
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
 * trip in flight per answer. Each read goes to the worker with the fewest reads in progress; the workers
 * start with the first read, and one that dies fails its reads and is started again by the next.
 */
export class ReadPool {
  private readonly workers: (PoolWorker | undefined)[]
  private nextCall = 1
  private closing = false

  constructor(
    private readonly data: ReadWorkerData,
    size: number,
    /**
     * Told the seconds of each round trip to a worker (a read's answer, each piece of a streamed
     * one), as measured here: the worker's database time, with its rendering and queueing.
     */
    private readonly roundTrip: (seconds: number) => void = () => {},
  ) {
    this.workers = Array.from({ length: size }, () => undefined)
  }

  /** The workers started and not stopped since. */
  get started(): number {
    return this.workers.filter((entry) => entry !== undefined && !entry.dead).length
  }

  async run(read: OffloadedRead): Promise<ApiResponse> {
    if (this.closing) throw new Error('the read workers are stopping')
    let target: PoolWorker | undefined
    for (let slot = 0; slot < this.workers.length; slot++) {
      // A message posted before the worker has started waits in its queue.
      const entry = this.workers[slot] ?? this.spawn(slot)
      if (!target || entry.calls.size < target.calls.size) target = entry
    }
    return this.runOn(target as PoolWorker, read, this.roundTrip)
  }

  /**
   * Starts the first `count` workers (all by default) and runs `reads` on each, one after another,
   * their answers read to the end and dropped, and not timed (they are no client's): what a
   * client's first read there would otherwise wait for, the thread's start (its modules, its store)
   * and its first statements, is done. Rejects with the first failure, once each has run them.
   */
  async warm(reads: readonly OffloadedRead[], count = this.workers.length): Promise<void> {
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
    const answer = await answered
    roundTrip((performance.now() - started) / 1000)
    if (answer.kind === 'failed') {
      worker.calls.delete(call)
      throw rebuildFailure(answer.failure)
    }
    if (answer.kind !== 'answer') throw new Error(`a read worker answered ${answer.kind} first`)
    if (answer.body !== null) {
      worker.calls.delete(call)
      return { status: answer.status, body: answer.body, headers: answer.headers, state: answer.state }
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
    return { status: answer.status, body, headers: answer.headers, state: answer.state, coding: answer.coding }
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
    const entry: PoolWorker = { worker, calls: new Map(), dead: false }
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
