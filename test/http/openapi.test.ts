import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { DOCS_PATH, SPEC_PATH } from '../../src/http/openapi'
import { openTestApp, type TestApp } from '../support/harness'

type Operation = {
  operationId: string
  requestBody?: { content: Record<string, { schema: unknown }> }
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>
  parameters?: { name: string; in: string }[]
}

describe(`GET ${SPEC_PATH}`, () => {
  let t: TestApp
  // biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document is read as plain JSON
  let spec: any
  beforeAll(async () => {
    t = openTestApp()
    const answer = await t.get(SPEC_PATH, { accept: 'application/json' })
    expect(answer.status).toBe(200)
    spec = answer.json
  })
  afterAll(() => t.close())

  it('is an OpenAPI 3.1 document', () => {
    expect(spec.openapi).toStartWith('3.1.')
    expect(spec.info.title).toBe('Library catalogue')
  })

  it('describes every route the app serves and nothing else', () => {
    const served = t.app.routes
      .filter(
        (route) => route.path !== DOCS_PATH && route.path !== SPEC_PATH && !route.path.startsWith(`${DOCS_PATH}/`),
      )
      .map((route) => `${route.method.toLowerCase()} ${route.path.replace(/:(\w+)/g, '{$1}')}`)
      .sort()
    const documented = Object.entries(spec.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method} ${path}`))
      .sort()
    expect(documented).toEqual(served)
    // 15 operations (PUT and PATCH both serve update), 16 relationship and related-resource
    // endpoints, and the atomic operations endpoint.
    expect(served).toHaveLength(35)
  })

  it('gives every operation a unique id and a JSON:API error response for each failure it can have', () => {
    const ids = new Set<string>()
    for (const [path, operations] of Object.entries(spec.paths as Record<string, Record<string, Operation>>)) {
      for (const [method, operation] of Object.entries(operations)) {
        expect(ids.has(operation.operationId)).toBe(false)
        ids.add(operation.operationId)
        expect(operation.responses['406']).toBeDefined()
        if (path.endsWith('{id}')) expect(operation.responses['404']).toBeDefined()
        if (method === 'post' || method === 'put' || method === 'patch') {
          const media = path.endsWith('/operations')
            ? 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'
            : 'application/vnd.api+json'
          expect(Object.keys(operation.requestBody?.content ?? {})).toContain(media)
          for (const status of ['400', '409', '413', '415', '422']) {
            expect(Object.keys(operation.responses[status]?.content ?? {})).toEqual(['application/vnd.api+json'])
          }
        }
      }
    }
  })

  it('documents every query parameter of the book list and of a single book', () => {
    const fields = ['query:fields[authors]', 'query:fields[book_collections]', 'query:fields[books]']
    const list = spec.paths['/api/v1/books'].get as Operation
    expect(list.parameters?.map((p) => `${p.in}:${p.name}`)).toEqual([
      'query:include',
      ...fields,
      'query:sort',
      'query:filter[name]',
      'query:filter[search]',
      'query:filter[author]',
      'query:filter[book_collection]',
      'query:author_id',
      'query:page[number]',
      'query:page[size]',
    ])
    const show = spec.paths['/api/v1/books/{id}'].get as Operation
    expect(show.parameters?.map((p) => `${p.in}:${p.name}`)).toEqual(['path:id', 'query:include', ...fields])
  })

  it('describes the book body with the attribute rules the service enforces', () => {
    const create = spec.paths['/api/v1/books'].post as Operation
    // biome-ignore lint/suspicious/noExplicitAny: walking a JSON Schema
    const schema: any = create.requestBody?.content['application/vnd.api+json']?.schema
    const attributes = schema.properties.data.properties.attributes
    expect(attributes.required).toEqual(['name'])
    expect(attributes.properties.name).toMatchObject({ type: 'string', maxLength: 1000 })
    expect(Object.keys(attributes.properties)).toEqual(['name', 'author_id', 'book_collection_id'])
    expect(Object.keys(schema.properties.data.properties.relationships.properties)).toEqual([
      'author',
      'book_collection',
    ])
  })
})

describe(`GET ${DOCS_PATH}`, () => {
  let t: TestApp
  beforeAll(() => {
    t = openTestApp()
  })
  afterAll(() => t.close())

  it('serves an HTML page that loads the OpenAPI document', async () => {
    const answer = await t.get(DOCS_PATH, { accept: 'text/html' })
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toContain('text/html')
    // The page names the document relative to itself: /docs -> api/v1/openapi.json.
    expect(answer.text).toContain(SPEC_PATH.slice(1))
  })
})
