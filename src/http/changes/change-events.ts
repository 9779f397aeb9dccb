import { changeEvent } from '../../jsonapi/changes'
import type { Change } from '../../model/changes'

/** A window of the feed as Server-Sent Events: one buffer, and where each change's event starts. */
export interface EncodedWindow {
  readonly bytes: Uint8Array
  /** offsets[i]: where the event of change i starts; offsets[changes.length]: the end. */
  readonly offsets: readonly number[]
}

const encoder = new TextEncoder()
const encoded = new WeakMap<readonly Change[], EncodedWindow>()

/**
 * The events of a window, encoded once however many streams send it: a stream sends a view of the
 * one buffer (no copy), so a thousand streams at the same part of the feed hold its bytes once.
 */
export function encodedWindow(window: readonly Change[]): EncodedWindow {
  let done = encoded.get(window)
  if (!done) {
    const events = window.map((change) => encoder.encode(changeEvent(change)))
    const offsets = [0]
    for (const event of events) offsets.push((offsets.at(-1) ?? 0) + event.length)
    const bytes = new Uint8Array(offsets.at(-1) ?? 0)
    for (const [index, event] of events.entries()) bytes.set(event, offsets[index])
    done = { bytes, offsets }
    encoded.set(window, done)
  }
  return done
}

/** The events of `window` from index `from` on, of `types` only when given: views of its buffer. */
export function eventsFrom(window: readonly Change[], from: number, types: ReadonlySet<string> | null): Uint8Array[] {
  const { bytes, offsets } = encodedWindow(window)
  if (!types) return [bytes.subarray(offsets[from])]
  const views: Uint8Array[] = []
  for (let index = from; index < window.length; index++) {
    if (types.has(window[index]?.type ?? '')) views.push(bytes.subarray(offsets[index], offsets[index + 1]))
  }
  return views
}
