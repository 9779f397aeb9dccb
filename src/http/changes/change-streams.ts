import { changeEvent } from '../../jsonapi/changes'
import { httpError } from '../../jsonapi/errors'
import type { Change } from '../../model/changes'
import type { ChangeHub, ChangeSubscriber } from '../../service/change-hub'

export interface ChangeStreamLimits {
  /** Open streams in this process at most (MAX_CHANGE_STREAMS); one more gets 503. */
  readonly maxStreams: number
  /** Milliseconds between the comment lines that keep an idle stream's connection open. */
  readonly heartbeatMs: number
  /** Bytes that may wait for a client that does not read: past them its stream is closed. */
  readonly maxWaitingBytes: number
}

export const DEFAULT_CHANGE_STREAM_LIMITS: ChangeStreamLimits = {
  maxStreams: 1000,
  heartbeatMs: 15_000,
  maxWaitingBytes: 1024 * 1024,
}

const encoder = new TextEncoder()
const HEARTBEAT = encoder.encode(': keep-alive\n\n')
/** The first bytes: the headers and this go out at once; `retry` is how long EventSource waits to reconnect. */
const OPENING = encoder.encode(': change stream\nretry: 2000\n\n')
/** When the feed was pruned past a stream's position: the client must read the lists again. */
const GONE = encoder.encode(
  'event: gone\ndata: {"errors":[{"status":"410","title":"Gone","detail":"The changes after this stream\'s position are no longer kept: read the lists again"}]}\n\n',
)

/** The event of a change, encoded once however many streams send it. */
const encoded = new WeakMap<Change, Uint8Array>()
function eventBytes(change: Change): Uint8Array {
  let bytes = encoded.get(change)
  if (!bytes) {
    bytes = encoder.encode(changeEvent(change))
    encoded.set(change, bytes)
  }
  return bytes
}

interface OpenStream {
  readonly controller: ReadableStreamDefaultController<Uint8Array>
  /** Stops following the feed (the hub's, once the stream follows it). */
  stop: () => void
}

/**
 * The Server-Sent Event streams of GET /api/v1/changes in this process: at most `maxStreams`,
 * each fed by the ChangeHub, a comment line to each every `heartbeatMs`, and a stream whose
 * client lets more than `maxWaitingBytes` wait is closed (its queue, not the service's memory, is
 * what a slow client fills).
 */
export class ChangeStreams {
  private readonly open = new Set<OpenStream>()
  private heartbeat: ReturnType<typeof setInterval> | null = null

  constructor(
    private readonly hub: ChangeHub,
    private readonly limits: ChangeStreamLimits = DEFAULT_CHANGE_STREAM_LIMITS,
  ) {}

  get count(): number {
    return this.open.size
  }

  /** Refuses a stream over the limit: 503 with Retry-After, before any header of a stream is sent. */
  admit(): void {
    if (this.open.size >= this.limits.maxStreams) {
      throw httpError(
        503,
        `This process has ${this.limits.maxStreams} change streams open, its most (MAX_CHANGE_STREAMS): try again later, or poll the feed`,
        undefined,
        { 'retry-after': '5' },
      )
    }
  }

  /** A stream of the changes after `position`, of `types` only when given. */
  start(position: string, types: ReadonlySet<string> | null): ReadableStream<Uint8Array> {
    this.admit()
    let stream: OpenStream | undefined
    /** `unread`: the client lets too much wait; its connection is dropped, not drained. */
    const close = (why?: 'unread') => {
      if (!stream || !this.open.delete(stream)) return
      stream.stop()
      this.stopHeartbeat()
      try {
        if (why) stream.controller.error()
        else stream.controller.close()
      } catch {
        // Already closed by the client.
      }
    }
    const send = (controller: ReadableStreamDefaultController<Uint8Array>, bytes: Uint8Array) => {
      controller.enqueue(bytes)
      // Errored without a reason: Bun then drops the connection without printing a stack to stderr.
      if ((controller.desiredSize ?? 0) < 0) close('unread')
    }
    return new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          controller.enqueue(OPENING)
          const subscriber: ChangeSubscriber = {
            deliver: (changes) => {
              for (const change of changes) {
                if (types && !types.has(change.type)) continue
                send(controller, eventBytes(change))
                if (!stream || !this.open.has(stream)) return
              }
            },
            lost: () => {
              controller.enqueue(GONE)
              close()
            },
          }
          const opened: OpenStream = { controller, stop: () => {} }
          stream = opened
          this.open.add(opened)
          opened.stop = this.hub.add(position, subscriber)
          this.startHeartbeat()
        },
        cancel: () => close(),
      },
      new ByteLengthQueuingStrategy({ highWaterMark: this.limits.maxWaitingBytes }),
    )
  }

  /** Ends every stream (the service is stopping): clients reconnect elsewhere with Last-Event-ID. */
  closeAll(): void {
    for (const stream of [...this.open]) {
      this.open.delete(stream)
      stream.stop()
      try {
        stream.controller.close()
      } catch {
        // Already closed.
      }
    }
    this.stopHeartbeat()
  }

  private startHeartbeat(): void {
    if (this.heartbeat) return
    this.heartbeat = setInterval(() => {
      for (const stream of [...this.open]) {
        try {
          stream.controller.enqueue(HEARTBEAT)
        } catch {
          this.open.delete(stream)
          stream.stop()
        }
      }
    }, this.limits.heartbeatMs)
  }

  private stopHeartbeat(): void {
    if (this.open.size > 0 || !this.heartbeat) return
    clearInterval(this.heartbeat)
    this.heartbeat = null
  }
}
