import { closeSync, fdatasync, fstatSync, openSync, statSync } from 'node:fs'

/** fdatasync on the runtime's thread pool. */
function datasync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fdatasync(fd, (error) => (error ? reject(error) : resolve())))
}

/**
 * Flushes a WAL file to the disk off the event loop, for DURABILITY=full on the service's writer.
 *
 * With synchronous=FULL SQLite flushes the WAL inside COMMIT, on the thread that answers every
 * request: each group commit stopped the event loop for the disk's flush (a quarter of a
 * millisecond to several), reads included. Instead the writer commits with synchronous=NORMAL,
 * which writes the same WAL frames without the flush, and its writes are answered once this has
 * flushed the file (fdatasync on the runtime's thread pool; a flush of the file takes what any of
 * its descriptors wrote). Commits made while one flush is under way share the next one, so a
 * write waits for at most two.
 *
 * What differs from synchronous=FULL: between a commit and its flush other requests can already
 * read what it wrote. After a power cut in that moment the write is lost, as it is with FULL; its
 * writer was never answered, but a reader may have seen it.
 *
 * Measured with and without it (`bun run bench -- machinery`, docs/performance.md): at `full` POST
 * 1.59-2.04 and PATCH 1.38-2.11 times the writes, and reads beside writes 2.5 times as many with a
 * p99 of 11-13 ms against 26-32: the largest gain of the write path's machinery.
 */
export class WalFlusher {
  private fd: number | undefined
  /** The flush under way, and the one that follows it for commits made meanwhile. */
  private running: Promise<void> | undefined
  private queued: Promise<void> | undefined
  private closed = false
  /**
   * The first failed flush. After one, Linux may have marked the pages it could not write as clean,
   * so a later flush can succeed without them; and since each WAL frame's checksum follows from the
   * one before, recovery after a power cut would stop at the gap and drop later commits too. So a
   * failure sticks: every later flush fails with it, until the service is started again.
   */
  private failure: Error | undefined

  /**
   * Opens the WAL at `walPath` (the database file's real path, links followed, as SQLite does, and
   * `-wal`); throws if it cannot, so that the store keeps SQLite's own flush instead.
   */
  constructor(private readonly walPath: string) {
    this.fd = openSync(walPath, 'r')
  }

  /** The failure that stopped flushing, if one did. */
  get failed(): Error | undefined {
    return this.failure
  }

  /** Resolves once everything committed before this call is on disk. */
  flush(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure)
    if (this.closed) return Promise.reject(new Error('the WAL flusher is closed'))
    if (!this.running) return this.start()
    // The flush under way may have begun before this commit: the next one covers it.
    this.queued ??= this.running.then(
      () => this.afterRunning(),
      () => this.afterRunning(),
    )
    return this.queued
  }

  /** Waits for the flushes asked for, then closes the descriptor; later flushes fail. */
  async close(): Promise<void> {
    this.closed = true
    await this.queued?.catch(() => {})
    await this.running?.catch(() => {})
    if (this.fd !== undefined) closeSync(this.fd)
    this.fd = undefined
  }

  private afterRunning(): Promise<void> {
    this.queued = undefined
    return this.failure ? Promise.reject(this.failure) : this.start()
  }

  private start(): Promise<void> {
    let flushing: Promise<void>
    try {
      flushing = datasync(this.descriptor())
    } catch (error) {
      flushing = Promise.reject(error)
    }
    const running = flushing
      .catch((error: Error) => {
        this.failure ??= error
        throw error
      })
      .finally(() => {
        if (this.running === running) this.running = undefined
      })
    this.running = running
    return running
  }

  /**
   * The WAL's descriptor, opened again if the file is no longer the one it was opened on. SQLite
   * keeps the WAL while any connection is open, so it only moves if the file was replaced.
   */
  private descriptor(): number {
    if (this.fd !== undefined && fstatSync(this.fd).ino === statSync(this.walPath).ino) return this.fd
    if (this.fd !== undefined) closeSync(this.fd)
    this.fd = undefined
    this.fd = openSync(this.walPath, 'r')
    return this.fd
  }
}
