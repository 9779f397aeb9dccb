import { useEffect, useRef, useState } from 'preact/hooks'
import { type Change, subscribe } from './live'

/** A view reads again at most this often, however fast the changes come. */
const MIN_GAP_MS = 300
/** A burst of changes (an atomic batch's, a collection's books) is read once: after this wait. */
const SETTLE_MS = 100

/**
 * Follows the change feed for a view: `relevant` says whether a change touches what the view
 * shows (it may note the change too: a record page hears of its own deletion so). Returns a number
 * that grows each time the view should read again: put it among the dependencies of the effect
 * that reads. A reset of the feed (it may have missed changes) reads again too.
 *
 * At most one read every MIN_GAP_MS: a thousand books written in a second cost a view a few reads.
 */
export function useLiveReload(relevant: (change: Change) => boolean): number {
  const [version, setVersion] = useState(0)
  // The latest `relevant`, which closes over what the view shows now.
  const latest = useRef(relevant)
  latest.current = relevant
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined
    let last = 0
    const schedule = () => {
      if (timer !== undefined) return
      const wait = Math.max(SETTLE_MS, last + MIN_GAP_MS - Date.now())
      timer = setTimeout(() => {
        timer = undefined
        last = Date.now()
        setVersion((v) => v + 1)
      }, wait)
    }
    const unsubscribe = subscribe({
      change: (change) => {
        if (latest.current(change)) schedule()
      },
      reset: schedule,
    })
    return () => {
      clearTimeout(timer)
      unsubscribe()
    }
  }, [])
  return version
}
