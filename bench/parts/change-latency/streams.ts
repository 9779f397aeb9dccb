/**
 * The streams of the change-latency part: N clients of `GET /api/v1/changes` with `Accept:
 * text/event-stream`, each noting when every change reached it. An event is matched to a write by
 * its record and operation (`attributes.op`, `relationships.resource.data`), not by its change id,
 * which the writer does not know; the time is taken as the bytes are read, before parsing.
 */

/** A change as the writer knows it: `create:books:12`. */
export const changeKey = (op: string, type: string, id: string) => `${op}:${type}:${id}`

interface ChangeRecord {
  readonly attributes?: { readonly op?: string }
  readonly relationships?: { readonly resource?: { readonly data?: { readonly type?: string; readonly id?: string } } }
}

/** One open stream: the first arrival of each change, and how many came more than once. */
export interface OpenStream {
  readonly arrivals: Map<string, number>
  readonly duplicates: () => number
  /** Events whose data did not parse as a change record. */
  readonly malformed: () => number
  /** Set when the stream ended or failed before it was closed. */
  readonly ended: () => string | undefined
  readonly close: () => void
}

/** The change's key from one event's `data:` lines, or undefined when they hold no change record. */
function keyOf(data: string): string | undefined {
  try {
    const record = JSON.parse(data) as ChangeRecord
    const op = record.attributes?.op
    const resource = record.relationships?.resource?.data
    if (op === undefined || resource?.type === undefined || resource.id === undefined) return undefined
    return changeKey(op, resource.type, resource.id)
  } catch {
    return undefined
  }
}

/**
 * Opens a stream on `origin` and resolves once its headers arrived (the service answers them before
 * any change); throws if the answer is not a 200 event stream.
 */
export async function openStream(origin: string): Promise<OpenStream> {
  const abort = new AbortController()
  const response = await fetch(`${origin}/api/v1/changes`, {
    headers: { accept: 'text/event-stream', 'accept-encoding': 'identity' },
    signal: abort.signal,
  })
  const type = response.headers.get('content-type') ?? ''
  if (response.status !== 200 || !type.startsWith('text/event-stream') || response.body === null) {
    const body = await response.text().catch(() => '')
    throw new Error(
      `GET /api/v1/changes (text/event-stream) answered ${response.status} ${type}: ${body.slice(0, 300)}`,
    )
  }
  const arrivals = new Map<string, number>()
  let duplicates = 0
  let malformed = 0
  let ended: string | undefined
  let closed = false
  const reader = response.body.getReader()
  const decoder = new TextDecoder()
  const read = async () => {
    let pending = ''
    for (;;) {
      const { done, value } = await reader.read()
      const at = performance.now()
      if (done) {
        if (!closed) ended = 'the service ended the stream'
        return
      }
      pending += decoder.decode(value, { stream: true })
      // Events end with a blank line; a chunk may hold several, or part of one.
      for (let end = pending.indexOf('\n\n'); end !== -1; end = pending.indexOf('\n\n')) {
        const block = pending.slice(0, end)
        pending = pending.slice(end + 2)
        const data = block
          .split('\n')
          .filter((line) => line.startsWith('data:'))
          .map((line) => line.slice(line.startsWith('data: ') ? 6 : 5))
          .join('\n')
        if (data === '') continue // a comment (heartbeat) or an event without data
        const key = keyOf(data)
        if (key === undefined) malformed++
        else if (arrivals.has(key)) duplicates++
        else arrivals.set(key, at)
      }
    }
  }
  read().catch((error: Error) => {
    if (!closed) ended = `the stream failed: ${error.message}`
  })
  return {
    arrivals,
    duplicates: () => duplicates,
    malformed: () => malformed,
    ended: () => ended,
    close: () => {
      closed = true
      abort.abort()
    },
  }
}

/** Opens `count` streams, a few at a time, all of them open (headers received) on return. */
export async function openStreams(origin: string, count: number): Promise<OpenStream[]> {
  const streams: OpenStream[] = []
  while (streams.length < count) {
    const batch = Math.min(10, count - streams.length)
    const opened = await Promise.allSettled(Array.from({ length: batch }, () => openStream(origin)))
    for (const one of opened) if (one.status === 'fulfilled') streams.push(one.value)
    const failed = opened.find((one) => one.status === 'rejected')
    if (failed !== undefined) {
      for (const stream of streams) stream.close()
      throw failed.reason
    }
  }
  return streams
}
