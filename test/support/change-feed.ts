import type { Answer, TestApp } from './harness'

/*
 * Reading the change feed (GET /api/v1/changes, FEED-SPEC in docs) as a client does: by its
 * links.next, from a cursor the test remembered before its writes.
 */

export const CHANGES = '/api/v1/changes'
export const ATOMIC = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'

export interface ChangeRecord {
  readonly type: 'changes'
  readonly id: string
  readonly attributes: { readonly op: 'create' | 'update' | 'delete' }
  readonly relationships: { readonly resource: { readonly data: { readonly type: string; readonly id: string } } }
}

/** A change as the tests name it: `update books/3`. */
export function described(change: ChangeRecord): string {
  const { type, id } = change.relationships.resource.data
  return `${change.attributes.op} ${type}/${id}`
}

/** The change record the feed shows for `op` of `type`/`id`, whatever its own id. */
export function changeOf(op: string, type: string, id: string, changeId: unknown) {
  return { type: 'changes', id: changeId, attributes: { op }, relationships: { resource: { data: { type, id } } } }
}

/** The query string of a relative link, as a map (`page[after]` -> value). */
export function linkParameters(link: string): Record<string, string> {
  return Object.fromEntries(new URL(link, 'http://localhost').searchParams)
}

/** The relative link followed: the path and query to ask for next. */
export function follow(link: string): string {
  const url = new URL(link, 'http://localhost')
  return url.pathname + url.search
}

/** The id of the newest change (meta.latest), or null when there is none. */
export async function latestChange(t: TestApp): Promise<string | null> {
  const answer = await t.get(`${CHANGES}?page[size]=1`)
  if (answer.status !== 200) throw new Error(`GET ${CHANGES} answered ${answer.status}: ${answer.text}`)
  return answer.json.meta.latest
}

/**
 * Every change after `cursor` (null: from the start, "0"), walking links.next until it stops
 * moving (a page read nothing more: a filtered page may be empty and still move it); `query`
 * (filter[type], page[size]) is added to the first request and kept by links.next.
 */
export async function changesAfter(t: TestApp, cursor: string | null, query = ''): Promise<ChangeRecord[]> {
  const seen: ChangeRecord[] = []
  let after = cursor ?? '0'
  let path = `${CHANGES}?page[after]=${encodeURIComponent(after)}${query}`
  for (let pages = 0; pages < 1000; pages++) {
    const answer: Answer = await t.get(path)
    if (answer.status !== 200) throw new Error(`GET ${path} answered ${answer.status}: ${answer.text}`)
    seen.push(...answer.json.data)
    const next = linkParameters(answer.json.links.next)['page[after]'] ?? ''
    if (next === after) return seen
    after = next
    path = follow(answer.json.links.next)
  }
  throw new Error(`the feed after ${cursor} did not end within 1000 pages`)
}

/**
 * The changes after `cursor` once `count` of them can be read, or all there are after `ms`. On
 * PostgreSQL a page shows a commit only once every transaction older than it has ended
 * (pg_snapshot_xmin), on the whole server: a write acknowledged may take a moment to be read.
 * Callers compare what this returns with exactly what they wrote: a change too many still shows.
 */
export async function waitForChanges(
  t: TestApp,
  cursor: string | null,
  count: number,
  query = '',
  ms = 10_000,
): Promise<ChangeRecord[]> {
  const deadline = Date.now() + ms
  for (;;) {
    const changes = await changesAfter(t, cursor, query)
    if (changes.length >= count || Date.now() > deadline) return changes
    await Bun.sleep(50)
  }
}

/** GET `path` until its page holds a change (see waitForChanges), or after `ms`: that page. */
export async function waitForPage(t: TestApp, path: string, ms = 10_000): Promise<Answer> {
  const deadline = Date.now() + ms
  for (;;) {
    const answer = await t.get(path)
    if (answer.status !== 200 || answer.json.data.length > 0 || Date.now() > deadline) return answer
    await Bun.sleep(50)
  }
}

/** The id of the change at `index` of `changes` (negative: from the end). */
export function idAt(changes: readonly ChangeRecord[], index: number): string {
  const change = changes.at(index)
  if (!change) throw new Error(`no change at ${index} of ${changes.length}`)
  return change.id
}

/** POST /api/v1/operations with the atomic media type. */
export function atomic(t: TestApp, operations: unknown[]): Promise<Answer> {
  return t.request('POST', '/api/v1/operations', {
    body: { 'atomic:operations': operations },
    headers: { 'content-type': ATOMIC, accept: ATOMIC },
  })
}
