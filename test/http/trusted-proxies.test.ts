import { afterEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import http from 'node:http'
import net from 'node:net'
import { MAX_FORWARDED_ENTRIES } from '../../src/http/access/client-address'
import { wideTrustedRanges } from '../../src/http/access/trusted-proxies'
import { insertCatalogue } from '../support/bulk'
import { JSON_API, openTestApp, type TestApp, type TestAppOptions } from '../support/harness'
import { WAIT_MS } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/*
 * TRUSTED_PROXIES: behind a reverse proxy, the client a request is counted and logged as is the one
 * the proxy names in Forwarded or X-Forwarded-For, when (and only when) the TCP peer is a trusted
 * proxy. The app over a real port (the peer's address needs a socket); each request comes from a
 * loopback address of its own choosing (any 127.x.y.z reaches the loopback on Linux): 127.0.0.2 is
 * the proxy, 127.0.0.3 a client that calls the service directly.
 */

const PROXY = '127.0.0.2'
const DIRECT = '127.0.0.3'

let t: TestApp | undefined
afterEach(async () => {
  if (t?.app.server) await t.app.stop(true)
  await t?.close()
  t = undefined
})

/** The app, listening on a free port of `hostname`, its log kept at info. */
async function serve(app: TestAppOptions['app'], hostname = '127.0.0.1'): Promise<{ t: TestApp; port: number }> {
  t = await openTestApp({ logLevel: 'info', app })
  t.app.listen({ port: 0, hostname })
  return { t, port: t.app.server?.port as number }
}

interface Got {
  readonly status: number
  readonly ratelimit: string | undefined
}

/** GET over a connection of its own from `localAddress`, with `headers`. */
function getFrom(port: number, localAddress: string, headers: Record<string, string> = {}): Promise<Got> {
  return new Promise((resolve, reject) => {
    const request = http.get(
      { host: '127.0.0.1', port, path: '/api/v1/authors', localAddress, headers, timeout: WAIT_MS, agent: false },
      (response) => {
        response.resume()
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, ratelimit: response.headers.ratelimit as string | undefined }),
        )
      },
    )
    request.on('timeout', () => request.destroy(new Error(`timed out: GET from ${localAddress}`)))
    request.on('error', reject)
  })
}

/** The `address` of every request line logged so far, in order. */
function loggedAddresses(app: TestApp): unknown[] {
  return app.logs
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.msg === 'request')
    .map((line) => line.address)
}

/** The address the request line of one GET with `headers` from `localAddress` names. */
async function loggedFor(port: number, localAddress: string, headers: Record<string, string>): Promise<unknown> {
  const before = loggedAddresses(t as TestApp).length
  const got = await getFrom(port, localAddress, headers)
  expect(got.status).toBe(200)
  const logged = loggedAddresses(t as TestApp)
  expect(logged).toHaveLength(before + 1)
  return logged.at(-1)
}

const xff = (value: string) => ({ 'x-forwarded-for': value })
const forwarded = (value: string) => ({ forwarded: value })

describe('TRUSTED_PROXIES: requests a trusted proxy forwards', () => {
  it('count each client X-Forwarded-For names against its own RATE_LIMIT, and log its address', async () => {
    const { port } = await serve({ trustedProxies: [PROXY], rateLimit: { perMinute: 2 } })
    expect((await getFrom(port, PROXY, xff('203.0.113.1'))).status).toBe(200)
    expect((await getFrom(port, PROXY, xff('203.0.113.1'))).status).toBe(200)
    expect((await getFrom(port, PROXY, xff('203.0.113.1'))).status).toBe(429)
    // Another client behind the same proxy has its whole allowance.
    expect(await getFrom(port, PROXY, xff('203.0.113.2'))).toEqual({ status: 200, ratelimit: '"default";r=1;t=60' })
    expect(loggedAddresses(t as TestApp)).toEqual(['203.0.113.1', '203.0.113.1', '203.0.113.1', '203.0.113.2'])
  })

  it("read X-Forwarded-For before a client's own Forwarded, which nginx and Caddy pass on untouched", async () => {
    const { port } = await serve({ trustedProxies: [PROXY], rateLimit: { perMinute: 1 } })
    // The proxy appended the client's real address to X-Forwarded-For; the client wrote Forwarded.
    const spoofed = (address: string) => ({ ...forwarded(`for=${address}`), ...xff('198.51.100.1') })
    expect(await getFrom(port, PROXY, spoofed('192.0.2.60'))).toMatchObject({ status: 200 })
    expect(await getFrom(port, PROXY, spoofed('192.0.2.61'))).toMatchObject({ status: 429 })
    expect(loggedAddresses(t as TestApp)).toEqual(['198.51.100.1', '198.51.100.1'])
  })

  it('read RFC 7239 Forwarded where there is no X-Forwarded-For: for= as an IPv4 address, or a quoted IPv6 one with a port', async () => {
    const { port } = await serve({ trustedProxies: [PROXY] })
    expect(await loggedFor(port, PROXY, forwarded('for=192.0.2.60;proto=http;by=203.0.113.43'))).toBe('192.0.2.60')
    expect(await loggedFor(port, PROXY, forwarded('For="[2001:db8:cafe::17]:4711"'))).toBe('2001:db8:cafe::17')
    expect(await loggedFor(port, PROXY, forwarded('for="192.0.2.61:8080"'))).toBe('192.0.2.61')
    // Without a for= (a proxy that sets only the scheme), the proxy is the client.
    expect(await loggedFor(port, PROXY, forwarded('proto=https'))).toBe(PROXY)
  })

  it('count a forwarded IPv6 client by its /64, as a direct one is', async () => {
    const { port } = await serve({ trustedProxies: [PROXY], rateLimit: { perMinute: 2 } })
    expect((await getFrom(port, PROXY, forwarded('for="[2001:db8:1:2::a]"'))).status).toBe(200)
    expect((await getFrom(port, PROXY, xff('2001:db8:1:2::b'))).status).toBe(200)
    expect((await getFrom(port, PROXY, forwarded('for="[2001:db8:1:2::c]:443"'))).status).toBe(429)
    expect((await getFrom(port, PROXY, xff('2001:db8:1:3::a'))).status).toBe(200)
  })

  it('skip the trusted proxies of a chain from the right: the first address that is not one is the client', async () => {
    const { port } = await serve({ trustedProxies: [PROXY, '10.0.0.0/8', 'fd00::/8'] })
    expect(await loggedFor(port, PROXY, xff('198.51.100.7, 10.0.0.5, 10.1.2.3'))).toBe('198.51.100.7')
    expect(await loggedFor(port, PROXY, forwarded('for=198.51.100.8, for="[fd00::1]", for=10.9.9.9'))).toBe(
      '198.51.100.8',
    )
    // Every hop trusted: the leftmost, a proxy calling the service itself, is the client.
    expect(await loggedFor(port, PROXY, xff('10.0.0.6, 10.0.0.7'))).toBe('10.0.0.6')
  })

  it('never read what lies left of the first untrusted address: a client cannot choose its address through the proxy', async () => {
    const { port } = await serve({ trustedProxies: [PROXY], rateLimit: { perMinute: 2 } })
    // What the client sent comes first; the proxy appends the address it saw (nginx's $proxy_add_x_forwarded_for).
    expect((await getFrom(port, PROXY, xff('192.0.2.1, 203.0.113.9'))).status).toBe(200)
    expect((await getFrom(port, PROXY, xff('192.0.2.2, 203.0.113.9'))).status).toBe(200)
    expect((await getFrom(port, PROXY, xff('not an address, 203.0.113.9'))).status).toBe(429)
    expect(loggedAddresses(t as TestApp)).toEqual(['203.0.113.9', '203.0.113.9', '203.0.113.9'])
  })

  it('take an obfuscated identifier as the client, and count `unknown` as the proxy that reported it', async () => {
    const { port } = await serve({ trustedProxies: [PROXY, '10.0.0.0/8'] })
    expect(await loggedFor(port, PROXY, forwarded('for=_gazonk'))).toBe('_gazonk')
    expect(await loggedFor(port, PROXY, forwarded('for="_hidden:_port"'))).toBe('_hidden')
    expect(await loggedFor(port, PROXY, forwarded('for=unknown'))).toBe(PROXY)
    expect(await loggedFor(port, PROXY, forwarded('for=unknown, for=10.0.0.5'))).toBe('10.0.0.5')
    expect(await loggedFor(port, PROXY, xff('unknown, 10.0.0.6'))).toBe('10.0.0.6')
  })

  it('trust a proxy listed by its IPv4 address when the socket reports it mapped into IPv6 (::ffff:)', async () => {
    // Listening on every IPv6 address, an IPv4 peer is ::ffff:127.0.0.2.
    const { port } = await serve({ trustedProxies: [PROXY] }, '::')
    expect(await loggedFor(port, PROXY, xff('203.0.113.20'))).toBe('203.0.113.20')
    expect(await loggedFor(port, DIRECT, xff('203.0.113.21'))).toBe(`::ffff:${DIRECT}`)
  })
})

describe('a forwarding header from a peer that is not a trusted proxy', () => {
  it('is ignored: the peer is counted and logged, whatever address it claims', async () => {
    const { port } = await serve({ trustedProxies: [PROXY], rateLimit: { perMinute: 2 } })
    expect((await getFrom(port, DIRECT, xff('203.0.113.30'))).status).toBe(200)
    expect((await getFrom(port, DIRECT, forwarded('for=203.0.113.31'))).status).toBe(200)
    expect((await getFrom(port, DIRECT, xff('203.0.113.32'))).status).toBe(429)
    expect(loggedAddresses(t as TestApp)).toEqual([DIRECT, DIRECT, DIRECT])
  })

  it('is ignored from every peer without TRUSTED_PROXIES', async () => {
    const { port } = await serve({ rateLimit: { perMinute: 1 } })
    expect((await getFrom(port, PROXY, xff('203.0.113.40'))).status).toBe(200)
    expect((await getFrom(port, PROXY, xff('203.0.113.41'))).status).toBe(429)
    expect(loggedAddresses(t as TestApp)).toEqual([PROXY, PROXY])
  })
})

describe('malformed forwarding headers from a trusted proxy', () => {
  it('are answered as any request, the client being the proxy itself', async () => {
    const { port } = await serve({ trustedProxies: [PROXY] })
    const malformed = [
      xff('not-an-address'),
      xff('203.0.113.1, garbage'),
      xff('203.0.113.1:99999999'),
      xff('1.2.3.4.5'),
      xff('[2001:db8::1'),
      xff(`${'9'.repeat(2000)}`),
      forwarded('for='),
      forwarded('for="[2001:db8::1"'),
      forwarded('for="[2001:db8::1]:80'),
      forwarded('for=192.0.2.1;for=192.0.2.2'),
      forwarded('for="\\"192.0.2.1\\""'),
      forwarded('for=_'),
      forwarded('for=192.0.2.1;=x'),
      forwarded('for="192.0.2.1, for=192.0.2.2"'),
    ]
    for (const headers of malformed) expect(await loggedFor(port, PROXY, headers)).toBe(PROXY)
  })
})

describe(`a forwarding header of many entries: at most ${MAX_FORWARDED_ENTRIES} are examined, from the right`, () => {
  it('finds the client at the last entry examined, and takes a longer chain of trusted proxies as its own client', async () => {
    const { port } = await serve({ trustedProxies: [PROXY, '10.0.0.0/8'] })
    const proxies = (n: number) => Array.from({ length: n }, (_, i) => `10.0.${i >> 8}.${i & 255}`)
    const chain = proxies(MAX_FORWARDED_ENTRIES - 1)
    expect(await loggedFor(port, PROXY, xff(['198.51.100.50', ...chain].join(', ')))).toBe('198.51.100.50')
    const longer = proxies(MAX_FORWARDED_ENTRIES)
    expect(await loggedFor(port, PROXY, xff(['198.51.100.50', ...longer].join(', ')))).toBe('10.0.0.0')
    // As many entries as a request's 16 KiB of headers holds: the same.
    const many = proxies(1200)
    expect(await loggedFor(port, PROXY, xff(['198.51.100.50', ...many].join(',')))).toBe(
      many.at(-MAX_FORWARDED_ENTRIES),
    )
  })

  it("leaves a header past Bun's 16 KiB of request headers to Bun: 1,400 IPv4 entries are answered, 1,500 get its bare 431", async () => {
    const { t, port } = await serve({ trustedProxies: [PROXY] })
    const entries = (n: number) => Array.from({ length: n }, (_, i) => `10.0.${i >> 8}.${i & 255}`).join(', ')
    expect(entries(1400).length).toBe(16_138)
    expect((await getFrom(port, PROXY, xff(entries(1400)))).status).toBe(200)
    const logged = loggedAddresses(t).length
    expect((await getFrom(port, PROXY, xff(entries(1500)))).status).toBe(431)
    // Refused before the service saw it: no request line.
    expect(loggedAddresses(t)).toHaveLength(logged)
  })

  it('reads none of a header of 10,000 empty entries past the cap', async () => {
    const { port } = await serve({ trustedProxies: [PROXY] })
    expect(await loggedFor(port, PROXY, xff(`198.51.100.60${','.repeat(10_000)}`))).toBe(PROXY)
    expect(await loggedFor(port, PROXY, forwarded(`for=198.51.100.61${','.repeat(10_000)}`))).toBe(PROXY)
  })
})

/** `GET path` from `localAddress` with `headers` over a raw connection: resolves once the status line is in, the answer left unread. */
function openRaw(
  port: number,
  localAddress: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ socket: net.Socket; status: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress }, () => {
      const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`)
      socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nAccept: ${JSON_API}\r\n${lines.join('')}\r\n`)
    })
    socket.once('data', (chunk: Buffer) => {
      // Read nothing more: the client stops reading, and its answer holds its slot.
      socket.pause()
      resolve({ socket, status: chunk.subarray(9, 12).toString() })
    })
    socket.on('error', reject)
  })
}

describe('MAX_LONG_ANSWERS_PER_CLIENT behind a trusted proxy', () => {
  it('counts per forwarded client: one past its share is refused, another behind the same proxy served', async () => {
    const { t, port } = await serve({ trustedProxies: [PROXY], longAnswers: { total: 3, perClient: 1 } })
    // 8,000 books of 1,000-character titles: about 8 MB, more than a client that stops reading takes in.
    await insertCatalogue(t, {
      authors: ['Ada Quill'],
      collections: [],
      books: 8000,
      authorOf: () => 1,
      collectionOf: () => null,
      titleOf: (i) => `${'Long title '.repeat(90)}${String(i).padStart(10, '0')}`,
    })
    const first = await openRaw(port, PROXY, '/api/v1/books', xff('203.0.113.70'))
    expect(first.status).toBe('200')
    const again = await openRaw(port, PROXY, '/api/v1/books', xff('203.0.113.70'))
    expect(again.status).toBe('503')
    const other = await openRaw(port, PROXY, '/api/v1/books', xff('203.0.113.71'))
    expect(other.status).toBe('200')
    for (const { socket } of [first, again, other]) socket.destroy()
  })
})

describe('TRUSTED_PROXIES ranges too wide to be a proxy tier, warned of at start', () => {
  it('are those wider than an IPv4 /8 or an IPv6 /32, private IPv6 ranges aside, and IPv6 ranges holding IPv4-mapped addresses measured as IPv4', () => {
    const wide = [
      '0.0.0.0/0',
      '10.0.0.0/7',
      '128.0.0.0/1',
      '::/0',
      '2000::/3',
      '::/64',
      '::ffff:0:0/96',
      '::ffff:0.0.0.0/100',
    ]
    const narrow = [
      '127.0.0.1',
      '::1',
      '10.0.0.0/8',
      '172.16.0.0/12',
      '192.168.0.0/16',
      '2001:db8::/32',
      'fd00::/8',
      'fc00::/7',
      'fe80::/10',
      '::ffff:10.0.0.0/104',
    ]
    expect(wideTrustedRanges([...narrow, ...wide])).toEqual(wide)
  })
})
