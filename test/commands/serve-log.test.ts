import { afterAll, afterEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { join } from 'node:path'
import { type ChildProcess, type LogLine, removeTempDirs, spawnChild, stopChildren, tempDir } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/*
 * The service's log as a running process writes it (`bun src/cli.ts` on a real port): the
 * `listening` line, the request lines and what LOG_LEVEL=debug adds to them.
 */

const REPO = join(import.meta.dir, '..', '..')
const JSON_API = 'application/vnd.api+json'
const AGENT = 'catalogue-log-test/1.0 (+https://example.org/agent)'

interface Service {
  readonly child: ChildProcess
  readonly origin: string
  readonly listening: LogLine
}

async function start(env: Record<string, string> = {}): Promise<Service> {
  const child = spawnChild(['bun', join(REPO, 'src', 'cli.ts')], REPO, {
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: `sqlite://${join(tempDir('catalogue-log-'), 'c.db')}`,
    ...env,
  })
  const listening = await child.waitForLog((line) => line.msg === 'listening')
  return { child, origin: new URL(String(listening.url)).origin, listening }
}

/** The lines logged for one request id, in order. */
function linesOf(child: ChildProcess, id: string): LogLine[] {
  return child.logs.filter((line) => line.request_id === id)
}

/** Sends a request and waits for its `request` line. */
async function logged(
  service: Service,
  path: string,
  init: RequestInit = {},
): Promise<{ response: Response; body: Uint8Array<ArrayBuffer>; line: LogLine }> {
  const response = await fetch(`${service.origin}${path}`, init)
  const body = new Uint8Array(await response.arrayBuffer())
  const id = response.headers.get('x-request-id') as string
  const line = await service.child.waitForLog((l) => l.msg === 'request' && l.request_id === id)
  return { response, body, line }
}

afterEach(stopChildren)
afterAll(removeTempDirs)

describe('the listening line', () => {
  it('names the URL, the docs page, the database and, on SQLite, its durability', async () => {
    const service = await start({ DURABILITY: 'normal' })
    const { listening, origin } = service
    expect(listening).toMatchObject({
      level: 'info',
      url: `${origin}/`,
      docs: `${origin}/docs`,
      durability: 'normal',
    })
    expect(listening).not.toHaveProperty('pool_size')
    // The docs URL printed is the page (and its request line says its size).
    const page = await logged(service, new URL(String(listening.docs)).pathname)
    expect(page.response.status).toBe(200)
    expect(new TextDecoder().decode(page.body)).toContain('<title>Library catalogue API</title>')
    expect(page.line.bytes).toBe(page.body.byteLength)
  })

  it('names the docs page on localhost when the service listens on every address', async () => {
    const service = await start({ HOST: '0.0.0.0' })
    const port = new URL(String(service.listening.url)).port
    expect(service.listening).toMatchObject({ url: `http://0.0.0.0:${port}/`, docs: `http://localhost:${port}/docs` })
    const page = await fetch(String(service.listening.docs))
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('<title>Library catalogue API</title>')
  })
})

describe('a request line', () => {
  it("names the client's address, its user agent and the bytes of the body sent, as sent", async () => {
    const service = await start()
    const headers = { accept: JSON_API, 'user-agent': AGENT, 'accept-encoding': 'identity' }
    const { response, body, line } = await logged(service, '/api/v1/authors/7', { headers })
    expect(response.status).toBe(404)
    expect(line).toMatchObject({ address: '127.0.0.1', user_agent: AGENT, bytes: body.byteLength })
    expect(body.byteLength).toBeGreaterThan(0)
    // Compressed: the bytes on the wire (read as they came), not those of the text.
    const gzip = { headers: { 'accept-encoding': 'gzip' }, decompress: false }
    const spec = await logged(service, '/api/v1/openapi.json', gzip)
    expect(spec.response.headers.get('content-encoding')).toBe('gzip')
    expect(spec.line.bytes).toBe(spec.body.byteLength)
    expect(spec.body.byteLength).toBeLessThan(Bun.gunzipSync(spec.body).byteLength)
  })

  it('names the client a trusted proxy forwards (TRUSTED_PROXIES), and the peer when it is not one', async () => {
    const service = await start({ TRUSTED_PROXIES: '127.0.0.1' })
    const headers = { accept: JSON_API, 'x-forwarded-for': '198.51.100.23' }
    expect((await logged(service, '/api/v1/authors', { headers })).line.address).toBe('198.51.100.23')
    const other = await start({ TRUSTED_PROXIES: '10.0.0.0/8' })
    expect((await logged(other, '/api/v1/authors', { headers })).line.address).toBe('127.0.0.1')
  })

  it('counts the bytes of a streamed list as they are sent, and logs it when it ends', async () => {
    const service = await start()
    // 600 authors of 200 characters: a list longer than what is answered whole (64 KiB).
    for (let batch = 0; batch < 6; batch++) {
      const operations = Array.from({ length: 100 }, (_, i) => ({
        op: 'add',
        data: { type: 'authors', attributes: { name: `${batch}-${i}-`.padEnd(200, 'x') } },
      }))
      const added = await fetch(`${service.origin}/api/v1/operations`, {
        method: 'POST',
        headers: {
          'content-type': `${JSON_API}; ext="https://jsonapi.org/ext/atomic"`,
          accept: `${JSON_API}; ext="https://jsonapi.org/ext/atomic"`,
        },
        body: JSON.stringify({ 'atomic:operations': operations }),
      })
      expect(added.status).toBe(200)
    }
    const headers = { accept: JSON_API, 'accept-encoding': 'identity' }
    const { response, body, line } = await logged(service, '/api/v1/authors', { headers })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-length')).toBeNull()
    expect(body.byteLength).toBeGreaterThan(120_000)
    expect(line.bytes).toBe(body.byteLength)
    expect(line).not.toHaveProperty('cut_short')
  })

  it('says 0 bytes for HEAD and for a 304, whose bodies are not sent', async () => {
    const service = await start()
    const head = await logged(service, '/api/v1/authors', { method: 'HEAD', headers: { accept: JSON_API } })
    expect(head.line).toMatchObject({ method: 'HEAD', status: 200, bytes: 0 })
    const first = await fetch(`${service.origin}/api/v1/authors`, { headers: { accept: JSON_API } })
    await first.text()
    const etag = first.headers.get('etag') as string
    const again = await logged(service, '/api/v1/authors', { headers: { accept: JSON_API, 'if-none-match': etag } })
    expect(again.line).toMatchObject({ status: 304, bytes: 0 })
  })
})

describe('LOG_LEVEL=debug', () => {
  it('logs more than info for the same request: its headers without credentials, and each store call with its duration', async () => {
    const request = (service: Service) =>
      logged(service, '/api/v1/books/1?include=author', {
        headers: {
          accept: JSON_API,
          'user-agent': AGENT,
          authorization: 'Bearer cat_secret-0123456789',
          cookie: 'a=b',
        },
      })
    const info = await start({ LOG_LEVEL: 'info' })
    const debug = await start({ LOG_LEVEL: 'debug' })
    const atInfo = await request(info)
    const atDebug = await request(debug)
    const infoLines = linesOf(info.child, atInfo.line.request_id as string)
    const debugLines = linesOf(debug.child, atDebug.line.request_id as string)
    expect(infoLines.map((l) => l.msg)).toEqual(['request'])
    expect(debugLines.length).toBeGreaterThan(infoLines.length)
    const received = debugLines.find((l) => l.msg === 'request received')
    expect(received).toMatchObject({
      level: 'debug',
      method: 'GET',
      url: `${debug.origin}/api/v1/books/1?include=author`,
      address: '127.0.0.1',
      headers: expect.objectContaining({ 'user-agent': AGENT, authorization: '[redacted]', cookie: '[redacted]' }),
    })
    expect(JSON.stringify(debugLines)).not.toContain('cat_secret')
    const calls = debugLines
      .filter((l) => l.msg === 'database call')
      .map((l) => ({ level: l.level, operation: l.operation, timed: typeof l.duration_ms === 'number' }))
    expect(calls).toContainEqual({ level: 'debug', operation: 'findWithRelated', timed: true })
    expect(calls.every((call) => call.timed && typeof call.operation === 'string')).toBe(true)
    // The request line is the same at both levels.
    expect(Object.keys(atDebug.line).sort()).toEqual(Object.keys(atInfo.line).sort())
  })
})

describe('the start-up warning of a wide TRUSTED_PROXIES range', () => {
  const warnings = (child: ChildProcess) => child.logs.filter((line) => line.level === 'warn')

  it('warns once before listening, naming the ranges wider than an IPv4 /8 or an IPv6 /32, with one process or with workers', async () => {
    for (const workers of ['1', '2']) {
      const service = await start({ TRUSTED_PROXIES: '127.0.0.1, 0.0.0.0/0, 10.0.0.0/8, ::/0', WORKERS: workers })
      const shown = warnings(service.child)
      expect({ workers, warnings: shown.length }).toEqual({ workers, warnings: 1 })
      expect(shown[0]).toMatchObject({ trusted_proxies: '0.0.0.0/0, ::/0' })
      expect(shown[0]?.msg).toContain('every client inside it can choose the address it is counted')
      const order = service.child.logs.map((line) => line.msg)
      expect(order.indexOf(shown[0]?.msg as string)).toBeLessThan(order.indexOf('listening'))
      await stopChildren()
    }
  })

  it("says nothing of the proxies' own addresses and of ranges a proxy tier may span: private ones, an IPv6 /32", async () => {
    const service = await start({ TRUSTED_PROXIES: '127.0.0.1, 10.0.0.0/8, 172.16.0.0/12, fd00::/8, 2001:db8::/32' })
    expect(warnings(service.child)).toEqual([])
  })
})
