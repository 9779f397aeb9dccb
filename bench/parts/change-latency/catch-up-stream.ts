/**
 * One stream of the catch-up case: `GET /api/v1/changes?page[after]=<start>` with `Accept:
 * text/event-stream`, read as fast as the client can, each event's id checked against the feed as a
 * JSON page read lists it (the same id at the same place: every change once, in order), until it has
 * them all, fails, or its deadline passes. How it ended is said plainly: a stream the server resets
 * or ends early is "reset after N events", never a hang.
 */

/** How a catch-up stream ended. */
export type Outcome =
  | 'complete' // every change, once, in order
  | 'refused' // no 200 event stream
  | 'reset' // the connection failed before every change came
  | 'ended' // the server ended the stream before every change came
  | 'out of order' // an id other than the one expected at its place
  | 'deadline' // still incomplete when its time was up

export interface CatchUpStream {
  readonly outcome: Outcome
  /** Events read in order before it ended (all of them when complete). */
  readonly received: number
  /** Milliseconds from the request sent to the last event read (the whole feed when complete). */
  readonly ms: number
  /** Milliseconds from the request sent to the first event, when one came. */
  readonly firstEventMs?: number
  /** What went wrong: the error, the status, the id out of place. */
  readonly detail?: string
}

const EVENT_PREFIX = 'id: '

/** The id of one event block, or undefined for a comment (the opening, a heartbeat). */
function idOf(block: string): string | undefined {
  if (!block.startsWith(EVENT_PREFIX)) return undefined
  const end = block.indexOf('\n')
  return block.slice(EVENT_PREFIX.length, end === -1 ? undefined : end)
}

/** Reads the stream at `url` until it has every id of `expected`, or `deadline` (a performance.now() time) passed. */
export async function catchUp(url: string, expected: readonly string[], deadline: number): Promise<CatchUpStream> {
  const abort = new AbortController()
  const timer = setTimeout(() => abort.abort(), Math.max(0, deadline - performance.now()))
  const sent = performance.now()
  let received = 0
  let lastAt = sent
  let firstAt: number | undefined
  const result = (outcome: Outcome, detail?: string): CatchUpStream => ({
    outcome,
    received,
    ms: lastAt - sent,
    ...(firstAt === undefined ? {} : { firstEventMs: firstAt - sent }),
    ...(detail === undefined ? {} : { detail }),
  })
  try {
    const response = await fetch(url, {
      headers: { accept: 'text/event-stream', 'accept-encoding': 'identity' },
      signal: abort.signal,
    })
    const type = response.headers.get('content-type') ?? ''
    if (response.status !== 200 || !type.startsWith('text/event-stream') || response.body === null) {
      const body = await response.text().catch(() => '')
      return result('refused', `${response.status} ${type}: ${body.slice(0, 200)}`)
    }
    const reader = response.body.getReader()
    const decoder = new TextDecoder()
    let pending = ''
    for (;;) {
      const { done: over, value } = await reader.read()
      if (over) return result('ended', 'the server ended the stream')
      const at = performance.now()
      pending += decoder.decode(value, { stream: true })
      // Events end with a blank line; a chunk may hold several, or part of one.
      let from = 0
      for (let end = pending.indexOf('\n\n'); end !== -1; end = pending.indexOf('\n\n', from)) {
        const block = pending.slice(from, end)
        from = end + 2
        // The service's word that the position was pruned: it ends the stream after it.
        if (block.startsWith('event: gone')) return result('ended', `event: gone after ${received} events`)
        const id = idOf(block)
        if (id === undefined) continue
        const wanted = expected[received]
        // The record in `data:` must be the change the `id:` line names.
        if (id !== wanted || !block.includes(`"type":"changes","id":"${id}"`)) {
          return result('out of order', `event ${received + 1}: id ${id} where ${wanted ?? 'no more'} was expected`)
        }
        received++
        lastAt = at
        firstAt ??= at
        if (received === expected.length) return result('complete')
      }
      pending = pending.slice(from)
    }
  } catch (error) {
    if (abort.signal.aborted) return result('deadline', `got ${received} of ${expected.length}`)
    return result('reset', `after ${received} events: ${(error as Error).message}`)
  } finally {
    clearTimeout(timer)
    // The stream goes on after the last change (it waits for more): the client leaves it.
    abort.abort()
  }
}
