import type { Database } from 'bun:sqlite'

/** What the checkpoint thread is started with. */
export interface CheckpointWorkerData {
  readonly path: string
}

export type CheckpointRequest = { readonly kind: 'checkpoint' } | { readonly kind: 'close' }

export type CheckpointMessage =
  | { readonly kind: 'ready' }
  /** `frames` in the WAL, `copied` of them now in the database file. */
  | { readonly kind: 'checkpointed'; readonly frames: number; readonly copied: number }
  | { readonly kind: 'failed'; readonly message: string }

/**
 * The longest a commit waits before a checkpoint is asked for. At the writer's pace under load
 * (some 30,000 WAL pages a second) the WAL then holds a few thousand pages between checkpoints,
 * about what SQLite's own threshold (1,000 pages) lets it hold times three.
 */
export const CHECKPOINT_INTERVAL_MS = 100

/** A WAL of more frames than this (SQLite's own threshold) is started over after the checkpoint. */
export const RESTART_AFTER_FRAMES = 1000

/** The longest a RESTART checkpoint waits for the writer's transaction and for readers to end. */
export const RESTART_WAIT_MS = 20

/** SQLite's default threshold, put back if the thread cannot do the work. */
const AUTOCHECKPOINT_PAGES = 1000

/**
 * The thread's module. In the executable it is an entry point of `bun build --compile` (see
 * package.json), found by its path from src/; this module is bundled into the main one there.
 */
const workerUrl = import.meta.url.includes('$bunfs')
  ? './store/sqlite/commits/checkpoint-worker.ts'
  : new URL('./checkpoint-worker.ts', import.meta.url).href

/**
 * Checkpoints the WAL of the service's database on a thread of its own. SQLite checkpoints in the
 * connection whose commit takes the WAL past 1,000 pages, and a checkpoint waits for the disk twice
 * (the WAL, then the database file): on the one connection that writes for every request, that
 * stopped the event loop, and every request with it, for milliseconds at a time (measured under
 * POST at DURABILITY=normal: the main thread idle 12 % of the time, waiting in fsync).
 *
 * Once the thread is up, the writer's own checkpoints are turned off, and after a commit the thread
 * is asked for a checkpoint within CHECKPOINT_INTERVAL_MS, one at a time: PASSIVE, which never waits
 * for the writer or a reader, then, with the WAL past RESTART_AFTER_FRAMES, RESTART, which holds new
 * writes back for the moment it copies the last frames so that the writer's next commit starts the
 * WAL over. Should the thread fail to start or fail a checkpoint, the writer's own checkpoints come
 * back on: the WAL never grows unchecked.
 *
 * Measured with and without the thread (`bun run bench -- machinery`, three runs on a loaded 2-core
 * machine, docs/performance.md): at DURABILITY=normal PATCH 1.48 and writes beside reads 1.36-1.38
 * times as many by the median of the runs, though single runs ranged 0.65-1.68; at `full`, where
 * writes wait for the WAL's flush anyway, no gain shows (0.94-1.07). The narrowest keep of the pieces.
 */
export class WalCheckpointer {
  private readonly worker: Worker
  private ready = false
  private stopped = false
  /** A checkpoint asked for (or about to be) and not yet answered. */
  private asked = false
  /** A commit came after the checkpoint under way was asked for. */
  private dirty = false
  private timer: ReturnType<typeof setTimeout> | undefined
  private settle: (checkpointing: boolean) => void = () => {}
  /** True once the thread checkpoints and the writer's own checkpoints are off; false if it could not start. */
  readonly started: Promise<boolean> = new Promise((resolve) => {
    this.settle = resolve
  })

  constructor(
    /** The writer's connection, whose automatic checkpoints this turns off and on. */
    private readonly db: Database,
    path: string,
  ) {
    this.worker = new Worker(workerUrl, {
      workerData: { path } satisfies CheckpointWorkerData,
      smol: true,
    } as WorkerOptions)
    // A service stops by closing its store; a forgotten store must not keep a process alive.
    this.worker.unref()
    this.worker.onmessage = (event: MessageEvent<CheckpointMessage>) => this.answered(event.data)
    this.worker.onerror = () => this.fallBack()
    this.worker.addEventListener('close', () => this.fallBack())
  }

  /** Told after each commit of the writer. */
  committed(): void {
    if (!this.ready) return
    if (this.asked) {
      this.dirty = true
      return
    }
    this.asked = true
    this.timer = setTimeout(() => {
      this.timer = undefined
      if (this.ready) this.worker.postMessage({ kind: 'checkpoint' } satisfies CheckpointRequest)
    }, CHECKPOINT_INTERVAL_MS)
    this.timer.unref?.()
  }

  /** Stops the thread, which closes its connection: the writer's close is then the last, and checkpoints. */
  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer)
    if (this.stopped) return
    this.stopped = true
    this.ready = false
    this.settle(false)
    const exited = new Promise<void>((resolve) =>
      this.worker.addEventListener('close', () => resolve(), { once: true }),
    )
    this.worker.postMessage({ kind: 'close' } satisfies CheckpointRequest)
    await exited
  }

  private answered(message: CheckpointMessage): void {
    switch (message.kind) {
      case 'ready':
        if (this.stopped) return
        this.ready = true
        this.db.run('PRAGMA wal_autocheckpoint = 0')
        this.settle(true)
        return
      case 'checkpointed':
        this.asked = false
        if (this.dirty) {
          this.dirty = false
          this.committed()
        }
        return
      case 'failed':
        this.fallBack()
    }
  }

  /** The thread cannot checkpoint: the writer does it again, as SQLite does by default. */
  private fallBack(): void {
    this.settle(false)
    if (this.timer) clearTimeout(this.timer)
    const wasReady = this.ready
    this.ready = false
    if (this.stopped) return
    this.stopped = true
    if (wasReady) {
      try {
        this.db.run(`PRAGMA wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`)
      } catch {
        // The connection is closed or failing: there is no writer left to checkpoint.
      }
    }
    this.worker.terminate()
  }
}
