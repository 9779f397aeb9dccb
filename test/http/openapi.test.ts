import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { Value } from '@sinclair/typebox/value'
import { INDEX_PATH } from '../../src/http/api-index'
import { APP_PATH } from '../../src/http/app-page'
import { HEALTH_PATH, READY_PATH } from '../../src/http/observability/health'
import { METRICS_PATH } from '../../src/http/observability/metrics'
import { DOCS_PATH, SPEC_PATH } from '../../src/http/openapi/openapi'
import { openTestApp, type TestApp } from '../support/harness'

type Operation = {
  operationId: string
  summary: string
  security?: unknown
  requestBody?: { content: Record<string, { schema: unknown }> }
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>
  // biome-ignore lint/suspicious/noExplicitAny: parameter schemas are read as plain JSON
  parameters?: { name: string; in: string; schema: any; style?: string; explode?: boolean }[]
}

describe(`GET ${SPEC_PATH}`, () => {
  let t: TestApp
  // biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document is read as plain JSON
  let spec: any
  beforeAll(async () => {
    t = await openTestApp()
    const answer = await t.get(SPEC_PATH, { accept: 'application/json' })
    expect(answer.status).toBe(200)
    spec = answer.json
  })
  afterAll(() => t.close())

  it('is an OpenAPI 3.1 document', () => {
    expect(spec.openapi).toStartWith('3.1.')
    expect(spec.info.title).toBe('Library catalogue')
  })

  it('describes every route the app serves but the two that always answer 403, and nothing else', () => {
    const key = (method: string, path: string) => `${method.toLowerCase()} ${path.replace(/:(\w+)/g, '{$1}')}`
    // The probes and the metrics are for operators, not part of the API (docs/observability.md); the
    // index (GET /) is outside the versioned API (docs/api-docs.md); so are the docs page and the app.
    const operational = [HEALTH_PATH, READY_PATH, METRICS_PATH, INDEX_PATH]
    const pages = [DOCS_PATH, APP_PATH]
    const served = t.app.routes
      .filter(
        (route) =>
          route.path !== SPEC_PATH &&
          !pages.some((page) => route.path === page || route.path.startsWith(`${page}/`)) &&
          !operational.includes(route.path),
      )
      .map((r) => key(r.method, r.path))
      .sort()
    const documented = Object.entries(spec.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method} ${path}`))
      .sort()
    // Taking books from their author is always refused: no client can use those two operations.
    const refused = [
      'delete /api/v1/authors/{id}/relationships/books',
      'patch /api/v1/authors/{id}/relationships/books',
    ]
    expect(documented).toEqual(served.filter((r) => !refused.includes(r)))
    // 15 operations (PUT and PATCH both serve update), 16 relationship and related-resource
    // endpoints, the atomic operations endpoint and the change feed.
    expect(served).toHaveLength(36)
    expect(served).toEqual(expect.arrayContaining(refused))
  })

  it('gives every operation a 2xx answer, its security requirement and an English summary', () => {
    for (const operations of Object.values(spec.paths as Record<string, Record<string, Operation>>)) {
      for (const operation of Object.values(operations)) {
        expect(Object.keys(operation.responses).some((status) => status.startsWith('2'))).toBe(true)
        // The service without API tokens is open: the empty requirement says so.
        expect(operation.security).toEqual([{}])
        expect(operation.summary).not.toMatch(/\ba [aeiou]/i)
      }
    }
    const summaries = (path: string) =>
      Object.values(spec.paths[path] as Record<string, Operation>).map((o) => o.summary)
    expect(summaries('/api/v1/authors')).toEqual(['List authors', 'Create an author'])
    expect(summaries('/api/v1/book_collections/{id}')).toContain('Get a book collection')
    expect(summaries('/api/v1/authors/{id}/relationships/books')).toEqual([
      'The books linkage of an author',
      'Add books to an author',
    ])
  })

  it('names its license and a server relative to wherever it is served from', () => {
    expect(spec.info.license).toEqual({ name: 'MIT', identifier: 'MIT' })
    expect(spec.servers).toEqual([{ url: '/', description: expect.any(String) }])
  })

  it('gives every operation a unique id and a JSON:API error response for each failure it can have', () => {
    const ids = new Set<string>()
    for (const [path, operations] of Object.entries(spec.paths as Record<string, Record<string, Operation>>)) {
      for (const [method, operation] of Object.entries(operations)) {
        expect(ids.has(operation.operationId)).toBe(false)
        ids.add(operation.operationId)
        expect(operation.responses['406']).toBeDefined()
        if (path.endsWith('{id}')) expect(operation.responses['404']).toBeDefined()
        // A write that can succeed documents every way its body can fail; one that is always refused (403) need not.
        const succeeds = Object.keys(operation.responses).some((status) => status.startsWith('2'))
        if (succeeds && (method === 'post' || method === 'put' || method === 'patch')) {
          const media = path.endsWith('/operations')
            ? 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'
            : 'application/vnd.api+json'
          expect(Object.keys(operation.requestBody?.content ?? {})).toContain(media)
          for (const status of ['400', '409', '413', '415', '422']) {
            expect(Object.keys(operation.responses[status]?.content ?? {})).toEqual(['application/vnd.api+json'])
          }
        }
        // Every write that compares If-Match, the atomic operations included, documents its 412 and 428.
        if (succeeds && method !== 'get' && (path.includes('{id}') || path.endsWith('/operations'))) {
          for (const status of ['412', '428']) expect(operation.responses[status]).toBeDefined()
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
      'query:page[offset]',
      'query:page[limit]',
      'query:page[after]',
      'query:page[before]',
    ])
    const show = spec.paths['/api/v1/books/{id}'].get as Operation
    expect(show.parameters?.map((p) => `${p.in}:${p.name}`)).toEqual(['path:id', 'query:include', ...fields])
  })

  it('describes the book body as strictly as the service reads it', () => {
    const create = spec.paths['/api/v1/books'].post as Operation
    // biome-ignore lint/suspicious/noExplicitAny: walking a JSON Schema
    const schema: any = create.requestBody?.content['application/vnd.api+json']?.schema
    expect(schema.additionalProperties).toBe(false)
    const data = schema.properties.data
    expect(data.additionalProperties).toBe(false)
    expect(Object.keys(data.properties)).toEqual(['type', 'attributes', 'relationships'])
    const attributes = data.properties.attributes
    expect(attributes.additionalProperties).toBe(false)
    expect(attributes.required).toEqual(['name'])
    expect(attributes.properties.name).toMatchObject({ type: 'string', minLength: 1, maxLength: 1000 })
    expect(Object.keys(attributes.properties)).toEqual(['name', 'author_id', 'book_collection_id'])
    expect(data.properties.relationships.additionalProperties).toBe(false)
    expect(Object.keys(data.properties.relationships.properties)).toEqual(['author', 'book_collection'])
    // The author is required: as relationships.author or as attributes.author_id.
    expect(data.allOf).toEqual([
      {
        anyOf: [
          expect.objectContaining({ required: ['attributes'] }),
          expect.objectContaining({ required: ['relationships'] }),
        ],
      },
    ])
    const update = (spec.paths['/api/v1/books/{id}'].patch as Operation).requestBody?.content[
      'application/vnd.api+json'
    ]
    // biome-ignore lint/suspicious/noExplicitAny: walking a JSON Schema
    const updated: any = update?.schema
    expect(updated.properties.data.allOf).toBeUndefined()
    expect(updated.properties.data.properties.attributes.required).toBeUndefined()
  })

  it('enumerates what include, fields and sort take, and bounds search, filters and pages', () => {
    const parameter = (name: string) =>
      (spec.paths['/api/v1/authors'].get as Operation).parameters?.find((p) => p.name === name)
    expect(parameter('include')).toMatchObject({ style: 'form', explode: false })
    expect(parameter('include')?.schema).toEqual({
      type: 'array',
      maxItems: 10,
      items: {
        type: 'string',
        enum: ['books', 'books.author', 'books.author.books', 'books.book_collection', 'books.book_collection.books'],
      },
    })
    expect(parameter('fields[books]')?.schema.items.enum).toEqual(['name', 'author', 'book_collection'])
    expect(parameter('sort')?.schema.enum).toContain('-name,id')
    expect(parameter('sort')?.schema.enum).not.toContain('name,-name')
    const search = new RegExp(parameter('filter[search]')?.schema.pattern, 'u')
    expect(['le guin', ' Le-Guin! ', 'é'].filter((text) => !search.test(text))).toEqual([])
    expect(['', ' ', '-!?', 'a b c d e f g h i j k'].filter((text) => search.test(text))).toEqual([])
    expect(parameter('page[size]')?.schema).toEqual({ type: 'integer', minimum: 1, maximum: 100 })
    const book = (name: string) =>
      (spec.paths['/api/v1/books'].get as Operation).parameters?.find((p) => p.name === name)
    expect(book('filter[book_collection]')?.schema.items.anyOf).toContainEqual({ type: 'string', enum: ['null'] })
    expect(book('filter[author]')?.schema).toMatchObject({ maxItems: 100, items: { type: 'integer', minimum: 1 } })
  })
})

describe('the documented response schemas', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await openTestApp()
  })
  afterAll(() => t.close())

  it('accept what the service really answers, fetching parameters included', async () => {
    const author = await t.create('authors', { name: 'Schema' })
    const collection = await t.create('book_collections', { name: 'Shelf' })
    const book = await t.create('books', { name: 'Checked', author_id: author, book_collection_id: collection })
    await t.create('books', { name: 'Loose', author_id: author })
    // The schemas the OpenAPI document is written from, as TypeBox objects, from each route's detail.
    const schemaOf = (path: string, method: string, status: string) => {
      const elysiaPath = path.replace(/\{(\w+)\}/g, ':$1')
      const route = t.app.routes.find((r) => r.method === method.toUpperCase() && r.path === elysiaPath)
      // biome-ignore lint/suspicious/noExplicitAny: reading the OpenAPI detail of a route
      const detail = (route?.hooks as any)?.detail
      return detail.responses[status].content['application/vnd.api+json'].schema
    }
    const cases: [string, string, string][] = [
      ['/api/v1/books', '/api/v1/books', '200'],
      ['/api/v1/books?include=author,book_collection&fields[authors]=name', '/api/v1/books', '200'],
      ['/api/v1/books?page[size]=1&sort=-name', '/api/v1/books', '200'],
      ['/api/v1/books?page[size]=1&page[after]=', '/api/v1/books', '200'],
      ['/api/v1/books?page[offset]=1&page[limit]=1&include=author', '/api/v1/books', '200'],
      [`/api/v1/books/${book}`, '/api/v1/books/{id}', '200'],
      [`/api/v1/books/${book}?fields[books]=author`, '/api/v1/books/{id}', '200'],
      [`/api/v1/authors/${author}?include=books.book_collection`, '/api/v1/authors/{id}', '200'],
      [`/api/v1/books/${book}/author`, '/api/v1/books/{id}/author', '200'],
      [`/api/v1/authors/${author}/books?include=author`, '/api/v1/authors/{id}/books', '200'],
      [`/api/v1/books/${book}/relationships/author`, '/api/v1/books/{id}/relationships/author', '200'],
      [`/api/v1/authors/${author}/relationships/books`, '/api/v1/authors/{id}/relationships/books', '200'],
    ]
    for (const [request, path, status] of cases) {
      const answer = await t.get(request)
      expect(answer.status).toBe(Number(status))
      const valid = Value.Check(schemaOf(path, 'get', status), answer.json)
      if (!valid) throw new Error(`${request} does not fit its documented schema: ${answer.text}`)
    }
    const created = await t.post('/api/v1/books', {
      data: { type: 'books', attributes: { name: 'New', author_id: author } },
    })
    expect(Value.Check(schemaOf('/api/v1/books', 'post', '201'), created.json)).toBe(true)
    const failed = await t.post('/api/v1/books', { data: { type: 'books', attributes: { name: '' } } })
    expect(Value.Check(schemaOf('/api/v1/books', 'post', '422'), failed.json)).toBe(true)
  })
})
