import { afterAll, beforeAll, describe, expect, it } from 'bun:test'
import { renameSync } from 'node:fs'
import { join } from 'node:path'
import { resources } from '../../src/resources/registry'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'
import { type Answer, JSON_API, openTestApp, type SqliteTestApp } from '../support/harness'

/*
 * The real app over a real SQLite file, with a read worker, whose file is replaced by another while
 * it runs (test/commands/replaced-database.test.ts runs the whole story with processes and a restart).
 */

const DETAIL =
  'The database file was replaced or removed while the service runs: the service must be restarted before it answers again; try again shortly'

function expectRefused(answer: Answer): void {
  expect(answer.status).toBe(503)
  expect(answer.headers.get('retry-after')).toBe('5')
  expect(answer.json).toEqual({ errors: [{ status: '503', title: 'Service Unavailable', detail: DETAIL }] })
}

describe('a database file replaced while the service runs', () => {
  let t: SqliteTestApp
  let author: string
  let book: string

  beforeAll(async () => {
    t = await openTestApp({ backend: 'sqlite', logLevel: 'info', readWorkers: 1 })
    author = await t.create('authors', { name: 'Before' })
    book = await t.create('books', { name: 'Before' }, { author: { data: { type: 'authors', id: author } } })
    // The read worker is up, on the file as it was.
    expect((await t.get('/api/v1/books')).json.data).toHaveLength(1)
    const other = join(t.dbPath, '..', 'other.db')
    await SqliteStore.open(other, resources).close()
    renameSync(other, t.dbPath)
  })

  afterAll(async () => {
    await t?.close()
  })

  it('answers every kind of write 503 with Retry-After, saying the service must be restarted', async () => {
    const atomicType = `${JSON_API}; ext="https://jsonapi.org/ext/atomic"`
    const writes = [
      await t.post('/api/v1/authors', { data: { type: 'authors', attributes: { name: 'After' } } }),
      await t.request('PATCH', `/api/v1/books/${book}`, {
        body: { data: { type: 'books', id: book, attributes: { name: 'Renamed' } } },
      }),
      await t.request('DELETE', `/api/v1/books/${book}`),
      await t.request('PATCH', `/api/v1/books/${book}/relationships/author`, { body: { data: null } }),
      await t.request('POST', '/api/v1/operations', {
        headers: { 'content-type': atomicType, accept: atomicType },
        body: { 'atomic:operations': [{ op: 'add', data: { type: 'authors', attributes: { name: 'Atomic' } } }] },
      }),
    ]
    for (const answer of writes) expectRefused(answer)
  })

  it('answers reads 503 too: a record, a list the read worker would answer, the change feed', async () => {
    for (const path of [
      `/api/v1/authors/${author}`,
      '/api/v1/books',
      `/api/v1/authors/${author}/books`,
      '/api/v1/changes',
    ]) {
      expectRefused(await t.get(path))
    }
  })

  it('says so at /ready', async () => {
    const ready = await t.send('GET', '/ready')
    expect(ready.status).toBe(503)
    expect(ready.json).toMatchObject({ status: 'unavailable', reason: 'replaced' })
  })

  it('logs the fault once, however many requests it refused', () => {
    const lines = t.logs.map((line) => JSON.parse(line)).filter((line) => line.msg === 'database unavailable')
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'error',
        reason: 'replaced',
        code: 'DATABASE_FILE_REPLACED',
        detail: 'the database file was replaced or removed while the service runs: the service must be restarted',
      }),
    ])
  })
})
