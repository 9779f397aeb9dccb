import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { DOCS_CSP, FAVICON_PATH, SCALAR_PATH } from '../../src/http/openapi/docs-page'
import { DOCS_PATH, SPEC_PATH } from '../../src/http/openapi/openapi'
import { openTestApp, type TestApp } from '../support/harness'

/** The viewer's settings, as the page hands them to it. */
function configurationOf(html: string): Record<string, unknown> {
  const attribute = /<script id="api-reference" data-configuration="([^"]*)"><\/script>/.exec(html)?.[1]
  if (attribute === undefined) throw new Error(`no configuration in ${html}`)
  return JSON.parse(
    attribute.replaceAll('&quot;', '"').replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&'),
  )
}

describe(`GET ${DOCS_PATH}`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await openTestApp()
  })
  afterAll(() => t.close())

  it('serves the same page at /docs and /docs/, which points the viewer at the document by its absolute path', async () => {
    const bare = await t.get(DOCS_PATH, { accept: 'text/html' })
    const slashed = await t.get(`${DOCS_PATH}/`, { accept: 'text/html' })
    for (const answer of [bare, slashed]) {
      expect(answer.status).toBe(200)
      expect(answer.headers.get('content-type')).toBe('text/html; charset=utf-8')
      expect(answer.text).toBe(bare.text)
    }
    expect(configurationOf(bare.text)).toMatchObject({ url: SPEC_PATH })
  })

  it('asks the viewer for nothing from other sites: no fonts, telemetry, hosted client, agent or MCP link', async () => {
    const configuration = configurationOf((await t.get(DOCS_PATH)).text)
    expect(configuration).toMatchObject({
      withDefaultFonts: false,
      telemetry: false,
      hideClientButton: true,
      agent: { disabled: true },
      mcp: { disabled: true },
    })
  })

  it('loads one script, the viewer, from this service, under a Content-Security-Policy that allows no other origin', async () => {
    const answer = await t.get(DOCS_PATH)
    const scripts = [...answer.text.matchAll(/<script[^>]*\bsrc="([^"]*)"/g)].map((m) => m[1])
    expect(scripts).toEqual([
      expect.stringMatching(new RegExp(`^${RegExp.escape(SCALAR_PATH)}\\?v=\\d+\\.\\d+\\.\\d+$`)),
    ])
    expect(answer.headers.get('content-security-policy')).toBe(DOCS_CSP)
    const directives = new Map(DOCS_CSP.split('; ').map((d) => [d.split(' ')[0], d.split(' ').slice(1)]))
    expect(directives.get('default-src')).toEqual(["'none'"])
    expect(directives.get('script-src')).toEqual(["'self'"])
    expect(directives.get('connect-src')).toEqual(["'self'"])
    expect(directives.get('frame-ancestors')).toEqual(["'none'"])
    // Inline scripts are not allowed: the page has none, its settings are a data attribute.
    expect(answer.text).not.toMatch(/<script(?![^>]*\b(src|data-configuration)=)[^>]*>/)
  })

  it('links an icon of its own, an SVG the service serves, so that browsers ask for no /favicon.ico (a 404)', async () => {
    const page = (await t.get(DOCS_PATH)).text
    const icons = [...page.matchAll(/<link rel="icon" type="image\/svg\+xml" href="([^"]*)">/g)].map((m) => m[1])
    expect(icons).toEqual([FAVICON_PATH])
    const icon = await t.send('GET', FAVICON_PATH)
    expect(icon.status).toBe(200)
    expect(icon.headers.get('content-type')).toBe('image/svg+xml')
    expect(icon.text).toStartWith('<svg xmlns="http://www.w3.org/2000/svg"')
    // Drawn, not scripted: opened on its own, it may run and load nothing.
    expect(icon.text).not.toMatch(/<script|href=|url\(/)
    expect(icon.headers.get('content-security-policy')).toStartWith("default-src 'none'")
  })
})

describe(`GET ${SCALAR_PATH}`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await openTestApp()
  })
  afterAll(() => t.close())

  it('serves the viewer as JavaScript that browsers may keep for a year', async () => {
    const answer = await t.send('GET', `${SCALAR_PATH}?v=1`)
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    expect(answer.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    expect(answer.headers.get('content-encoding')).toBeNull()
    expect(answer.text.length).toBeGreaterThan(1_000_000)
    expect(answer.text).toContain('createApiReference')
    // Told first that the CSP allows no eval, so that nothing in it tries.
    expect(answer.text).toStartWith('globalThis.__zod_globalConfig = { jitless: true };')
  })

  it('sends it gzipped to a client that takes gzip, the same script once unpacked', async () => {
    const plain = await t.send('GET', SCALAR_PATH)
    const response = await t.app.handle(
      new Request(`http://localhost${SCALAR_PATH}`, { headers: { 'accept-encoding': 'gzip, deflate, br' } }),
    )
    expect(response.headers.get('content-encoding')).toBe('gzip')
    expect(response.headers.get('vary')).toBe('accept-encoding')
    const packed = new Uint8Array(await response.arrayBuffer())
    expect(packed.length).toBeLessThan(plain.text.length / 2)
    expect(new TextDecoder().decode(Bun.gunzipSync(packed))).toBe(plain.text)
  })

  it.each([
    ['gzip;q=0, identity', null],
    ['br;q=1, GZIP; q=0', null],
    ['*', 'gzip'],
    ['x-gzip;q=0.5', 'gzip'],
  ])('answers Accept-Encoding %j with Content-Encoding %p', async (acceptEncoding, coding) => {
    const response = await t.app.handle(
      new Request(`http://localhost${SCALAR_PATH}`, { headers: { 'accept-encoding': acceptEncoding } }),
    )
    expect(response.headers.get('content-encoding')).toBe(coding)
    await response.arrayBuffer()
  })

  it('compresses it ahead when asked, as the service does once it listens: the first requests find it ready', async () => {
    const fresh = await openTestApp()
    try {
      const viewer = fresh.app.decorator.viewerScript
      viewer.prepare()
      expect(viewer.compressions).toBe(1)
      const burst = Array.from({ length: 5 }, () =>
        fresh.app.handle(new Request(`http://localhost${SCALAR_PATH}`, { headers: { 'accept-encoding': 'gzip, br' } })),
      )
      for (const response of await Promise.all(burst)) {
        expect(response.headers.get('content-encoding')).toBe('gzip')
        await response.arrayBuffer()
      }
      expect(viewer.compressions).toBe(1)
    } finally {
      await fresh.close()
    }
  })

  it('compresses it once, however many ask at once on a fresh service, and /health answers meanwhile', async () => {
    const fresh = await openTestApp()
    try {
      const gzipped = () =>
        fresh.app.handle(new Request(`http://localhost${SCALAR_PATH}`, { headers: { 'accept-encoding': 'gzip' } }))
      const burst = Array.from({ length: 20 }, gzipped)
      expect((await fresh.get('/health')).status).toBe(200)
      const bodies = await Promise.all(burst.map(async (r) => Buffer.from(await (await r).arrayBuffer())))
      expect(fresh.app.decorator.viewerScript.compressions).toBe(1)
      for (const body of bodies) expect(body.equals(bodies[0] as Buffer)).toBe(true)
      // And every later request is answered from that one.
      await (await gzipped()).arrayBuffer()
      expect(fresh.app.decorator.viewerScript.compressions).toBe(1)
    } finally {
      await fresh.close()
    }
  })
})
