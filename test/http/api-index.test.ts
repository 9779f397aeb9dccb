import { afterEach, describe, expect, it } from 'bun:test'
import { parseTokenFile, TokenSet } from '../../src/http/access/api-tokens'
import { DOCS_PATH, SPEC_PATH } from '../../src/http/openapi/openapi'
import { RESPONSE_CONTENT_TYPE } from '../support/expectations'
import { JSON_API, openTestApp, type TestApp } from '../support/harness'

const READER = 'cat_reader-token-0123456789abcdefghijklmnopqrstuv'
const sha256 = (token: string) => new Bun.CryptoHasher('sha256').update(token).digest('hex')

let t: TestApp | undefined

async function open(tokens?: TokenSet): Promise<TestApp> {
  t = await openTestApp({ app: tokens ? { tokens } : {} })
  return t
}

afterEach(async () => {
  await t?.close()
  t = undefined
})

const expectedLinks = {
  self: '/',
  authors: '/api/v1/authors',
  book_collections: '/api/v1/book_collections',
  books: '/api/v1/books',
  describedby: SPEC_PATH,
  docs: DOCS_PATH,
}

describe('GET /', () => {
  it('answers a JSON:API document linking the three collections, the OpenAPI document and the docs page', async () => {
    const app = await open()
    const answer = await app.get('/')
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toBe(RESPONSE_CONTENT_TYPE)
    expect(answer.json).toEqual({
      meta: { name: 'Library catalogue', version: expect.any(String) },
      links: expectedLinks,
    })
  })

  it('links only to what answers 200: each collection, the OpenAPI document and the page', async () => {
    const app = await open()
    const { links } = (await app.get('/')).json as { links: Record<string, string> }
    for (const [name, link] of Object.entries(links)) {
      const accept = name === 'docs' ? 'text/html' : name === 'describedby' ? 'application/json' : JSON_API
      expect({ name, status: (await app.get(link, { accept })).status }).toEqual({ name, status: 200 })
    }
  })

  it('sends a browser to the app (303 to /app/), answers curl (Accept: */*) with the index, and 304 to its own ETag', async () => {
    const app = await open()
    const browser = await app.send('GET', '/', { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } })
    expect(browser.status).toBe(303)
    expect(browser.headers.get('location')).toBe('/app/')
    const curl = await app.send('GET', '/', { headers: { accept: '*/*' } })
    expect(curl.status).toBe(200)
    const etag = curl.headers.get('etag') as string
    expect(etag).toBeTruthy()
    expect((await app.get('/', { 'if-none-match': etag })).status).toBe(304)
  })

  it('answers HEAD with the same headers and no body', async () => {
    const app = await open()
    const get = await app.get('/')
    const head = await app.send('HEAD', '/', { headers: { accept: JSON_API } })
    expect(head.status).toBe(200)
    expect(head.text).toBe('')
    expect(head.headers.get('content-type')).toBe(RESPONSE_CONTENT_TYPE)
    expect(head.headers.get('etag')).toBe(get.headers.get('etag'))
  })

  it('is public with API tokens set, as the OpenAPI document is: no token needed, a token sent still checked', async () => {
    const app = await open(new TokenSet(parseTokenFile(`reader read ${sha256(READER)}\n`)))
    // The collections it links to need a token.
    expect((await app.get('/api/v1/authors')).status).toBe(401)
    const index = await app.get('/')
    expect(index.status).toBe(200)
    expect(index.json.links).toEqual(expectedLinks)
    expect((await app.get('/', { authorization: `Bearer ${READER}` })).status).toBe(200)
    expect((await app.get('/', { authorization: `Bearer ${READER}x` })).status).toBe(401)
  })
})

describe('other methods on /, /docs and the OpenAPI document', () => {
  it('answers 405 with Allow naming GET, as every path the app serves does, never 404', async () => {
    const app = await open()
    for (const [method, path] of [
      ['POST', '/'],
      ['DELETE', DOCS_PATH],
      ['PUT', SPEC_PATH],
    ] as const) {
      const answer = await app.send(method, path, { headers: { accept: JSON_API } })
      expect({ method, path, status: answer.status }).toEqual({ method, path, status: 405 })
      expect(answer.headers.get('allow')).toContain('GET')
      expect(answer.json.errors[0].status).toBe('405')
    }
  })
})
