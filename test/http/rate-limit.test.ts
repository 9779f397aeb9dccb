import { afterEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import http from 'node:http'
import { parseTokenFile, TokenSet } from '../../src/http/access/api-tokens'
import { clientOf } from '../../src/http/access/client-address'
import { RateLimiter, secondsLeft, WINDOW_MS } from '../../src/http/access/rate-limiter'
import { SharedRateLimit } from '../../src/http/access/shared-rate-limit'
import { changesNothing, expectOneError } from '../support/expectations'
import { openTestApp, type TestApp } from '../support/harness'
import { WAIT_MS } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

const sha256 = (token: string) => new Bun.CryptoHasher('sha256').update(token).digest('hex')
const ALICE = 'cat_alice-token-0123456789abcdefghijklmnopqrstuvw'
const BOB = 'cat_bob-token-0123456789abcdefghijklmnopqrstuvwxyz'
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** A clock the test moves by hand. */
class ManualClock {
  ms = 1_000
  readonly now = () => this.ms
}

let app: TestApp | undefined

async function open(
  perMinute: number,
  options: { clock?: ManualClock; tokens?: boolean; maxKeys?: number } = {},
): Promise<TestApp> {
  const tokens = options.tokens
    ? new TokenSet(parseTokenFile(`alice write ${sha256(ALICE)}\nbob read ${sha256(BOB)}`))
    : undefined
  app = await openTestApp({
    app: { rateLimit: { perMinute, clock: options.clock?.now, maxKeys: options.maxKeys }, tokens, publicRead: true },
  })
  return app
}

afterEach(async () => {
  if (app?.app.server) await app.app.stop(true)
  await app?.close()
  app = undefined
})

/** GET over a real connection from `localAddress` (any 127.x.y.z reaches the loopback on Linux). */
function getFrom(localAddress: string, port: number, path: string): Promise<{ status: number; ratelimit?: string }> {
  return new Promise((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path, localAddress, timeout: WAIT_MS }, (response) => {
      response.resume()
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, ratelimit: response.headers.ratelimit as string | undefined }),
      )
    })
    request.on('timeout', () => request.destroy(new Error(`timed out: GET ${path} from ${localAddress}`)))
    request.on('error', reject)
  })
}

describe('without RATE_LIMIT', () => {
  it('adds no RateLimit headers and never answers 429', async () => {
    app = await openTestApp()
    for (let i = 0; i < 5; i++) {
      const answer = await app.get('/api/v1/authors')
      expect(answer.status).toBe(200)
      expect(answer.headers.get('ratelimit')).toBeNull()
      expect(answer.headers.get('ratelimit-policy')).toBeNull()
    }
  })
})

describe('RATE_LIMIT=3', () => {
  it('puts RateLimit-Policy and RateLimit on every answer, the remaining count going down', async () => {
    const clock = new ManualClock()
    const app = await open(3, { clock })
    const first = await app.get('/api/v1/authors')
    expect(first.headers.get('ratelimit-policy')).toBe('"default";q=3;w=60')
    expect(first.headers.get('ratelimit')).toBe('"default";r=2;t=60')
    clock.ms += 15_500
    const second = await app.get('/api/v1/no-such-path')
    expect(second.status).toBe(404)
    expect(second.headers.get('ratelimit')).toBe('"default";r=1;t=45')
    const third = await app.post('/api/v1/authors', { data: { type: 'author', attributes: { name: '' } } })
    expect(third.status).toBe(422)
    expect(third.headers.get('ratelimit')).toBe('"default";r=0;t=45')
  })

  it('answers the fourth request in a minute 429 with Retry-After and a JSON:API error, and changes nothing', async () => {
    const clock = new ManualClock()
    const app = await open(3, { clock })
    for (let i = 0; i < 3; i++) expect((await app.get('/api/v1/authors')).status).toBe(200)
    clock.ms += 20_000
    const refused = await changesNothing(app, () =>
      app.post('/api/v1/authors', { data: { type: 'author', attributes: { name: 'Too many' } } }),
    )
    expectOneError(refused, 429)
    expect(refused.headers.get('retry-after')).toBe('40')
    expect(refused.headers.get('ratelimit')).toBe('"default";r=0;t=40')
    expect(refused.headers.get('ratelimit-policy')).toBe('"default";q=3;w=60')
  })

  it('allows requests again once the minute has passed', async () => {
    const clock = new ManualClock()
    const app = await open(3, { clock })
    for (let i = 0; i < 4; i++) await app.get('/api/v1/authors')
    clock.ms += WINDOW_MS - 1
    expect((await app.get('/api/v1/authors')).status).toBe(429)
    clock.ms += 1
    const answer = await app.get('/api/v1/authors')
    expect(answer.status).toBe(200)
    expect(answer.headers.get('ratelimit')).toBe('"default";r=2;t=60')
  })

  it('counts each token apart from the others and from requests without a token', async () => {
    const app = await open(3, { tokens: true })
    for (let i = 0; i < 3; i++) expect((await app.get('/api/v1/authors', bearer(ALICE))).status).toBe(200)
    expect((await app.get('/api/v1/authors', bearer(ALICE))).status).toBe(429)
    const bob = await app.get('/api/v1/authors', bearer(BOB))
    expect(bob.status).toBe(200)
    expect(bob.headers.get('ratelimit')).toBe('"default";r=2;t=60')
    const anonymous = await app.get('/api/v1/authors')
    expect(anonymous.status).toBe(200)
    expect(anonymous.headers.get('ratelimit')).toBe('"default";r=2;t=60')
  })

  it('counts refused requests too, so that tokens cannot be guessed at speed', async () => {
    const app = await open(3, { tokens: true })
    for (let i = 0; i < 3; i++) expect((await app.get('/api/v1/authors', bearer(`cat_guess-${i}`))).status).toBe(401)
    expect((await app.get('/api/v1/authors', bearer('cat_guess-again'))).status).toBe(429)
  })

  it('counts requests without a token per client address', async () => {
    const app = await open(2)
    app.app.listen({ port: 0, hostname: '127.0.0.1' })
    const port = app.app.server?.port as number
    expect((await getFrom('127.0.0.2', port, '/api/v1/authors')).status).toBe(200)
    expect((await getFrom('127.0.0.2', port, '/api/v1/authors')).status).toBe(200)
    expect((await getFrom('127.0.0.2', port, '/api/v1/authors')).status).toBe(429)
    const other = await getFrom('127.0.0.3', port, '/api/v1/authors')
    expect(other).toEqual({ status: 200, ratelimit: '"default";r=1;t=60' })
  })
})

describe('RATE_LIMIT counted by the supervisor of workers (SharedRateLimit)', () => {
  it('answers 503 with Retry-After, never a 500, once the channel to the supervisor has closed', async () => {
    const shared = new SharedRateLimit(3, () => {})
    shared.close()
    const opened = await openTestApp({ app: { rateLimit: shared } })
    app = opened
    const refused = await changesNothing(opened, () =>
      opened.post('/api/v1/authors', { data: { type: 'author', attributes: { name: 'Uncounted' } } }),
    )
    expectOneError(refused, 503)
    expect(refused.headers.get('retry-after')).toBe('1')
  })
})

describe('RateLimiter', () => {
  it('tracks at most maxKeys keys, dropping expired windows first and then the oldest', () => {
    const clock = new ManualClock()
    const limiter = new RateLimiter({ perMinute: 5, maxKeys: 3, clock: clock.now })
    limiter.hit('a', clock.now())
    clock.ms += 10_000
    limiter.hit('b', clock.now())
    limiter.hit('b', clock.now())
    limiter.hit('c', clock.now())
    expect(limiter.size).toBe(3)
    // Full: the oldest window (a) goes, the others keep their counts.
    expect(limiter.hit('d', clock.now()).count).toBe(1)
    expect(limiter.size).toBe(3)
    expect(limiter.hit('b', clock.now()).count).toBe(3)
    expect(limiter.hit('a', clock.now()).count).toBe(1)
    // A minute on, every window has ended: a new key finds them all dropped.
    clock.ms += WINDOW_MS
    limiter.hit('e', clock.now())
    expect(limiter.size).toBe(1)
  })

  it('gives the first request of a window t=60 whatever fraction of a millisecond the clock reads', () => {
    // 5537.1 + 60000 - 5537.1 is a hair over 60000 in floating point: a reset counted that way says 61.
    for (const start of [0, 1_000, 5_537.1, 123_456.789]) {
      const limiter = new RateLimiter({ perMinute: 5, clock: () => start })
      expect(secondsLeft(limiter.hit('a', start), start)).toBe(60)
    }
  })
})

describe('the client an address stands for (clientOf)', () => {
  it('is an IPv4 address itself, mapped into IPv6 or not', () => {
    expect(clientOf('203.0.113.7')).toBe('203.0.113.7')
    expect(clientOf('::ffff:203.0.113.7')).toBe('203.0.113.7')
  })

  it('is the /64 prefix of an IPv6 address, however it is written', () => {
    expect(clientOf('2001:db8:1:2:aaaa:bbbb:cccc:dddd')).toBe('2001:db8:1:2::/64')
    expect(clientOf('2001:0db8:0001:0002::1')).toBe('2001:db8:1:2::/64')
    expect(clientOf('2001:db8::1')).toBe('2001:db8:0:0::/64')
    expect(clientOf('fe80::1%eth0')).toBe('fe80:0:0:0::/64')
    expect(clientOf('::1')).toBe('0:0:0:0::/64')
  })

  it('gives every address of one /64 the same key, so rotating through it does not escape the limit', () => {
    const keys = new Set(Array.from({ length: 50 }, (_, i) => clientOf(`2001:db8:5:6::${(i + 1).toString(16)}`)))
    expect([...keys]).toEqual(['2001:db8:5:6::/64'])
  })
})
