import type { ChangeLog } from '../store/change-log'

/** The default of CHANGES_RETENTION: a week, long enough for a client offline over a weekend. */
export const DEFAULT_CHANGES_RETENTION_SECONDS = 7 * 24 * 3600

/**
 * Prunes changes older than `retentionSeconds` in the background, every minute (or every
 * retention period when that is shorter); every instance may, one at a time (the stores see to it).
 * Returns a function that stops it. The timer keeps no process alive.
 */
export function startPruning(log: ChangeLog, retentionSeconds: number, onError: (error: unknown) => void): () => void {
  let running = false
  const timer = setInterval(() => {
    if (running) return
    running = true
    log
      .prune(retentionSeconds)
      .catch(onError)
      .finally(() => {
        running = false
      })
  }, Math.min(retentionSeconds, 60) * 1000)
  timer.unref()
  return () => clearInterval(timer)
}
