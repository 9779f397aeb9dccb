/**
 * One round of the change-latency part: N streams opened on one origin, then writes sent to
 * another (or the same) at a steady rate, open loop: POST a book, then PATCH that book (renamed),
 * alternately, each at its slot of the schedule (a PATCH waits for its POST's answer if that comes
 * later). For each acknowledged write and each stream it takes the time from the write's answer
 * (and from its sending) to the change's arrival on the stream.
 */
import { SEED } from '../../data/seed'
import { changeKey, type OpenStream, openStreams } from './streams'

/** What one round is asked to do. */
export interface RoundPlan {
  /** Where the writes go. */
  readonly writeOrigin: string
  /** Where the streams are opened. */
  readonly streamOrigin: string
  readonly streams: number
  /** Writes a second, POST and PATCH counted alike. */
  readonly rate: number
  readonly seconds: number
  /** Unmeasured writes at the same rate first, after the streams opened. */
  readonly warmupSeconds: number
  /** How long after the last answer to wait for the last events. */
  readonly drainMs: number
  /** Watches what else runs meanwhile (PostgreSQL: other transactions on the cluster); gives the longest, ms. */
  readonly watchOthers?: () => () => Promise<number>
}

/** A write as sent: its change's key (once known), when it left, when its answer came. */
interface Write {
  key?: string
  readonly sentAt: number
  ackedAt?: number
  status?: number
  error?: string
}

/** What one round measured. */
export interface RoundResult {
  readonly streams: number
  readonly writesSent: number
  readonly writesAcked: number
  readonly writeErrors: number
  readonly firstWriteError?: string
  /** Writes a second, as sent (the schedule kept or not). */
  readonly sentPerSecond: number
  /** Milliseconds from sending to the answer, of the acknowledged writes. */
  readonly answerMs: readonly number[]
  /** Acknowledged writes × streams. */
  readonly expected: number
  /** Milliseconds from each write's answer to its change's arrival, one per (write, stream) that arrived. */
  readonly fromAckMs: readonly number[]
  /** The same from the write's sending. */
  readonly fromSendMs: readonly number[]
  readonly missing: number
  readonly duplicates: number
  readonly malformed: number
  /** A stream that ended early, and why. */
  readonly streamEnded?: string
  /** PostgreSQL: the longest another transaction on the cluster held an id during the measured writes, ms. */
  readonly longestOtherMs?: number
}

let sequence = 0

async function post(origin: string, write: Write): Promise<string | undefined> {
  const n = ++sequence
  const author = 1 + (n % SEED.authors)
  const body = `{"data":{"type":"book","attributes":{"name":"Latency book ${n}","author_id":${author}}}}`
  const response = await fetch(`${origin}/api/v1/books`, {
    method: 'POST',
    headers: { 'content-type': 'application/vnd.api+json', accept: 'application/vnd.api+json' },
    body,
  })
  const text = await response.text()
  write.ackedAt = performance.now()
  write.status = response.status
  if (response.status !== 201) {
    write.error = `POST /api/v1/books answered ${response.status}: ${text.slice(0, 200)}`
    return undefined
  }
  const id = (JSON.parse(text) as { data: { id: string } }).data.id
  write.key = changeKey('create', 'books', id)
  return id
}

async function patch(origin: string, id: string, write: Write): Promise<void> {
  const n = ++sequence
  const response = await fetch(`${origin}/api/v1/books/${id}`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/vnd.api+json', accept: 'application/vnd.api+json' },
    body: `{"data":{"type":"book","id":"${id}","attributes":{"name":"Latency book renamed ${n}"}}}`,
  })
  await response.arrayBuffer()
  write.ackedAt = performance.now()
  write.status = response.status
  if (response.status !== 200) write.error = `PATCH /api/v1/books/${id} answered ${response.status}`
  else write.key = changeKey('update', 'books', id)
}

/** Sends `rate × seconds` writes on the schedule; resolves with every write once all are answered. */
async function sendWrites(origin: string, rate: number, seconds: number): Promise<{ writes: Write[]; ms: number }> {
  const interval = 1000 / rate
  const total = Math.round(rate * seconds)
  const writes: Write[] = []
  const done: Promise<void>[] = []
  const started = performance.now()
  let created: Promise<string | undefined> = Promise.resolve(undefined)
  for (let k = 0; k < total; k++) {
    const wait = started + k * interval - performance.now()
    if (wait > 0) await Bun.sleep(wait)
    const fail = (write: Write) => (error: Error) => {
      write.error = `${error.message}`
    }
    if (k % 2 === 0) {
      const write: Write = { sentAt: performance.now() }
      writes.push(write)
      created = post(origin, write).catch((error: Error) => {
        fail(write)(error)
        return undefined
      })
      done.push(created.then(() => undefined))
    } else {
      // The PATCH of the book the last POST created, sent now or once that POST is answered.
      const of = created
      done.push(
        of.then(async (id) => {
          if (id === undefined) return
          const write: Write = { sentAt: performance.now() }
          writes.push(write)
          await patch(origin, id, write).catch(fail(write))
        }),
      )
    }
  }
  const ms = performance.now() - started
  await Promise.all(done)
  return { writes, ms }
}

/** Waits until every stream has every key, or `ms` passed. */
async function drain(streams: readonly OpenStream[], keys: readonly string[], ms: number): Promise<void> {
  const deadline = performance.now() + ms
  while (performance.now() < deadline) {
    if (streams.every((stream) => keys.every((key) => stream.arrivals.has(key)))) return
    if (streams.some((stream) => stream.ended() !== undefined)) return
    await Bun.sleep(50)
  }
}

/** Opens the streams, sends the warm-up and the measured writes, and matches events to writes. */
export async function measureRound(plan: RoundPlan): Promise<RoundResult> {
  const streams = await openStreams(plan.streamOrigin, plan.streams)
  try {
    await Bun.sleep(200)
    if (plan.warmupSeconds > 0) await sendWrites(plan.writeOrigin, plan.rate, plan.warmupSeconds)
    const stopWatching = plan.watchOthers?.()
    const { writes, ms } = await sendWrites(plan.writeOrigin, plan.rate, plan.seconds)
    const acked = writes.filter((write) => write.key !== undefined && write.ackedAt !== undefined)
    await drain(
      streams,
      acked.map((write) => write.key as string),
      plan.drainMs,
    )
    const longestOtherMs = await stopWatching?.()
    const fromAckMs: number[] = []
    const fromSendMs: number[] = []
    let missing = 0
    for (const write of acked) {
      for (const stream of streams) {
        const at = stream.arrivals.get(write.key as string)
        if (at === undefined) {
          missing++
          continue
        }
        fromAckMs.push(at - (write.ackedAt as number))
        fromSendMs.push(at - write.sentAt)
      }
    }
    const failed = writes.filter((write) => write.error !== undefined)
    const ended = streams.map((stream) => stream.ended()).find((why) => why !== undefined)
    return {
      streams: plan.streams,
      writesSent: writes.length,
      writesAcked: acked.length,
      writeErrors: failed.length,
      ...(failed[0]?.error === undefined ? {} : { firstWriteError: failed[0].error }),
      sentPerSecond: (writes.length / ms) * 1000,
      answerMs: acked.map((write) => (write.ackedAt as number) - write.sentAt),
      expected: acked.length * streams.length,
      fromAckMs,
      fromSendMs,
      missing,
      duplicates: streams.reduce((sum, stream) => sum + stream.duplicates(), 0),
      malformed: streams.reduce((sum, stream) => sum + stream.malformed(), 0),
      ...(ended === undefined ? {} : { streamEnded: ended }),
      ...(longestOtherMs === undefined ? {} : { longestOtherMs }),
    }
  } finally {
    for (const stream of streams) stream.close()
  }
}
