import { expect } from 'bun:test'
import { expectErrorResponse } from './expectations'
import type { Answer, TestApp } from './harness'

/*
 * Atomic requests with preconditions (test/http/operations-preconditions.test.ts and
 * operations-require-if-match.test.ts): the operations they send, the tags they take, the refusals
 * they expect.
 */

const ATOMIC = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'

export function etagOf(answer: Answer): string {
  const tag = answer.headers.get('etag')
  if (tag === null) throw new Error(`no ETag on a ${answer.status} answer: ${answer.text}`)
  return tag
}

export const rename = (type: string, id: string, name: string) => ({
  op: 'update',
  data: { type, id, attributes: { name } },
})
export const addAuthor = (name: string) => ({ op: 'add', data: { type: 'authors', lid: 'new', attributes: { name } } })
export const ref = (type: string, id: string, relationship?: string) => ({ ref: { type, id, relationship } })

/** POST /api/v1/operations on `app`, with `headers`. */
export function atomicRequest(app: TestApp, operations: unknown[], headers: Record<string, string> = {}) {
  return app.request('POST', '/api/v1/operations', {
    body: { 'atomic:operations': operations },
    headers: { 'content-type': ATOMIC, accept: ATOMIC, ...headers },
  })
}

/** A 412 or 428 about one record of an atomic request: the header, and the operation in meta. */
export function expectRefused(answer: Answer, status: number, header: string, operation: number): void {
  expectErrorResponse(answer, status)
  expect(answer.json.errors).toEqual([
    {
      status: String(status),
      title: status === 412 ? 'Precondition Failed' : 'Precondition Required',
      detail: expect.stringMatching(/\S/),
      source: { header },
      meta: { operation: `/atomic:operations/${operation}` },
    },
  ])
}
