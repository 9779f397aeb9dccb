import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import zlib from 'node:zlib'
import { encodeStream, negotiateCoding } from '../../src/http/compression'
import { addVary } from '../../src/http/responses'
import { insertCatalogue } from '../support/bulk'
import { JSON_API, openTestApp, type TestApp } from '../support/harness'

// Compression by Accept-Encoding (RFC 9110 §12.5.3), as docs/caching.md describes it. Responses
// are read here as raw bytes: app.handle() hands over what the server sends, still encoded.

type Coding = 'gzip' | 'br' | 'zstd'

interface RawAnswer {
  readonly status: number
  readonly headers: Headers
  readonly bytes: Uint8Array
  /** The body as the client gets it once decoded. */
  readonly text: string
}

function decode(coding: string | null, bytes: Uint8Array): string {
  switch (coding) {
    case null:
      return new TextDecoder().decode(bytes)
    case 'gzip':
      return zlib.gunzipSync(bytes).toString()
    case 'br':
      return zlib.brotliDecompressSync(bytes).toString()
    case 'zstd':
      return zlib.zstdDecompressSync(bytes).toString()
    default:
      throw new Error(`unexpected Content-Encoding ${coding}`)
  }
}

async function raw(t: TestApp, path: string, headers: Record<string, string> = {}, method = 'GET') {
  const response = await t.app.handle(
    new Request(`http://localhost${path}`, { method, headers: { accept: JSON_API, ...headers } }),
  )
  const bytes = new Uint8Array(await response.arrayBuffer())
  const text = decode(response.headers.get('content-encoding'), bytes)
  return { status: response.status, headers: response.headers, bytes, text } satisfies RawAnswer
}

function varies(answer: RawAnswer): boolean {
  return (answer.headers.get('vary') ?? '').split(',').some((f) => f.trim().toLowerCase() === 'accept-encoding')
}

const codings: readonly Coding[] = ['gzip', 'br', 'zstd']

/** 3,000 books by 3 authors: a whole list is some 600 KB of JSON, streamed. */
async function seed(t: TestApp): Promise<void> {
  await insertCatalogue(t, {
    authors: ['Ada Quill', 'Bram Fenwick', 'Cora Lindqvist'],
    collections: ['Northern Tales'],
    books: 3000,
    authorOf: (i) => 1 + (i % 3),
    collectionOf: (i) => (i % 2 === 0 ? 1 : null),
  })
}

// Read workers stream (and compress) lists in their own threads; without them the main thread does.
describe.each([1, 0])('GET with Accept-Encoding, %d read workers', (readWorkers) => {
  let t: TestApp
  beforeAll(async () => {
    // Read workers read SQLite files: with them the test is about SQLite; without, about either backend.
    t = await openTestApp(readWorkers > 0 ? { backend: 'sqlite', readWorkers } : { readWorkers })
    await seed(t)
  })
  afterAll(() => t.close())

  it.each(codings)('%s: a page of books is compressed and decodes to the same JSON', async (coding) => {
    const path = '/api/v1/books?page[size]=50&include=author'
    const plain = await raw(t, path)
    const compressed = await raw(t, path, { 'accept-encoding': coding })
    expect(compressed.status).toBe(200)
    expect(compressed.headers.get('content-encoding')).toBe(coding)
    expect(varies(compressed)).toBe(true)
    expect(compressed.bytes.length).toBeLessThan(plain.bytes.length / 4)
    expect(JSON.parse(compressed.text)).toEqual(JSON.parse(plain.text))
    expect(compressed.text).toBe(plain.text)
  })

  it.each(codings)('%s: a streamed list of 3,000 books is compressed and decodes to the same JSON', async (coding) => {
    const plain = await raw(t, '/api/v1/books?include=author')
    expect(plain.bytes.length).toBeGreaterThan(64 * 1024)
    const compressed = await raw(t, '/api/v1/books?include=author', { 'accept-encoding': coding })
    expect(compressed.status).toBe(200)
    expect(compressed.headers.get('content-encoding')).toBe(coding)
    expect(varies(compressed)).toBe(true)
    expect(compressed.bytes.length).toBeLessThan(plain.bytes.length / 10)
    const document = JSON.parse(compressed.text)
    expect(document.data).toHaveLength(3000)
    expect(compressed.text).toBe(plain.text)
  })

  it('sends a compressed stream as it is written, piece by piece', async () => {
    const response = await t.app.handle(
      new Request('http://localhost/api/v1/books', { headers: { accept: JSON_API, 'accept-encoding': 'gzip' } }),
    )
    const reader = (response.body as ReadableStream<Uint8Array>).getReader()
    const first = await reader.read()
    // A flushed piece decodes on its own: the client has data before the list ends.
    const start = zlib.gunzipSync(first.value as Uint8Array, { finishFlush: zlib.constants.Z_SYNC_FLUSH }).toString()
    expect(start.startsWith('{"data":[{')).toBe(true)
    await reader.cancel()
    // The stream given up, the service goes on answering.
    expect((await raw(t, '/api/v1/books/1')).status).toBe(200)
  })

  it('answers 304 to the tag of the compressed answer, which differs from the identity one', async () => {
    for (const path of ['/api/v1/books?page[size]=50', '/api/v1/books']) {
      const identity = await raw(t, path)
      const gzip = await raw(t, path, { 'accept-encoding': 'gzip' })
      const tag = gzip.headers.get('etag') as string
      expect(tag).toEndWith('-gzip"')
      expect(tag).not.toBe(identity.headers.get('etag'))
      const again = await raw(t, path, { 'accept-encoding': 'gzip', 'if-none-match': tag })
      expect(again.status).toBe(304)
      expect(again.headers.get('etag')).toBe(tag)
      expect(varies(again)).toBe(true)
      expect(again.headers.get('content-encoding')).toBeNull()
      // The identity answer is another representation: the gzip tag does not stand for it.
      expect((await raw(t, path, { 'if-none-match': tag })).status).toBe(200)
    }
  })

  it('does not compress a single book (under 1 KiB), nor vary it', async () => {
    const answer = await raw(t, '/api/v1/books/1', { 'accept-encoding': 'gzip, br, zstd' })
    expect(answer.bytes.length).toBeLessThan(1024)
    expect(answer.headers.get('content-encoding')).toBeNull()
    expect(varies(answer)).toBe(false)
    expect(JSON.parse(answer.text).data.id).toBe('1')
  })

  it.each([
    ['no Accept-Encoding', {}],
    ['identity', { 'accept-encoding': 'identity' }],
    ['gzip;q=0', { 'accept-encoding': 'gzip;q=0' }],
    ['*;q=0', { 'accept-encoding': '*;q=0' }],
    ['a coding it does not make', { 'accept-encoding': 'deflate, compress' }],
  ])('does not compress with %s, but says the answer varies', async (_name, headers: Record<string, string>) => {
    const answer = await raw(t, '/api/v1/books?page[size]=50', headers)
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-encoding')).toBeNull()
    expect(varies(answer)).toBe(true)
    expect(JSON.parse(answer.text).data).toHaveLength(50)
  })

  it('compresses an error document over 1 KiB', async () => {
    const attributes = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`unknown_${i}`, 'x']))
    const response = await t.app.handle(
      new Request('http://localhost/api/v1/books', {
        method: 'POST',
        headers: { accept: JSON_API, 'content-type': JSON_API, 'accept-encoding': 'br' },
        body: JSON.stringify({ data: { type: 'books', attributes: { name: 'X', author_id: 1, ...attributes } } }),
      }),
    )
    expect(response.status).toBe(422)
    expect(response.headers.get('content-encoding')).toBe('br')
    const document = JSON.parse(decode('br', new Uint8Array(await response.arrayBuffer())))
    expect(document.errors).toHaveLength(30)
  })

  it('compresses the OpenAPI document', async () => {
    const plain = await raw(t, '/api/v1/openapi.json', { accept: 'application/json' })
    const compressed = await raw(t, '/api/v1/openapi.json', { accept: 'application/json', 'accept-encoding': 'gzip' })
    expect(compressed.status).toBe(200)
    expect(compressed.headers.get('content-encoding')).toBe('gzip')
    expect(compressed.headers.get('content-type')).toBe(plain.headers.get('content-type'))
    expect(compressed.bytes.length).toBeLessThan(plain.bytes.length / 4)
    expect(JSON.parse(compressed.text)).toEqual(JSON.parse(plain.text))
  })
})

describe('negotiateCoding', () => {
  it.each([
    ['gzip', 'gzip'],
    ['br', 'br'],
    ['zstd', 'zstd'],
    ['gzip, deflate, br, zstd', 'zstd'],
    ['gzip, deflate, br', 'br'],
    ['gzip;q=1, br;q=0.5', 'gzip'],
    ['br;q=0, gzip', 'gzip'],
    ['*', 'zstd'],
    ['zstd;q=0, *', 'br'],
    ['gzip;q=0.001', 'gzip'],
    ['GZIP', 'gzip'],
    ['x-gzip', 'gzip'],
    [' gzip ; q=0.8 , br ; q=0.9 ', 'br'],
  ])('Accept-Encoding %p: %s', (header, coding) => {
    expect(negotiateCoding(header)).toBe(coding as Coding)
  })

  it.each([null, '', 'identity', 'gzip;q=0', '*;q=0', 'deflate', 'gzip;q=abc', 'gzip;q=2', ',;=;', 'gzip;q=0, *;q=0'])(
    'Accept-Encoding %p: none',
    (header) => {
      expect(negotiateCoding(header)).toBeNull()
    },
  )
})

describe('addVary', () => {
  it('adds Accept-Encoding to a Vary another part of the app set', () => {
    const headers: Record<string, string> = { vary: 'Origin' }
    addVary(headers, 'Accept-Encoding')
    expect(headers.vary).toBe('Origin, Accept-Encoding')
  })

  it('sets Vary when there is none', () => {
    const headers: Record<string, string> = {}
    addVary(headers, 'Accept-Encoding')
    expect(headers.vary).toBe('Accept-Encoding')
  })
})

describe('encodeStream', () => {
  it.each(codings)(
    '%s: fails when its source fails, so that a cut list cannot pass for a whole one',
    async (coding) => {
      let pulls = 0
      const source = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (pulls++ === 0) controller.enqueue(new TextEncoder().encode('{"data":['))
          else controller.error(new Error('the disk failed'))
        },
      })
      const outcome = await new Response(encodeStream(source, coding)).arrayBuffer().then(
        () => 'complete',
        (error: Error) => error.message,
      )
      expect(outcome).toBe('the disk failed')
    },
  )
})
