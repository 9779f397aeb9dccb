import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { createApp } from '../../src/http/app'
import { createLogger } from '../../src/logger'
import { resources } from '../../src/resources/registry'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'

const JSON_API = 'application/vnd.api+json'
const authorBody = JSON.stringify({ data: { type: 'authors', attributes: { name: 'Ada' } } })

let store: SqliteStore
let stopping: boolean
let app: ReturnType<typeof createApp>

beforeEach(() => {
  store = SqliteStore.open(':memory:', resources)
  stopping = false
  const logger = createLogger('silent', { write: () => {}, flush() {} })
  app = createApp({ store, logger, stopping: () => stopping })
})

afterEach(() => store.close())

function request(method: string, path: string, body?: string | ReadableStream<Uint8Array>): Promise<Response> {
  const headers: Record<string, string> = { accept: JSON_API }
  if (body !== undefined) headers['content-type'] = JSON_API
  return app.handle(new Request(`http://localhost/api/v1${path}`, { method, headers, body }))
}

/** One of each kind of answer: a 201, a list, a 404 from a handler, a 404 with no route, a 400. */
async function answers(): Promise<Response[]> {
  return [
    await request('POST', '/authors', authorBody),
    await request('GET', '/authors'),
    await request('GET', '/authors/999'),
    await request('GET', '/nothing-here'),
    await request('POST', '/authors', '{"data":'),
  ]
}

describe('Connection: close while the service stops', () => {
  it('is not sent while the service runs', async () => {
    const sent = await answers()
    expect(sent.map((answer) => answer.status)).toEqual([201, 200, 404, 404, 400])
    expect(sent.map((answer) => answer.headers.get('connection'))).toEqual([null, null, null, null, null])
  })

  it('is on every answer, errors included, once the service is stopping', async () => {
    stopping = true
    const sent = await answers()
    expect(sent.map((answer) => answer.status)).toEqual([201, 200, 404, 404, 400])
    expect(sent.map((answer) => answer.headers.get('connection'))).toEqual([
      'close',
      'close',
      'close',
      'close',
      'close',
    ])
    // The error documents keep their bodies.
    const noRoute = (await sent[3]?.json()) as { errors: unknown[] } | undefined
    expect(noRoute?.errors).toHaveLength(1)
  })

  it('is on the answer to a request that was in flight when the stop began', async () => {
    let finish: () => void = () => {}
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        finish = () => {
          controller.enqueue(new TextEncoder().encode(authorBody))
          controller.close()
        }
      },
    })
    const answer = request('POST', '/authors', body)
    await Bun.sleep(20)
    stopping = true
    finish()
    expect((await answer).status).toBe(201)
    expect((await answer).headers.get('connection')).toBe('close')
  })
})
