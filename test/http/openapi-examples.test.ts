import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { SPEC_PATH } from '../../src/http/openapi/openapi'
import { EXAMPLE_ID } from '../../src/jsonapi/request-schemas'
import { JSON_API, openTestApp, type TestApp } from '../support/harness'

/*
 * What a client generator or a fuzzer does with the OpenAPI document: build requests from its
 * examples, and expect the answers it documents. Every such request must succeed, on the data of
 * the README's example session (J.R.R. Tolkien, Middle-earth, The Hobbit), and find it.
 */

interface Parameter {
  readonly name: string
  readonly in: string
  readonly example?: unknown
  /** Where the example is only offered (a filter's): shown unticked on the docs page. */
  readonly examples?: Record<string, { readonly value: unknown; readonly 'x-disabled'?: boolean }>
  readonly explode?: boolean
}
interface Operation {
  readonly operationId: string
  readonly parameters?: readonly Parameter[]
  readonly requestBody?: { readonly content: Record<string, { readonly example?: unknown }> }
  readonly responses: Record<string, { readonly content?: Record<string, unknown> }>
}

let t: TestApp
let operations: { method: string; path: string; operation: Operation }[]

beforeAll(async () => {
  t = await openTestApp()
  const spec = (await t.get(SPEC_PATH, { accept: 'application/json' })).json
  operations = Object.entries(spec.paths as Record<string, Record<string, Operation>>).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
  )
  // The README's example session: the records the examples name, the first of each type.
  const author = await t.create('authors', { name: README_DATA.authors })
  const collection = await t.create('book_collections', { name: README_DATA.book_collections })
  const book = await t.create('books', { name: README_DATA.books, author_id: author, book_collection_id: collection })
  expect([author, collection, book]).toEqual([EXAMPLE_ID, EXAMPLE_ID, EXAMPLE_ID])
})
afterAll(() => t.close())

/** The name of the record of each type that the README's example session creates. */
const README_DATA: Record<string, string> = {
  authors: 'J.R.R. Tolkien',
  book_collections: 'Middle-earth',
  books: 'The Hobbit',
}

/** A parameter's example, given as `example` or offered in `examples`. */
function exampleOf(parameter: Parameter): unknown {
  return parameter.example ?? Object.values(parameter.examples ?? {})[0]?.value
}

/** The value as a query string carries it: lists comma-separated (`style: form, explode: false`). */
function serialize(value: unknown): string {
  return Array.isArray(value) ? value.map(String).join(',') : String(value)
}

/**
 * The URL of `operation` with its path parameters' examples (where the user gives the id, a DELETE's:
 * record 1), and the query parameters given.
 */
function urlOf(path: string, operation: Operation, query: readonly Parameter[]): string {
  let url = path
  for (const p of operation.parameters ?? []) {
    if (p.in === 'path') url = url.replace(`{${p.name}}`, encodeURIComponent(serialize(exampleOf(p) ?? EXAMPLE_ID)))
  }
  expect(url).not.toContain('{')
  const search = new URLSearchParams(query.map((p): [string, string] => [p.name, serialize(exampleOf(p))]))
  return search.size > 0 ? `${url}?${search}` : url
}

/** Whether a document's data holds the README's record of its type (or, for linkage, record 1). */
function found(document: { data: unknown }): boolean {
  const data = Array.isArray(document.data) ? document.data : [document.data]
  return data.some((resource: { type: string; id: string; attributes?: { name?: string } }) =>
    resource.attributes === undefined
      ? resource.id === EXAMPLE_ID
      : resource.attributes.name === README_DATA[resource.type],
  )
}

/** The documented success statuses of an operation. */
function successes(operation: Operation): number[] {
  return Object.keys(operation.responses)
    .filter((status) => status.startsWith('2'))
    .map(Number)
}

/** Accept what the success answers in: the atomic media type for atomic operations. */
function acceptOf(operation: Operation): string {
  const success = Object.entries(operation.responses).find(([status]) => status.startsWith('2'))?.[1]
  return Object.keys(success?.content ?? {})[0] ?? JSON_API
}

describe('the examples of the OpenAPI document', () => {
  it('give every parameter of every GET an example, and each one alone is answered 200', async () => {
    const gets = operations.filter((o) => o.method === 'GET')
    expect(gets.length).toBeGreaterThan(10)
    for (const { path, operation } of gets) {
      const query = (operation.parameters ?? []).filter((p) => p.in === 'query')
      // Only the cursors (no one value fits every list) and the offset spelling of pages go without.
      const without = query.filter((p) => exampleOf(p) === undefined).map((p) => p.name)
      const exempt = ['page[after]', 'page[before]', 'page[offset]', 'page[limit]']
      expect(without.filter((name) => !exempt.includes(name))).toEqual([])
      for (const parameter of query.filter((p) => exampleOf(p) !== undefined)) {
        const url = urlOf(path, operation, [parameter])
        const answer = await t.get(url)
        if (answer.status !== 200)
          throw new Error(`GET ${url} (${operation.operationId}): ${answer.status} ${answer.text}`)
      }
    }
  })

  it('of all the parameters of a GET together, as a generated client fills them in, find the README data', async () => {
    for (const { path, operation } of operations.filter((o) => o.method === 'GET')) {
      const query = (operation.parameters ?? []).filter((p) => p.in === 'query' && exampleOf(p) !== undefined)
      const url = urlOf(path, operation, query)
      const answer = await t.get(url)
      if (answer.status !== 200)
        throw new Error(`GET ${url} (${operation.operationId}): ${answer.status} ${answer.text}`)
      expect({ url, found: found(answer.json) }).toEqual({ url, found: true })
    }
  })

  it('of the GETs, as the docs page sends them (the offered filters left out), find the README data', async () => {
    for (const { path, operation } of operations.filter((o) => o.method === 'GET')) {
      const query = (operation.parameters ?? []).filter((p) => p.in === 'query' && p.example !== undefined)
      const url = urlOf(path, operation, query)
      const answer = await t.get(url)
      expect({ url, status: answer.status, found: found(answer.json) }).toEqual({ url, status: 200, found: true })
    }
  })

  it("offer the filters' examples unticked on the docs page, and give every other parameter a plain one", () => {
    for (const { path, operation } of operations.filter((o) => o.method === 'GET')) {
      for (const parameter of operation.parameters ?? []) {
        const filter = parameter.name.startsWith('filter[') || parameter.name === 'author_id'
        if (!filter) {
          expect({ path, name: parameter.name, examples: parameter.examples }).toEqual({
            path,
            name: parameter.name,
            examples: undefined,
          })
          continue
        }
        expect(parameter.example).toBeUndefined()
        const offered = Object.values(parameter.examples ?? {})
        expect(offered).toHaveLength(1)
        expect(offered[0]?.['x-disabled']).toBe(true)
      }
    }
  })

  it('leave the id of every DELETE to the user, so that the docs page deletes nothing by itself', () => {
    const deletes = operations.filter((o) => o.method === 'DELETE')
    // Three records and one relationship (the books of a collection).
    expect(deletes.map((o) => o.path).sort()).toEqual([
      '/api/v1/authors/{id}',
      '/api/v1/book_collections/{id}',
      '/api/v1/book_collections/{id}/relationships/books',
      '/api/v1/books/{id}',
    ])
    for (const { operation } of deletes) {
      const id = operation.parameters?.find((p) => p.in === 'path')
      expect(id).toMatchObject({ name: 'id', required: true })
      expect(exampleOf(id as Parameter)).toBeUndefined()
    }
  })

  it('give every request body an example, under each media type, and each is answered with a documented 2xx', async () => {
    const writes = operations.filter((o) => o.operation.requestBody !== undefined)
    // 3 creates, 6 updates (PUT and PATCH), 6 relationship writes, the atomic operations.
    expect(writes).toHaveLength(16)
    for (const { method, path, operation } of writes) {
      for (const [media, { example }] of Object.entries(operation.requestBody?.content ?? {})) {
        expect(example).toBeDefined()
        const url = urlOf(path, operation, [])
        const answer = await t.request(method, url, {
          body: example,
          headers: { 'content-type': media, accept: acceptOf(operation) },
        })
        if (!successes(operation).includes(answer.status)) {
          throw new Error(`${method} ${url} as ${media} (${operation.operationId}): ${answer.status} ${answer.text}`)
        }
      }
    }
  })
})
