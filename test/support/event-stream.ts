import { withTimeout } from './process'

/*
 * A client of a Server-Sent Events stream, reading a fetch response's body block by block (a block:
 * the lines before a blank line). One read is kept pending across a timeout, so that waiting for a
 * block that does not come loses nothing.
 */

type ReadResult = { done: true; value?: undefined } | { done: false; value: Uint8Array }

export interface StreamedEvent {
  readonly id: string
  readonly event: string
  readonly data: string
  /** The block's lines, as sent. */
  readonly lines: string[]
}

const readerOf = (body: ReadableStream<Uint8Array>) => body.getReader()

export class EventStreamReader {
  private readonly reader: ReturnType<typeof readerOf>
  private readonly decoder = new TextDecoder()
  private buffer = ''
  private pending: Promise<ReadResult> | undefined
  private ended = false
  /** Every block without data read so far by `event` (comments, heartbeats, retry). */
  readonly comments: string[] = []

  constructor(response: Response) {
    if (!response.body) throw new Error('the stream has no body')
    this.reader = readerOf(response.body as ReadableStream<Uint8Array>)
  }

  /** A read of the body; a connection the server cut ends it as a close does. */
  private read(): Promise<ReadResult> {
    return this.reader.read().then(
      (read): ReadResult => (read.done ? { done: true } : { done: false, value: read.value as Uint8Array }),
      (): ReadResult => ({ done: true }),
    )
  }

  /** The next block's lines, or null once the stream has ended (closed by the server). */
  async block(ms: number): Promise<string[] | null> {
    const deadline = Date.now() + ms
    for (;;) {
      const end = this.buffer.indexOf('\n\n')
      if (end >= 0) {
        const block = this.buffer.slice(0, end)
        this.buffer = this.buffer.slice(end + 2)
        return block.split('\n')
      }
      if (this.ended) return null
      this.pending ??= this.read()
      const read = await withTimeout(
        this.pending,
        'the next block of the event stream',
        Math.max(1, deadline - Date.now()),
      )
      this.pending = undefined
      if (read.done) this.ended = true
      else this.buffer += this.decoder.decode(read.value, { stream: true })
    }
  }

  /** The next event, comments (kept in `comments`) skipped. */
  async event(ms = 5_000): Promise<StreamedEvent> {
    const deadline = Date.now() + ms
    for (;;) {
      const lines = await this.block(Math.max(1, deadline - Date.now()))
      if (lines === null) throw new Error('the event stream ended')
      // A block without data is no event (SSE): the opening's comment and retry, a heartbeat.
      if (!lines.some((line) => line.startsWith('data:'))) {
        this.comments.push(lines.join('\n'))
        continue
      }
      const field = (name: string) => lines.find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2) ?? ''
      return { id: field('id'), event: field('event'), data: field('data'), lines }
    }
  }

  /** The next `count` events. */
  async events(count: number, ms = 5_000): Promise<StreamedEvent[]> {
    const events: StreamedEvent[] = []
    while (events.length < count) events.push(await this.event(ms))
    return events
  }

  /** Reads to the end, within `ms`; the bytes read after what was already taken. */
  async rest(ms: number): Promise<number> {
    let bytes = this.buffer.length
    this.buffer = ''
    const deadline = Date.now() + ms
    while (!this.ended) {
      this.pending ??= this.read()
      const read = await withTimeout(this.pending, 'the end of the event stream', Math.max(1, deadline - Date.now()))
      this.pending = undefined
      if (read.done) this.ended = true
      else bytes += read.value.length
    }
    return bytes
  }

  /** Goes away, as a client that closes the stream. */
  async cancel(): Promise<void> {
    await this.reader.cancel().catch(() => {})
  }
}
