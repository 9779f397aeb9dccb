import type { DataSet } from '../data/seed'
import type { RunningServer } from './servers'

interface Answer {
  readonly status: number
  readonly contentType: string | null
  readonly location: string | null
  readonly body: string
}

async function ask(server: RunningServer, method: string, path: string, body?: string): Promise<Answer> {
  const headers: Record<string, string> = { accept: 'application/vnd.api+json' }
  if (body !== undefined) headers['content-type'] = 'application/vnd.api+json'
  const response = await fetch(server.origin + path, { method, headers, body })
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    location: response.headers.get('location'),
    body: await response.text(),
  }
}

/** Sends the same request to both servers and throws unless they give the same bytes (sameBytes). */
async function sameAnswer(
  service: RunningServer,
  reference: RunningServer,
  method: string,
  path: string,
  body?: string,
): Promise<Answer> {
  return agree(service, [{ server: reference, check: 'bytes' }], method, path, body)
}

/** How a baseline's answers are checked against the service's. */
export type Check = 'bytes' | 'records'

/** A baseline and how its answers must agree with the service's. */
export interface Compared {
  readonly server: RunningServer
  readonly check: Check
}

/** How many records an answer holds: in `data` (an array's length, 1 for an object, 0 for null or none) and in `included`. */
function recordCounts(answer: Answer): string {
  if (answer.body === '') return 'no body'
  let document: { data?: unknown; included?: unknown }
  try {
    document = JSON.parse(answer.body)
  } catch {
    return 'a body that is not JSON'
  }
  const count = (value: unknown) =>
    Array.isArray(value) ? value.length : value === null || value === undefined ? 0 : 1
  return `${count(document.data)} in data, ${count(document.included)} included`
}

/**
 * The looser check for a baseline whose documents differ from the service's (Express +
 * jsonapi-serializer): the same status, the same Location (a create) and the same number of records.
 */
function sameRecords(fromService: Answer, fromOther: Answer, other: RunningServer, method: string, path: string) {
  const [mine, theirs] = [fromService, fromOther].map((a) => `${a.status}, ${recordCounts(a)}, location ${a.location}`)
  if (mine !== theirs) {
    throw new Error(
      `${method} ${path}: ${other.name} answers otherwise\n  service: ${mine}\n  ${other.name}: ${theirs}`,
    )
  }
}

/** Throws unless status, content type, location and body bytes all agree. */
function sameBytes(fromService: Answer, fromOther: Answer, other: RunningServer, method: string, path: string) {
  for (const key of ['status', 'contentType', 'location', 'body'] as const) {
    if (fromService[key] !== fromOther[key]) {
      throw new Error(
        `${method} ${path}: ${other.name} answers differently (${key})\n` +
          `  service:   ${String(fromService[key]).slice(0, 600)}\n` +
          `  ${other.name}: ${String(fromOther[key]).slice(0, 600)}`,
      )
    }
  }
}

/** Sends one request to the service and every baseline at once and checks each answer; returns the service's. */
async function agree(
  service: RunningServer,
  others: readonly Compared[],
  method: string,
  path: string,
  body?: string,
): Promise<Answer> {
  const [fromService, ...fromOthers] = await Promise.all([
    ask(service, method, path, body),
    ...others.map(({ server }) => ask(server, method, path, body)),
  ])
  for (const [i, { server, check }] of others.entries()) {
    const fromOther = fromOthers[i] as Answer
    if (check === 'bytes') sameBytes(fromService, fromOther, server, method, path)
    else sameRecords(fromService, fromOther, server, method, path)
  }
  return fromService
}

/** A book with a collection, one without (every tenth), the first, the last and an unknown id. */
const bookIds = (set: DataSet) => [1, 10, 11, set.books, set.books + 999]

/**
 * The reads' check before measuring: GET one book (as in compareAnswers) and `paths` on the
 * service and every baseline at once, each answer checked as its `check` says.
 */
export async function compareReads(
  service: RunningServer,
  others: readonly Compared[],
  set: DataSet,
  paths: readonly string[],
): Promise<void> {
  for (const id of bookIds(set)) await agree(service, others, 'GET', `/api/v1/books/${id}`)
  for (const path of paths) await agree(service, others, 'GET', path)
}

/**
 * The writes' check before measuring, on the service and every baseline at once: a create, a
 * rename of a seeded book, a rename of an unknown id, the delete of the created book and that
 * delete again. Every server ends with the books it started with (ids are not reused: the next
 * create gets the next id everywhere).
 */
export async function compareWrites(service: RunningServer, others: readonly Compared[], set: DataSet): Promise<void> {
  const created = await agree(
    service,
    others,
    'POST',
    '/api/v1/books',
    '{"data":{"type":"book","attributes":{"name":"Comparison book","author_id":7}}}',
  )
  if (created.status !== 201 || created.location === null) {
    throw new Error(`POST /api/v1/books on the service answered ${created.status}: ${created.body.slice(0, 300)}`)
  }
  const rename = (id: number) => `{"data":{"type":"book","id":"${id}","attributes":{"name":"Renamed comparison book"}}}`
  await agree(service, others, 'PATCH', '/api/v1/books/7', rename(7))
  const unknown = set.books + 1_000_000
  await agree(service, others, 'PATCH', `/api/v1/books/${unknown}`, rename(unknown))
  const deleted = await agree(service, others, 'DELETE', created.location)
  if (deleted.status !== 204) throw new Error(`DELETE ${created.location} on the service answered ${deleted.status}`)
  await agree(service, others, 'DELETE', created.location)
  for (const id of bookIds(set)) await agree(service, others, 'GET', `/api/v1/books/${id}`)
}

/**
 * The start-up check: both servers must give the same bytes before their speeds are compared.
 * `paths` are further GETs to compare (the list pages of the large data set); `post` also
 * compares a create, deleted again from the service afterwards.
 */
export async function compareAnswers(
  service: RunningServer,
  reference: RunningServer,
  set: DataSet,
  { paths = [], post = false }: { paths?: readonly string[]; post?: boolean } = {},
): Promise<void> {
  for (const id of bookIds(set)) await sameAnswer(service, reference, 'GET', `/api/v1/books/${id}`)
  for (const path of paths) await sameAnswer(service, reference, 'GET', path)
  if (!post) return
  const body = '{"data":{"type":"book","attributes":{"name":"Comparison book","author_id":7}}}'
  const created = await sameAnswer(service, reference, 'POST', '/api/v1/books', body)
  // Delete it from the service again, so the list scenario reads exactly the seeded books.
  const location = created.location ?? ''
  const deleted = await fetch(service.origin + location, { method: 'DELETE' })
  if (deleted.status !== 204) throw new Error(`DELETE ${location} on the service answered ${deleted.status}`)
}
