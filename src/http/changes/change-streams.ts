import { httpError } from '../../jsonapi/errors'
import type { ChangeHub, ChangeSubscriber } from '../../service/change-hub'
import { eventsFrom } from './change-events'

export interface ChangeStreamLimits {
  /** Open streams in this process at most (MAX_CHANGE_STREAMS); one more gets 503. */
  readonly maxStreams: number
  /** Open streams of one client at most (MAX_CHANGE_STREAMS_PER_CLIENT), by token name, else address. */
  readonly maxStreamsPerClient: number
  /** Milliseconds between the comment lines that keep an idle stream's connection open. */
  readonly heartbeatMs: number
  /** Milliseconds a client may read nothing while changes wait for it; then its stream and connection are closed. */
  readonly stallMs: number
}

export const DEFAULT_CHANGE_STREAM_LIMITS: ChangeStreamLimits = {
  maxStreams: 1000,
  maxStreamsPerClient: 100,
  heartbeatMs: 15_000,
  stallMs: 30_000,
}

/**
 * Bytes waiting in a stream's queue below which it takes more of the feed: with one window at most
 * (about 100 KiB for 1,000 changes), a stream holds a few hundred KiB however far behind it is.
 */
const READY_BYTES = 64 * 1024

const encoder = new TextEncoder()
const HEARTBEAT = encoder.encode(': keep-alive\n\n')
/** The first bytes: the headers and this go out at once; `retry` is how long EventSource waits to reconnect. */
const OPENING = encoder.encode(': change stream\nretry: 2000\n\n')
/** When the feed was pruned past a stream's position: the client must read the lists again. */
const GONE = encoder.encode(
  'event: gone\ndata: {"errors":[{"status":"410","title":"Gone","detail":"The changes after this stream\'s position are no longer kept: read the lists again"}]}\n\n',
)

/** Whose stream it is, and how to end its connection when the stream is dropped. */
export interface StreamClient {
  /** The client the per-client cap counts it for (access/client-key.ts). */
  readonly key: string
  /** Closes the connection itself: a dropped stream's socket must not stay open with its unsent bytes. */
  readonly dropConnection: () => void
}

interface OpenStream {
  readonly controller: ReadableStreamDefaultController<Uint8Array>
  readonly client: StreamClient
  /** Stops following the feed (the hub's, once the stream follows it). */
  stop: () => void
  /** The hub passed it over for want of room: it asks for a round once it has some. */
  passedOver: boolean
  /** Since when changes have waited for a client that makes no room (null: none waits). */
  waitingSince: number | null
}

/**
 * The Server-Sent Event streams of GET /api/v1/changes in this process: at most `maxStreams`, and
 * `maxStreamsPerClient` for one client. Each is fed by the ChangeHub at the pace its client reads,
 * gets a comment line every `heartbeatMs`, and one whose client makes no room for `stallMs` while
 * changes wait for it is closed with its connection.
 */
export class ChangeStreams {
  private readonly open = new Set<OpenStream>()
  private readonly byClient = new Map<string, number>()
  private timers: ReturnType<typeof setInterval>[] = []

  constructor(
    private readonly hub: ChangeHub,
    private readonly limits: ChangeStreamLimits = DEFAULT_CHANGE_STREAM_LIMITS,
  ) {}

  get count(): number {
    return this.open.size
  }

  /** Refuses a stream over a limit: 503 with Retry-After, before any header of a stream is sent. */
  admit(clientKey: string): void {
    if (this.open.size >= this.limits.maxStreams) {
      throw refusal(
        `This process has ${this.limits.maxStreams} change streams open, its most (MAX_CHANGE_STREAMS): try again later, or poll the feed`,
      )
    }
    if ((this.byClient.get(clientKey) ?? 0) >= this.limits.maxStreamsPerClient) {
      throw refusal(
        `This client has ${this.limits.maxStreamsPerClient} change streams open, its most (MAX_CHANGE_STREAMS_PER_CLIENT): close one, or poll the feed`,
      )
    }
  }

  /** A stream of the changes after `position`, of `types` only when given. */
  start(position: string, types: ReadonlySet<string> | null, client: StreamClient): ReadableStream<Uint8Array> {
    this.admit(client.key)
    let stream: OpenStream | undefined
    return new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          controller.enqueue(OPENING)
          const opened: OpenStream = { controller, client, stop: () => {}, passedOver: false, waitingSince: null }
          stream = opened
          const subscriber: ChangeSubscriber = {
            ready: () => {
              if ((controller.desiredSize ?? 0) > 0) return true
              opened.passedOver = true
              opened.waitingSince ??= Date.now()
              return false
            },
            deliver: (window, from) => {
              for (const bytes of eventsFrom(window, from, types)) controller.enqueue(bytes)
            },
            lost: () => {
              controller.enqueue(GONE)
              this.close(opened)
            },
          }
          this.add(opened)
          opened.stop = this.hub.add(position, subscriber)
        },
        // The client read, and the queue has room: the hub goes on where it passed the stream over.
        pull: () => {
          if (!stream) return
          stream.waitingSince = null
          if (stream.passedOver) {
            stream.passedOver = false
            this.hub.wake()
          }
        },
        cancel: () => {
          if (stream) this.close(stream)
        },
      },
      new ByteLengthQueuingStrategy({ highWaterMark: READY_BYTES }),
    )
  }

  /** Ends every stream (the service is stopping): clients reconnect elsewhere with Last-Event-ID. */
  closeAll(): void {
    for (const stream of [...this.open]) this.close(stream)
  }

  private add(stream: OpenStream): void {
    this.open.add(stream)
    this.byClient.set(stream.client.key, (this.byClient.get(stream.client.key) ?? 0) + 1)
    if (this.timers.length > 0) return
    this.timers = [
      setInterval(() => this.beat(), this.limits.heartbeatMs),
      setInterval(() => this.dropStalled(), Math.max(50, Math.min(1000, this.limits.stallMs / 4))),
    ]
  }

  /** Ends a stream, once: `dropped` when its client stopped reading (the connection goes too). */
  private close(stream: OpenStream, dropped = false): void {
    if (!this.open.delete(stream)) return
    stream.stop()
    const left = (this.byClient.get(stream.client.key) ?? 1) - 1
    if (left > 0) this.byClient.set(stream.client.key, left)
    else this.byClient.delete(stream.client.key)
    if (this.open.size === 0) {
      for (const timer of this.timers) clearInterval(timer)
      this.timers = []
    }
    try {
      // Errored without a reason: Bun then ends the answer without printing a stack to stderr.
      if (dropped) stream.controller.error()
      else stream.controller.close()
    } catch {
      // Already closed by the client.
    }
    if (dropped) stream.client.dropConnection()
  }

  private beat(): void {
    for (const stream of [...this.open]) {
      try {
        stream.controller.enqueue(HEARTBEAT)
      } catch {
        this.close(stream)
      }
    }
  }

  private dropStalled(): void {
    const since = Date.now() - this.limits.stallMs
    for (const stream of [...this.open]) {
      if (stream.waitingSince !== null && stream.waitingSince <= since) this.close(stream, true)
    }
  }
}

function refusal(detail: string) {
  return httpError(503, detail, undefined, { 'retry-after': '5' })
}
