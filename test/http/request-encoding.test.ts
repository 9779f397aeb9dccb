import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import zlib from 'node:zlib'
import { changesNothing, expectOneError } from '../support/expectations'
import { JSON_API, openTestApp, type TestApp } from '../support/harness'

// A request body with Content-Encoding is decoded, the body limit applying to what it decodes to
// (RFC 9110 §8.4); a coding the service does not decode is a 415 that lists those it does.

const ATOMIC = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'

const encoders: Record<string, (bytes: Uint8Array) => Uint8Array> = {
  gzip: (bytes) => zlib.gzipSync(bytes),
  'x-gzip': (bytes) => zlib.gzipSync(bytes),
  deflate: (bytes) => zlib.deflateSync(bytes),
  br: (bytes) => zlib.brotliCompressSync(bytes, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } }),
  zstd: (bytes) => zlib.zstdCompressSync(bytes),
}

const author = (name: string) =>
  new TextEncoder().encode(JSON.stringify({ data: { type: 'authors', attributes: { name } } }))

let t: TestApp
beforeEach(async () => {
  t = await openTestApp()
})
afterEach(() => t.close())

function post(body: Uint8Array, encoding: string, headers: Record<string, string> = {}) {
  return t.send('POST', '/api/v1/authors', {
    headers: { 'content-type': JSON_API, accept: JSON_API, 'content-encoding': encoding, ...headers },
    body,
  })
}

describe('POST with a Content-Encoding the service decodes', () => {
  it.each(Object.keys(encoders))('stores a %s body as if it had been sent plain', async (coding) => {
    const answer = await post((encoders[coding] as (b: Uint8Array) => Uint8Array)(author(`Sent as ${coding}`)), coding)
    expect(answer.status).toBe(201)
    expect((await t.stored('authors')).map((a) => a.name)).toEqual([`Sent as ${coding}`])
  })

  it('takes the coding names in any case, and identity as none', async () => {
    expect((await post(zlib.gzipSync(author('Upper')), 'GZIP')).status).toBe(201)
    expect((await post(author('Plain'), 'identity')).status).toBe(201)
    expect((await t.stored('authors')).map((a) => a.name)).toEqual(['Upper', 'Plain'])
  })

  it('undoes two codings, the last applied first', async () => {
    const body = zlib.brotliCompressSync(zlib.gzipSync(author('Twice')))
    expect((await post(body, 'gzip, br')).status).toBe(201)
    expect((await t.stored('authors')).map((a) => a.name)).toEqual(['Twice'])
  })

  it('decodes an atomic request as well', async () => {
    const document = { 'atomic:operations': [{ op: 'add', data: { type: 'authors', attributes: { name: 'Atomic' } } }] }
    const answer = await t.send('POST', '/api/v1/operations', {
      headers: { 'content-type': ATOMIC, accept: ATOMIC, 'content-encoding': 'gzip' },
      body: zlib.gzipSync(JSON.stringify(document)),
    })
    expect(answer.status).toBe(200)
    expect((await t.stored('authors')).map((a) => a.name)).toEqual(['Atomic'])
  })
})

describe('the body limit (MAX_BODY_BYTES) on a decoded body', () => {
  it('takes a body that decodes to exactly the limit, and refuses one byte more with 413', async () => {
    await t.close()
    t = await openTestApp({ maxBodyBytes: 1000 })
    const exactly = (size: number) => {
      const head = author('Padded')
      const padded = new Uint8Array(size).fill(0x20)
      padded.set(head)
      return zlib.gzipSync(padded)
    }
    expect((await post(exactly(1000), 'gzip')).status).toBe(201)
    const answer = await changesNothing(t, () => post(exactly(1001), 'gzip'))
    expectOneError(answer, 413)
    expect(answer.json.errors[0].detail).toBe('The request body is larger than the limit of 1000 bytes once decoded')
  })

  it('stops a gzip bomb (1 MB that inflates to 1 GB) at the limit with 413, holding no more than the limit', async () => {
    // 64 gzip members of 16 MiB of spaces each, about 16 KB apiece: 1 GiB once inflated.
    const member = zlib.gzipSync(Buffer.alloc(16 * 1024 * 1024, 0x20))
    const bomb = Buffer.concat(Array.from({ length: 64 }, () => member))
    expect(bomb.length).toBeLessThan(1024 * 1024)
    const before = process.memoryUsage().rss
    const answer = await changesNothing(t, () => post(bomb, 'gzip'))
    expectOneError(answer, 413)
    // Inflated whole, it would have taken 1 GiB.
    expect((process.memoryUsage().rss - before) / 1024 / 1024).toBeLessThan(200)
  })

  it.each(['br', 'zstd', 'deflate'])('stops a %s bomb the same way', async (coding) => {
    const bomb = (encoders[coding] as (b: Uint8Array) => Uint8Array)(Buffer.alloc(16 * 1024 * 1024, 0x20))
    expectOneError(await changesNothing(t, () => post(bomb, coding)), 413)
  })
})

describe('POST with a body that is not what its Content-Encoding says', () => {
  it('answers 400 naming the coding, and stores nothing', async () => {
    const answer = await changesNothing(t, () => post(author('Not gzip'), 'gzip'))
    expectOneError(answer, 400, { pointer: '' })
    expect(answer.json.errors[0].detail).toStartWith('The request body is not valid gzip data:')
  })

  it('answers a gzip body cut short 400 too', async () => {
    const whole = zlib.gzipSync(author('Cut short'))
    expectOneError(await changesNothing(t, () => post(whole.subarray(0, whole.length - 8), 'gzip')), 400, {
      pointer: '',
    })
  })
})

describe('POST with a Content-Encoding the service does not decode', () => {
  it.each(['compress', 'exi', 'pack200-gzip', 'gzip, compress'])(
    'answers %p with 415, Accept-Encoding listing the codings it takes, and stores nothing',
    async (coding) => {
      const answer = await changesNothing(t, () => post(author('Unknown coding'), coding))
      expectOneError(answer, 415, { header: 'Content-Encoding' })
      expect(answer.headers.get('accept-encoding')).toBe('gzip, deflate, br, zstd')
      expect(answer.json.errors[0].detail).toContain(`"${coding.split(', ').at(-1)}" is not one the service decodes`)
    },
  )

  it('answers three codings one over another with 415: each would cost the body limit again', async () => {
    const body = zlib.gzipSync(zlib.gzipSync(zlib.gzipSync(author('Thrice'))))
    const answer = await changesNothing(t, () => post(body, 'gzip, gzip, gzip'))
    expectOneError(answer, 415, { header: 'Content-Encoding' })
    expect(answer.headers.get('accept-encoding')).toBe('gzip, deflate, br, zstd')
  })
})
