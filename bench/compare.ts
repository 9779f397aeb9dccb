import type { DataSet } from './seed'
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

/**
 * Sends the same request to both servers and throws unless status, content type, location and
 * body bytes all agree: a reference that answered differently would not be a fair baseline.
 */
async function sameAnswer(
  service: RunningServer,
  reference: RunningServer,
  method: string,
  path: string,
  body?: string,
): Promise<Answer> {
  const [fromService, fromReference] = await Promise.all([
    ask(service, method, path, body),
    ask(reference, method, path, body),
  ])
  for (const key of ['status', 'contentType', 'location', 'body'] as const) {
    if (fromService[key] !== fromReference[key]) {
      throw new Error(
        `${method} ${path}: the reference answers differently (${key})\n` +
          `  service:   ${String(fromService[key]).slice(0, 600)}\n` +
          `  reference: ${String(fromReference[key]).slice(0, 600)}`,
      )
    }
  }
  return fromService
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
  // A book with a collection, one without (every tenth), the first, the last and an unknown id.
  for (const id of [1, 10, 11, set.books, set.books + 999]) {
    await sameAnswer(service, reference, 'GET', `/api/v1/books/${id}`)
  }
  for (const path of paths) await sameAnswer(service, reference, 'GET', path)
  if (!post) return
  const body = '{"data":{"type":"book","attributes":{"name":"Comparison book","author_id":7}}}'
  const created = await sameAnswer(service, reference, 'POST', '/api/v1/books', body)
  // Delete it from the service again, so the list scenario reads exactly the seeded books.
  const location = created.location ?? ''
  const deleted = await fetch(service.origin + location, { method: 'DELETE' })
  if (deleted.status !== 204) throw new Error(`DELETE ${location} on the service answered ${deleted.status}`)
}
