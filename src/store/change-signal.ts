/** Wakes whoever waits for this process's writes: the change feed's streams, right after a commit. */
export class ChangeSignal {
  private readonly listeners = new Set<() => void>()

  /** Calls `listener` after each write this process commits; returns a function that stops it. */
  listen(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** A write committed. Costs nothing while nobody listens. */
  committed(): void {
    for (const listener of this.listeners) listener()
  }

  get listened(): boolean {
    return this.listeners.size > 0
  }
}
