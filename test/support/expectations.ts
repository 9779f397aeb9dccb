import { Database } from 'bun:sqlite'
import { expect } from 'bun:test'
import type { DatabaseLocation } from '../../src/store/open'
import type { Answer, TestApp } from './harness'

/** The Content-Type of every response with a body (interface.md, common rules). */
export const RESPONSE_CONTENT_TYPE = 'application/vnd.api+json; charset=utf-8'

/** The body of a 404 for an unknown record id, exactly as interface.md shows it. */
export const NOT_FOUND_BODY = { errors: [] }

const TYPES = ['authors', 'book_collections', 'books'] as const

/**
 * SQLite's id counters (sqlite_sequence): a failed insert that was not rolled back would still
 * move them. PostgreSQL's identity sequences are outside transactions, and a write rolled back may
 * leave a gap there (docs/store-contract.md): its records alone say what changed.
 */
async function idCounters(database: DatabaseLocation): Promise<Record<string, unknown>[]> {
  if (database.kind === 'postgres') return []
  const db = new Database(database.path, { readonly: true })
  try {
    return db.query<Record<string, unknown>, []>('SELECT name, seq FROM sqlite_sequence ORDER BY name').all()
  } finally {
    db.close()
  }
}

/**
 * Every stored record of every type (read through the store), and the id counters: a failed
 * insert that was not rolled back would move them, which no read through the store shows.
 */
export async function snapshot(app: TestApp): Promise<Record<string, unknown[]>> {
  const stored: Record<string, unknown[]> = {}
  for (const type of TYPES) stored[type] = await app.stored(type)
  return { ...stored, id_counters: await idCounters(app.database) }
}

/** Runs `act` and asserts that it stored, changed and deleted nothing; returns its answer. */
export async function changesNothing(app: TestApp, act: () => Promise<Answer>): Promise<Answer> {
  const before = await snapshot(app)
  const answer = await act()
  expect(await snapshot(app)).toEqual(before)
  return answer
}

/** A JSON:API error response with the service's content type. */
export function expectErrorResponse(answer: Answer, status: number): void {
  expect(answer.status).toBe(status)
  expect(answer.headers.get('content-type')).toBe(RESPONSE_CONTENT_TYPE)
  expect(Object.keys(answer.json)).toEqual(['errors'])
  expect(Array.isArray(answer.json.errors)).toBe(true)
}

const titles: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  409: 'Conflict',
  412: 'Precondition Failed',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  428: 'Precondition Required',
  429: 'Too Many Requests',
  503: 'Service Unavailable',
}

/**
 * A response carrying exactly one error object with `status`, `title`, a non-empty `detail` and,
 * when given, exactly this `source`. The wording of `detail` is the service's own; only its presence
 * is part of the contract.
 */
export function expectOneError(answer: Answer, status: number, source?: Record<string, string>): void {
  expectErrorResponse(answer, status)
  const expected: Record<string, unknown> = {
    status: String(status),
    title: titles[status],
    detail: expect.stringMatching(/\S/),
  }
  if (source) expected.source = source
  expect(answer.json.errors).toEqual([expected])
}

/** A 404 for a record id that names no record: `{"errors": []}` exactly. */
export function expectRecordNotFound(answer: Answer): void {
  expect(answer.status).toBe(404)
  expect(answer.headers.get('content-type')).toBe(RESPONSE_CONTENT_TYPE)
  expect(answer.json).toEqual(NOT_FOUND_BODY)
}

/** A 422 validation error object, shaped as interface.md shows it. */
export function invalid(detail: string, field: string) {
  return { title: 'Unprocessable Entity', detail, source: { parameter: field, pointer: `data/attributes/${field}` } }
}

/** A 422 response whose `errors` are exactly these validation errors, in this order. */
export function expectUnprocessable(answer: Answer, errors: ReturnType<typeof invalid>[]): void {
  expect(answer.status).toBe(422)
  expect(answer.headers.get('content-type')).toBe(RESPONSE_CONTENT_TYPE)
  expect(answer.json).toEqual({ errors })
}
