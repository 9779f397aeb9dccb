/**
 * A read worker: a thread with its own read-only connection to the database file, answering the
 * reads of lists (see sqlite-read-calls.ts). Many workers can read while the main thread writes:
 * WAL gives each read its own snapshot.
 */
import { Database } from 'bun:sqlite'
import { workerData } from 'node:worker_threads'
import { ResourceRegistry } from '../resources/registry'
import type { CrossedError, ReadArgs, ReadMethod, ReadReply, ReadRequest, ReadWorkerData } from './sqlite-read-calls'
import { encodeResult } from './sqlite-read-codec'
import { SqliteReader } from './sqlite-reader'

declare const self: Worker

const { path, busyTimeoutMs, descriptions } = workerData as ReadWorkerData

function crossed(error: unknown): CrossedError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) }
  const { code, errno } = error as { code?: unknown; errno?: unknown }
  return {
    name: error.name,
    message: error.message,
    code: typeof code === 'string' ? code : undefined,
    errno: typeof errno === 'number' ? errno : undefined,
    stack: error.stack,
  }
}

// A file that cannot be opened (gone, unreadable) fails each read with SQLite's own error, which the
// main thread classifies as it would its own, rather than the worker dying at start.
let opened: { db: Database; reader: SqliteReader } | { error: CrossedError }
try {
  const db = new Database(path, { readonly: true, strict: true })
  db.run(`PRAGMA busy_timeout = ${Math.trunc(busyTimeoutMs)}`)
  opened = { db, reader: new SqliteReader(db, new ResourceRegistry(descriptions)) }
} catch (error) {
  opened = { error: crossed(error) }
}

self.onmessage = (event: MessageEvent<ReadRequest | 'close'>) => {
  const request = event.data
  if (request === 'close') {
    if ('db' in opened) {
      opened.reader.close()
      opened.db.close()
    }
    process.exit(0)
  }
  if ('error' in opened) {
    self.postMessage({ call: request.call, ok: false, error: opened.error } satisfies ReadReply)
    return
  }
  const { reader } = opened
  let reply: ReadReply
  try {
    const method = request.method as ReadMethod
    const args = request.args as ReadArgs<ReadMethod>
    const run = reader[method] as (...a: unknown[]) => unknown
    const value = run.apply(reader, [...args]) as never
    reply = { call: request.call, ok: true, value: encodeResult((type) => reader.table(type), method, args, value) }
  } catch (error) {
    reply = { call: request.call, ok: false, error: crossed(error) }
  }
  self.postMessage(reply)
}
self.postMessage('ready')
