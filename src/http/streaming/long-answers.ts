import type { Server } from 'bun'
import { httpError, type JsonApiError } from '../../jsonapi/errors'
import type { ClientAddresses } from '../access/client-address'
import { clientKey } from '../access/client-key'
import { textStream } from '../compression'
import { type ApiResponse, BUFFERED_BYTES } from '../responses'

/** How many long answers may be in flight at once: in all, and for one client. */
export interface LongAnswerLimits {
  readonly total: number
  readonly perClient: number
}

/**
 * 8 in all: enough to keep both read workers and the network busy, and 8 lists of 20,000 books
 * with their authors and collections, sent over and over, keep the service within about 200 MiB
 * of its idle memory (bench/parts/limits/bounds.ts; 16 took it to 225 MiB at once). 4 for one client: enough
 * for a client that loads the three types' whole lists at once, while one client alone cannot
 * take them all; one that asks for more at once gets them no sooner, since the workers take turns.
 */
export const DEFAULT_LONG_ANSWERS: LongAnswerLimits = Object.freeze({ total: 8, perClient: 4 })

/** What a refused client is told to wait: a long answer takes about a second to send (bench/parts/limits/bounds.ts). */
export const LONG_ANSWER_RETRY_SECONDS = 1

/** Gives a long answer's slot back, once. */
export type Release = () => void

/**
 * The long answers in flight: those sent as they are written (a list, a record with its to-many
 * linkage, once past the first BUFFERED_BYTES) and any other over BUFFERED_BYTES (a relationship's
 * linkage). A list that may be long (any list but a short one or a bounded page) takes its slot
 * before anything is read for it (`run`); any other answer once it turns out long (`admit`), so
 * that a record is never refused for being asked for. Each holds its slot until its last byte
 * has been handed to the connection, or the client has gone; past a cap, the client gets a 503
 * with Retry-After.
 *
 * Each streamed answer holds one piece and its reader's state (a batch of records, the ids
 * included so far), and the connection takes the next piece only once it has sent the last: a
 * client that stops reading holds its slot until the server's idle timeout (Elysia sets Bun's to
 * 30 s without progress) closes its connection. So memory and worker time grow with the caps, not with the
 * number of clients.
 */
export class LongAnswers {
  private inFlight = 0
  private readonly byClient = new Map<string, number>()

  constructor(
    readonly limits: LongAnswerLimits,
    private readonly addresses: ClientAddresses,
  ) {}

  /** Long answers in flight now. */
  get count(): number {
    return this.inFlight
  }

  /** Runs `read`, whose answer may be long, in a slot of the request's client: the answer carries its release. */
  async run(request: Request, server: Server<unknown> | null, read: () => Promise<ApiResponse>): Promise<ApiResponse> {
    const release = this.reserve(clientKey(request, server, this.addresses))
    try {
      return { ...(await read()), release }
    } catch (error) {
      release()
      throw error
    }
  }

  /**
   * A slot for `response` if it is long and holds none yet (null if it is not long); past a cap
   * its stream is cancelled and the 503 thrown.
   */
  admit(response: ApiResponse, request: Request, server: Server<unknown> | null): Release | null {
    const { body } = response
    if (!isLong(body)) return null
    try {
      return this.reserve(clientKey(request, server, this.addresses))
    } catch (error) {
      if (body instanceof ReadableStream) void body.cancel().catch(() => {})
      throw error
    }
  }

  private reserve(client: string): Release {
    const held = this.byClient.get(client) ?? 0
    const { total, perClient } = this.limits
    if (held >= perClient) throw refusal(`this client's limit of ${perClient}`)
    if (this.inFlight >= total) throw refusal(`the limit of ${total}`)
    this.byClient.set(client, held + 1)
    this.inFlight++
    let holding = true
    return () => {
      if (!holding) return
      holding = false
      this.inFlight--
      const left = (this.byClient.get(client) ?? 1) - 1
      if (left > 0) this.byClient.set(client, left)
      else this.byClient.delete(client)
    }
  }
}

/** Whether a body is long: streamed, or a text over BUFFERED_BYTES. */
function isLong(body: ApiResponse['body'] | Uint8Array): boolean {
  return body instanceof ReadableStream || (typeof body === 'string' && body.length > BUFFERED_BYTES)
}

function refusal(limit: string): JsonApiError {
  return httpError(
    503,
    `The service is sending as many long answers (whole lists, records with all their related ids) as it allows at once, ${limit}; try again shortly, or ask for a page`,
    undefined,
    { 'retry-after': String(LONG_ANSWER_RETRY_SECONDS) },
  )
}

/**
 * What `send` returned for an answer that holds a slot: a long one as a stream of slices of at most
 * BUFFERED_BYTES, each taken from it only when the connection asks for it, that gives the slot
 * back once it has ended, failed or been cancelled. Slicing keeps what waits downstream small (a
 * record with 100,000 related ids is one piece of 3 MB); a text is sliced as it is encoded.
 * Anything else (a short answer after all, a 304) gives the slot back at once.
 */
export function heldUntilSent(
  sent: string | ReadableStream<Uint8Array> | Uint8Array | null,
  release: Release,
): string | ReadableStream<Uint8Array> | Uint8Array | null {
  if (sent === null || !isLong(sent)) {
    release()
    return sent
  }
  const source = typeof sent === 'string' ? textStream(sent, BUFFERED_BYTES) : (sent as ReadableStream<Uint8Array>)
  const reader = source.getReader()
  let piece: Uint8Array = new Uint8Array(0)
  let offset = 0
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          while (offset >= piece.length) {
            const { done, value } = await reader.read()
            if (done) {
              release()
              return controller.close()
            }
            piece = value
            offset = 0
          }
          const end = Math.min(piece.length, offset + BUFFERED_BYTES)
          controller.enqueue(piece.subarray(offset, end))
          offset = end
        } catch (error) {
          release()
          controller.error(error)
        }
      },
      cancel(reason) {
        release()
        return reader.cancel(reason)
      },
    },
    // Nothing read ahead: a slice is taken only when the connection asks for one.
    { highWaterMark: 0 },
  )
}
