import { signal } from '@preact/signals'
import { API, token } from './api/client'

/**
 * The change feed, live: one stream for the whole tab (GET /api/v1/changes as Server-Sent Events,
 * from now), shared by every view that follows it. A view subscribes and hears of each record
 * created, updated or deleted by anyone; `reset` asks it to read again (the stream began afresh
 * and may have missed changes, or the feed lost its place).
 *
 * EventSource where no token is needed; with a token (EventSource cannot send one), the same
 * stream read with fetch, its Authorization header set.
 */

export interface Change {
  /** The change's position in the feed. */
  readonly position: string
  readonly op: 'create' | 'update' | 'delete'
  readonly type: string
  readonly id: string
}

export interface Listener {
  readonly change: (change: Change) => void
  readonly reset?: () => void
}

/** Whether the stream is open: a view may say it is not live. */
export const live = signal(false)
/** Whether a view follows the feed at all: a page that follows nothing (a new record's form) says nothing of it. */
export const following = signal(false)

const listeners = new Set<Listener>()
let stop: (() => void) | undefined
/** The last position heard, to resume after a drop without a gap. */
let position: string | undefined

function changeOf(id: string, data: string): Change | undefined {
  try {
    const record = JSON.parse(data) as {
      attributes?: { op?: Change['op'] }
      relationships?: { resource?: { data?: { type: string; id: string } } }
    }
    const resource = record.relationships?.resource?.data
    const op = record.attributes?.op
    if (!resource || !op) return undefined
    return { position: id, op, type: resource.type, id: resource.id }
  } catch {
    return undefined
  }
}

function heard(id: string, data: string): void {
  position = id
  const change = changeOf(id, data)
  if (change) for (const listener of listeners) listener.change(change)
}

function resetAll(): void {
  for (const listener of listeners) listener.reset?.()
}

/** The feed no longer holds our place: start again from now, and have every view read again. */
function lostPlace(): void {
  position = undefined
  resetAll()
}

/**
 * The stream is open. One that began "from now" (no change heard yet) may have missed what was
 * written between a view's read and this moment: the views read again. One that resumed from a
 * position gets what it missed from the feed itself.
 */
function opened(fromNow: boolean): void {
  live.value = true
  if (fromNow) resetAll()
}

function streamUrl(): string {
  return position === undefined ? `${API}/changes` : `${API}/changes?page[after]=${encodeURIComponent(position)}`
}

/** How long to wait before opening a dropped stream again (the service's own `retry:` too). */
const RETRY_MS = 2000

/**
 * With EventSource. A dropped stream is opened again here, from the last position heard, rather
 * than by EventSource itself: it would ask again the URL it began with, whose page[after] the
 * service prefers to Last-Event-ID (so repeating every change since), and it gives up for good
 * after an answer that is not a stream (a 503 when too many streams are open, say).
 */
function openEventSource(): () => void {
  const fromNow = position === undefined
  const source = new EventSource(streamUrl())
  let retry: ReturnType<typeof setTimeout> | undefined
  source.onopen = () => opened(fromNow)
  source.onerror = () => {
    live.value = false
    source.close()
    retry = setTimeout(restart, RETRY_MS)
  }
  source.addEventListener('change', (event) => heard(event.lastEventId, event.data))
  source.addEventListener('gone', () => {
    source.close()
    lostPlace()
    restart()
  })
  return () => {
    clearTimeout(retry)
    source.close()
  }
}

/** With fetch, for a token: reads the events itself and opens again after a drop. */
function openFetchStream(bearer: string): () => void {
  const abort = new AbortController()
  const run = async () => {
    while (!abort.signal.aborted) {
      const fromNow = position === undefined
      try {
        const response = await fetch(streamUrl(), {
          headers: { accept: 'text/event-stream', authorization: `Bearer ${bearer}` },
          signal: abort.signal,
        })
        if (response.status === 410) {
          lostPlace()
          continue
        }
        // A token the service no longer takes: the views' own reads say so, and the tab's next
        // token (or none) opens the stream again.
        if (response.status === 401) break
        if (!response.ok || !response.body) throw new Error(`the feed answered ${response.status}`)
        opened(fromNow)
        await readEvents(response.body)
      } catch {
        // Dropped or refused: tried again below.
      }
      live.value = false
      if (!abort.signal.aborted) await new Promise((resolve) => setTimeout(resolve, RETRY_MS))
    }
  }
  void run()
  return () => abort.abort()
}

async function readEvents(body: ReadableStream<Uint8Array>): Promise<void> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return
    buffer += decoder.decode(value, { stream: true })
    let end = buffer.indexOf('\n\n')
    while (end !== -1) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      const fields = new Map<string, string>()
      for (const line of block.split('\n')) {
        const colon = line.indexOf(':')
        if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1).replace(/^ /, ''))
      }
      const event = fields.get('event')
      if (event === 'change') heard(fields.get('id') ?? '', fields.get('data') ?? '')
      else if (event === 'gone') lostPlace()
      end = buffer.indexOf('\n\n')
    }
  }
}

function restart(): void {
  stop?.()
  stop = undefined
  live.value = false
  if (listeners.size === 0) return
  stop = token.value ? openFetchStream(token.value) : openEventSource()
}

// A token given or forgotten: the stream is opened again with it.
token.subscribe(() => {
  if (stop) restart()
})

/**
 * How long the stream stays open after its last view left: moving from one page to the next
 * keeps it, and its place, rather than opening another.
 */
const LINGER_MS = 5000
let lingering: ReturnType<typeof setTimeout> | undefined

/** Follows the feed while subscribed; returns the unsubscribe. */
export function subscribe(listener: Listener): () => void {
  listeners.add(listener)
  following.value = true
  clearTimeout(lingering)
  if (!stop) restart()
  return () => {
    listeners.delete(listener)
    if (listeners.size > 0) return
    clearTimeout(lingering)
    lingering = setTimeout(() => {
      if (listeners.size > 0) return
      following.value = false
      restart()
    }, LINGER_MS)
  }
}
