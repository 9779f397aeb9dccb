/*
 * The ledger of the change feed's concurrency tests: every write a writer (feed-writers.ts) sent,
 * when, where, how it was answered, and the changes FEED-SPEC.md says an acknowledged one makes.
 */

export type FeedType = 'authors' | 'book_collections' | 'books'
export type Op = 'create' | 'update' | 'delete'

/** A change the feed must hold for an acknowledged write. */
export interface ExpectedChange {
  readonly type: FeedType
  readonly id: string
  readonly op: Op
}

/** One write sent, acknowledged (2xx, with its changes) or refused (4xx, none). */
export interface Write {
  readonly writer: number
  readonly what: string
  /** Which of the service's addresses it was sent to. */
  readonly instance: number
  readonly status: number
  /** performance.now() when it was sent and when its answer had been read. */
  readonly sentAt: number
  readonly ackAt: number
  readonly changes: readonly ExpectedChange[]
  /** An atomic batch: its changes come together, in this order. */
  readonly batch: boolean
}

/** The parts of a write's answer the ledger reads: the id made, or an atomic batch's. */
export interface Answer {
  readonly data?: { readonly id: string }
  readonly 'atomic:results'?: readonly { readonly data?: { readonly id: string } }[]
}

/* How the writers' requests and their expected changes are written. */

/** An id no record has. */
export const MISSING = '999999999'

/** A small seeded generator (mulberry32): each writer's choices are the same on every run. */
export function seeded(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export const change = (type: FeedType, id: string, op: Op): ExpectedChange => ({ type, id, op })
export const linkage = (ids: readonly string[]) => ({ data: ids.map((id) => ({ type: 'books', id })) })
/** A record's resource object that gives it a new name. */
export const named = (type: FeedType, id: string, name: string) => ({ type, id, attributes: { name } })
/** An atomic `add` of a book whose author is `author` (an id or a lid). */
export const addBook = (name: string, author: { id: string } | { lid: string }) => ({
  op: 'add',
  data: { type: 'books', attributes: { name }, relationships: { author: { data: { type: 'authors', ...author } } } },
})

const JSON_API = 'application/vnd.api+json'
const ATOMIC = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'

/**
 * Sends one write to `api` and records it in `ledger` in the order the answers arrive. A write
 * must be acknowledged (2xx), or, when `refused`, refused with a 4xx: any other answer fails the
 * writer, since the test could not tell whether it changed anything.
 */
export async function sendWrite(
  ledger: Write[],
  api: string,
  request: {
    readonly writer: number
    readonly what: string
    readonly instance: number
    readonly method: string
    readonly path: string
    readonly body: unknown
    readonly changes: (answer: Answer) => ExpectedChange[]
    readonly refused?: boolean
    readonly atomic?: boolean
  },
): Promise<Answer> {
  const { method, path, body } = request
  const type = request.atomic ? ATOMIC : JSON_API
  const sentAt = performance.now()
  const response = await fetch(`${api}${path}`, {
    method,
    headers: body === undefined ? { accept: type } : { accept: type, 'content-type': type },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  })
  const text = await response.text()
  const ackAt = performance.now()
  const ok = response.status >= 200 && response.status < 300
  if (!(request.refused ? response.status >= 400 && response.status < 500 : ok)) {
    throw new Error(
      `writer ${request.writer}: ${request.what} (${method} ${path}) answered ${response.status}: ${text}`,
    )
  }
  const answer = (text === '' ? {} : JSON.parse(text)) as Answer
  ledger.push({
    writer: request.writer,
    what: request.what,
    instance: request.instance,
    status: response.status,
    sentAt,
    ackAt,
    changes: ok ? request.changes(answer) : [],
    batch: request.atomic === true,
  })
  return answer
}
