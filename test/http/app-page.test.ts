import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { parseTokenFile, TokenSet } from '../../src/http/access/api-tokens'
import { APP_CSP } from '../../src/http/app-page'
import { openTestApp, type TestApp } from '../support/harness'

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'

describe('GET /app/', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await openTestApp()
  })
  afterAll(() => t.close())

  it('serves the app page, whose scripts and styles are files of its own, under a CSP that allows no other origin', async () => {
    const answer = await t.send('GET', '/app/', { headers: { accept: BROWSER_ACCEPT } })
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toStartWith('text/html')
    expect(answer.headers.get('content-security-policy')).toBe(APP_CSP)
    expect(answer.headers.get('cache-control')).toBe('no-cache')
    // Its files, relative to its base (/app/): the icon, the styles and the script.
    expect(answer.text).toContain('<base href="/app/">')
    const files = [...answer.text.matchAll(/(?:src|href)="(\.\/[^"]+)"/g)].map((m) => m[1] ?? '')
    expect(files.map((f) => f.split('.').at(-1)).sort()).toEqual(['css', 'js', 'svg'])
    for (const file of files) {
      const asset = await t.send('GET', `/app/${file.slice(2)}`)
      expect(asset.status).toBe(200)
      expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    }
    // Nothing from elsewhere, and no inline script: the CSP would refuse both.
    expect(answer.text).not.toMatch(/(?:src|href)="(?:https?:)?\/\//)
    expect(answer.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/)
  })

  it('answers any other path under /app/ with the page (a view the app draws from its URL), and /app with a redirect to /app/', async () => {
    const page = await t.send('GET', '/app/')
    const deep = await t.send('GET', '/app/books/12?q=tolkien')
    expect(deep.status).toBe(200)
    expect(deep.text).toBe(page.text)
    const bare = await t.send('GET', '/app')
    expect(bare.status).toBe(308)
    expect(bare.headers.get('location')).toBe('/app/')
  })

  it('weighs at most 150 KB gzipped in all: its page, scripts, styles and icon', async () => {
    const gzipped = async (path: string) =>
      (await t.app.handle(new Request(`http://localhost${path}`, { headers: { 'accept-encoding': 'gzip' } })))
        .arrayBuffer()
        .then((bytes) => bytes.byteLength)
    const page = (await t.send('GET', '/app/')).text
    const files = [...page.matchAll(/(?:src|href)="\.\/([^"]+)"/g)].map((m) => `/app/${m[1]}`)
    let total = await gzipped('/app/')
    for (const file of files) total += await gzipped(file)
    expect(total).toBeLessThanOrEqual(150 * 1024)
  })

  it('gzips for a browser that takes it, and answers 304 to its tag', async () => {
    const zipped = await t.app.handle(new Request('http://localhost/app/', { headers: { 'accept-encoding': 'gzip' } }))
    expect(zipped.headers.get('content-encoding')).toBe('gzip')
    const etag = zipped.headers.get('etag') ?? ''
    const again = await t.send('GET', '/app/', { headers: { 'if-none-match': etag } })
    expect(again.status).toBe(304)
  })
})

describe('GET /', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await openTestApp()
  })
  afterAll(() => t.close())

  it('sends a browser to the app with 303, but gives a JSON:API client the index, which links the app', async () => {
    const browser = await t.send('GET', '/', { headers: { accept: BROWSER_ACCEPT } })
    expect(browser.status).toBe(303)
    expect(browser.headers.get('location')).toBe('/app/')
    for (const accept of ['application/vnd.api+json', '*/*', 'application/vnd.api+json, text/html;q=0.5']) {
      const client = await t.send('GET', '/', { headers: { accept } })
      expect(client.status).toBe(200)
      expect(client.json.links.self).toBe('/')
    }
  })
})

describe('the app with API tokens', () => {
  it('is served without a token: it asks its user for one', async () => {
    const reader = 'cat_reader-token-0123456789abcdefghijklmnopqrstuv'
    const hash = new Bun.CryptoHasher('sha256').update(reader).digest('hex')
    const guarded = await openTestApp({ app: { tokens: new TokenSet(parseTokenFile(`reader read ${hash}\n`)) } })
    try {
      expect((await guarded.send('GET', '/app/')).status).toBe(200)
      expect((await guarded.send('GET', '/app/books/1')).status).toBe(200)
      expect((await guarded.send('GET', '/api/v1/books')).status).toBe(401)
    } finally {
      await guarded.close()
    }
  })
})
