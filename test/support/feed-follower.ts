import { expect } from 'bun:test'
import type { FeedType, Op } from './feed-ledger'

/*
 * A client of the change feed (FEED-SPEC.md) for the concurrency tests: a follower that walks
 * GET /api/v1/changes by links.next, and a reader of the same URL as a Server-Sent Events stream.
 */

const JSON_API = 'application/vnd.api+json'

/** A change record as the feed renders it. */
export interface ChangeRecord {
  readonly type: 'changes'
  readonly id: string
  readonly attributes: { readonly op: Op }
  readonly relationships: { readonly resource: { readonly data: { readonly type: FeedType; readonly id: string } } }
}

interface Page {
  readonly data: ChangeRecord[]
  readonly links: { readonly next: string }
  readonly meta: { readonly latest: string | null }
}

/** `http://host:port` of a `.../api/v1` address: links are relative to it. */
const originOf = (api: string) => new URL(api).origin

/**
 * Walks the feed of `api` from `start` (a links.next-style path) by links.next, keeping every
 * change, until told to finish and its cursor has reached meta.latest. Told how many changes to
 * expect, it also waits (a while) for that many, so that a meta.latest behind the acknowledged
 * writes shows as such (`latestAtFinish`), not as changes missing.
 */
export class Follower {
  readonly changes: ChangeRecord[] = []
  pages = 0
  private finishing: { readonly expected: number; readonly until: number } | null = null
  /** meta.latest of the first page asked for after `finish`: every acknowledged write was before it. */
  latestAtFinish: string | null | undefined
  private stopped = false
  private last: Page | undefined
  readonly done: Promise<void>

  constructor(
    private readonly api: string,
    start = '/api/v1/changes?page[size]=25',
    private readonly timeoutMs = 300_000,
  ) {
    this.done = this.walk(start)
    // Handled here too, so that a failure is reported where the test awaits it, not as unhandled.
    this.done.catch(() => {})
  }

  /** Stops at the next page, whatever it holds (after a failure elsewhere). */
  stop(): void {
    this.stopped = true
  }

  /**
   * Walks on until the cursor reaches meta.latest (as it stands from now on) with at least
   * `expected` changes read, or, after `graceMs`, with fewer; then stops.
   */
  finish(expected = 0, graceMs = 20_000): Promise<void> {
    this.finishing = { expected, until: performance.now() + graceMs }
    return this.done
  }

  private async walk(start: string): Promise<void> {
    const deadline = performance.now() + this.timeoutMs
    let next = start
    while (!this.stopped) {
      // Told to finish before the page was asked for: its meta.latest covers every write made before.
      const finishing = this.finishing
      const response = await fetch(`${originOf(this.api)}${next}`, {
        headers: { accept: JSON_API },
        signal: AbortSignal.timeout(60_000),
      })
      const text = await response.text()
      if (response.status !== 200) throw new Error(`GET ${next} answered ${response.status}: ${text}`)
      const page = JSON.parse(text) as Page
      this.pages++
      this.last = page
      this.changes.push(...page.data)
      expect(typeof page.links.next).toBe('string')
      next = page.links.next
      const cursor = this.changes.at(-1)?.id ?? null
      if (finishing && this.latestAtFinish === undefined) this.latestAtFinish = page.meta.latest
      const enough = finishing && (this.changes.length >= finishing.expected || performance.now() > finishing.until)
      if (finishing && enough && cursor === page.meta.latest) return
      if (performance.now() > deadline) {
        throw new Error(
          `the follower did not reach meta.latest in ${this.timeoutMs} ms: ${this.changes.length} changes read, the last page ${JSON.stringify(this.last)}`,
        )
      }
      if (page.data.length === 0) await Bun.sleep(25)
    }
  }
}

/** One event of the stream, as it arrived. */
export interface StreamEvent {
  readonly id: string
  readonly event: string
  readonly data: ChangeRecord
  /** performance.now() when the test read it. */
  readonly at: number
}

/** GET /api/v1/changes with Accept: text/event-stream, read as it comes. */
export class ChangeStream {
  readonly events: StreamEvent[] = []
  comments = 0
  private wake: () => void = () => {}
  private ended = false
  private failure: unknown

  private constructor(
    private readonly controller: AbortController,
    /** performance.now() before it was asked for, and once its headers had arrived. */
    readonly requestedAt: number,
    readonly openedAt: number,
    body: ReadableStream<Uint8Array>,
  ) {
    this.read(body).then(
      () => this.end(),
      (error) => this.end(error),
    )
  }

  /** Opens the stream and checks its answer: 200, text/event-stream, at once. */
  static async open(api: string, headers: Record<string, string> = {}): Promise<ChangeStream> {
    const controller = new AbortController()
    const requestedAt = performance.now()
    const response = await fetch(`${api}/changes`, {
      headers: { accept: 'text/event-stream', ...headers },
      signal: controller.signal,
    })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toStartWith('text/event-stream')
    return new ChangeStream(controller, requestedAt, performance.now(), response.body as ReadableStream<Uint8Array>)
  }

  private end(error?: unknown): void {
    this.ended = true
    this.failure = error
    this.wake()
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder()
    let pending = ''
    for await (const chunk of body) {
      pending += decoder.decode(chunk, { stream: true }).replaceAll('\r\n', '\n')
      let end = pending.indexOf('\n\n')
      while (end !== -1) {
        this.take(pending.slice(0, end))
        pending = pending.slice(end + 2)
        end = pending.indexOf('\n\n')
      }
      this.wake()
    }
  }

  /** One block of lines: an event (id, event, data) or a comment. */
  private take(block: string): void {
    const fields: Record<string, string> = {}
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) {
        this.comments++
        continue
      }
      const colon = line.indexOf(':')
      const name = colon === -1 ? line : line.slice(0, colon)
      fields[name] = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '')
    }
    if (fields.data === undefined) return
    this.events.push({
      id: fields.id as string,
      event: fields.event as string,
      data: JSON.parse(fields.data),
      at: performance.now(),
    })
  }

  /** Waits until the change `id` has arrived (fails after `timeoutMs`, or when the stream ends). */
  waitFor(id: string, timeoutMs = 30_000): Promise<void> {
    return this.until(() => this.events.some((event) => event.id === id), `change ${id}`, timeoutMs)
  }

  /** When a change of the record arrived (performance.now()), waiting for it up to `timeoutMs`. */
  async arrivalOf(type: FeedType, id: string, timeoutMs: number): Promise<number> {
    const of = () =>
      this.events.find(
        (e) => e.data.relationships.resource.data.type === type && e.data.relationships.resource.data.id === id,
      )
    await this.until(() => of() !== undefined, `a change of ${type}/${id}`, timeoutMs)
    return (of() as StreamEvent).at
  }

  /** Waits until `count` events have arrived, or `stop` holds. */
  waitForEvents(count: number, stop: () => boolean, timeoutMs = 60_000): Promise<void> {
    return this.until(() => this.events.length >= count || stop(), `${count} events`, timeoutMs)
  }

  private async until(condition: () => boolean, what: string, timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs
    for (;;) {
      if (condition()) return
      if (this.ended) {
        const last = this.events.at(-1)
        const said = last ? `its last event: ${last.event} ${JSON.stringify(last.data)}` : 'no event'
        throw new Error(`the stream ended before ${what} (${said}): ${String(this.failure)}`)
      }
      const left = deadline - performance.now()
      if (left <= 0)
        throw new Error(`${what} did not reach the stream in ${timeoutMs} ms (${this.events.length} events)`)
      // Woken by the next chunk; a short sleep also sees a `stop` that is not the stream's.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 100))
        this.wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
  }

  close(): void {
    this.controller.abort()
  }
}
