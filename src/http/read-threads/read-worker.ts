/**
 * A read worker: a thread with its own read-only store that answers the reads the main thread
 * hands it (lists, and records whose answer grows with the data), from the query string to the
 * JSON text, with the same controllers as the main thread. See read-pool.ts.
 */
import { workerData } from 'node:worker_threads'
import { ResourceRegistry } from '../../resources/registry'
import { SqliteStore } from '../../store/sqlite/sqlite-store'
import { encodeStream, negotiateCoding } from '../compression'
import { ResourceController } from '../resource-controller'
import { crossFailure, type MainMessage, type ReadWorkerData, ROUND_TRIP_BYTES, type WorkerMessage } from './read-calls'
import { threadMs } from './thread-time'

declare const self: Worker

const data = workerData as ReadWorkerData
const registry = new ResourceRegistry(data.descriptions)
// Read threads serve SQLite alone (servedByReadWorkers in store/open.ts): its store is opened
// directly, so that a thread loads none of the PostgreSQL store's modules, a fifth of its start.
const SQLITE = 'sqlite://'
if (!data.databaseUrl.startsWith(SQLITE)) throw new Error(`read threads serve ${SQLITE} databases only`)
// Opened before any message is handled, but awaited by each: the handler is in place at once, so
// no message posted while the store opens can arrive before it.
const opened = Promise.resolve().then(() => {
  const store = SqliteStore.open(data.databaseUrl.slice(SQLITE.length), registry, {
    busyTimeoutMs: data.busyTimeoutMs,
    readOnly: true,
    sameFileAs: data.sameDatabaseAs,
  })
  const controllers = new Map(
    registry.all.map((resource) => [
      resource.type,
      new ResourceController(resource, registry, store, data.prefix, data.limits),
    ]),
  )
  return { store, controllers }
})
// Each read awaits it and reports its failure; this only keeps the failure from being unhandled.
opened.catch(() => {})
/** The bodies still being written, by call. */
const streams = new Map<number, { read(): Promise<{ done: boolean; value?: Uint8Array }>; cancel(): Promise<void> }>()

function post(message: WorkerMessage, transfer: ArrayBuffer[] = []): void {
  self.postMessage(message, transfer)
}

async function start(call: number, read: Extract<MainMessage, { kind: 'start' }>['read']): Promise<void> {
  const started = threadMs()
  try {
    const { controllers } = await opened
    const controller = controllers.get(read.type)
    if (!controller) throw new Error(`no resource type ${read.type}`)
    const answer =
      read.op === 'list'
        ? await controller.list({ url: read.url, cursorProfile: read.cursorProfile }, read.scope)
        : await controller.show(read)
    const { body } = answer
    // A streamed body is compressed here, off the main thread; one sent whole is compressed there.
    const coding = body instanceof ReadableStream ? negotiateCoding(read.acceptEncoding ?? null) : null
    if (body instanceof ReadableStream) streams.set(call, (coding ? encodeStream(body, coding) : body).getReader())
    post({
      kind: 'answer',
      call,
      status: answer.status,
      headers: answer.headers,
      body: body instanceof ReadableStream ? null : body,
      state: answer.state,
      coding,
      ms: threadMs() - started,
    })
  } catch (error) {
    post({ kind: 'failed', call, failure: crossFailure(error), ms: threadMs() - started })
  }
}

/** Sends the next pieces of a streamed answer, about ROUND_TRIP_BYTES, or its end. */
async function pull(call: number): Promise<void> {
  const reader = streams.get(call)
  if (!reader) return
  try {
    const bytes: Uint8Array[] = []
    let size = 0
    while (size < ROUND_TRIP_BYTES) {
      const { done, value } = await reader.read()
      if (done || !value) break
      bytes.push(value)
      size += value.byteLength
      if (value.byteLength >= ROUND_TRIP_BYTES / 2) break
    }
    if (bytes.length > 0) {
      // A stream that ended meanwhile says so at the next pull: a reader read again stays done.
      post(
        { kind: 'piece', call, bytes },
        bytes.map((piece) => piece.buffer as ArrayBuffer),
      )
      return
    }
    streams.delete(call)
    post({ kind: 'end', call })
  } catch (error) {
    streams.delete(call)
    post({ kind: 'failed', call, failure: crossFailure(error) })
  }
}

self.onmessage = (event: MessageEvent<MainMessage>) => {
  const message = event.data
  switch (message.kind) {
    case 'start':
      void start(message.call, message.read)
      return
    case 'pull':
      void pull(message.call)
      return
    case 'cancel':
      void streams.get(message.call)?.cancel()
      streams.delete(message.call)
      return
    case 'close':
      for (const reader of streams.values()) void reader.cancel()
      void opened.then(({ store }) => store.close()).finally(() => process.exit(0))
  }
}
post({ kind: 'ready' })
