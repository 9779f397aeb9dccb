import { describe, expect, it } from 'bun:test'
import { Elysia } from 'elysia'
import { SPEC_CONTENT_TYPE, SPEC_PATH } from '../../src/http/openapi/openapi'
import { apiDocument, type DocumentedAccess } from '../../src/http/openapi/openapi-document'

/** The document of a small app: a GET and a POST, and a GET whose detail names its own security. */
async function documentOf(access?: DocumentedAccess) {
  const ok = { 200: { description: 'Done' } }
  const app = new Elysia()
    .use(apiDocument({ version: '9.9.9', access }))
    .get('/things', () => 'all', { detail: { responses: ok } })
    .post('/things', () => 'made', { detail: { responses: ok } })
    .get('/open', () => 'open', { detail: { responses: ok, security: [{}] } })
    .get('/things/:id', () => 'one', {
      detail: {
        responses: ok,
        parameters: [
          { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[1-9][0-9]*$' } },
          { name: 'q', in: 'query', required: false, schema: { type: 'string' } },
        ],
      },
    })
  const response = await app.handle(new Request(`http://localhost${SPEC_PATH}`))
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toBe(SPEC_CONTENT_TYPE)
  // biome-ignore lint/suspicious/noExplicitAny: the document is read as plain JSON
  const document: any = await response.json()
  return document
}

describe(`GET ${SPEC_PATH}: security`, () => {
  it('declares no scheme and an empty requirement on every operation when the service takes no tokens', async () => {
    const document = await documentOf()
    expect(document.components.securitySchemes).toBeUndefined()
    expect(document.paths['/things'].get.security).toEqual([{}])
    expect(document.paths['/things'].post.security).toEqual([{}])
  })

  it('declares the bearer token scheme, a token for reads and the write scope for writes, with tokens', async () => {
    const document = await documentOf({ tokens: true, publicRead: false })
    expect(document.components.securitySchemes).toEqual({
      apiToken: { type: 'http', scheme: 'bearer', description: expect.any(String) },
    })
    expect(document.paths['/things'].get.security).toEqual([{ apiToken: [] }])
    expect(document.paths['/things'].post.security).toEqual([{ apiToken: ['write'] }])
    // An operation that states its own requirement keeps it.
    expect(document.paths['/open'].get.security).toEqual([{}])
  })

  it('lets reads go without a token when reads are public', async () => {
    const document = await documentOf({ tokens: true, publicRead: true })
    expect(document.paths['/things'].get.security).toEqual([{}, { apiToken: [] }])
    expect(document.paths['/things'].post.security).toEqual([{ apiToken: ['write'] }])
  })
})

describe(`GET ${SPEC_PATH}: parameters`, () => {
  it("lays the parameters a route's detail declares over those derived from its path", async () => {
    const document = await documentOf()
    expect(document.paths['/things/{id}'].get.parameters).toEqual([
      { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[1-9][0-9]*$' } },
      { name: 'q', in: 'query', required: false, schema: { type: 'string' } },
    ])
  })

  it('states the version it was given, the license and a relative server', async () => {
    const document = await documentOf()
    expect(document.openapi).toBe('3.1.1')
    expect(document.info).toMatchObject({ version: '9.9.9', license: { name: 'MIT', identifier: 'MIT' } })
    expect(document.servers).toEqual([{ url: '/', description: expect.any(String) }])
  })
})
