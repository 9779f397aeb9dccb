import { expect, setDefaultTimeout } from 'bun:test'
import { SQL } from 'bun'
import { type App, createApp } from '../../src/http/app'
import { createLogger } from '../../src/logger'
import { resources } from '../../src/resources/registry'
import { PostgresStore } from '../../src/store/postgres/postgres-store'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'
import type { Store } from '../../src/store/store'
import { checkJsonApiAnswer } from '../support/jsonapi-schema'
import { afterAll, beforeAll, describe, it, POSTGRES_SERVER } from '../support/postgres-tests'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/** The server the tests use: POSTGRES_TEST_URL, the local one or a throwaway cluster (postgres-tests.ts). */
const SERVER = POSTGRES_SERVER
const JSON_API = 'application/vnd.api+json'
const ATOMIC = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'
const admin = new SQL(SERVER, { max: 1 })
const database = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`
const stores: Store[] = []
let postgresApp: App
let sqliteApp: App

beforeAll(async () => {
  await admin.unsafe(`CREATE DATABASE ${database}`)
  const url = new URL(SERVER)
  url.pathname = `/${database}`
  const postgres = await PostgresStore.open(url.toString(), resources, { poolSize: 4 })
  const sqlite = SqliteStore.open(':memory:', resources)
  stores.push(postgres, sqlite)
  const logger = createLogger('silent')
  postgresApp = createApp({ store: postgres, logger })
  sqliteApp = createApp({ store: sqlite, logger })
})

afterAll(async () => {
  for (const store of stores) await store.close()
  await admin.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
  await admin.close()
})

interface Sent {
  readonly method: string
  readonly path: string
  readonly body?: unknown
  readonly type?: string
}

async function send(app: App, { method, path, body, type = JSON_API }: Sent) {
  const headers: Record<string, string> = { accept: type }
  if (body !== undefined) headers['content-type'] = type
  const response = await app.handle(
    new Request(`http://localhost${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  )
  const text = await response.text()
  checkJsonApiAnswer({ method, path, status: response.status, headers: response.headers, text })
  return { status: response.status, contentType: response.headers.get('content-type'), body: text }
}

const author = (name: string) => ({ data: { type: 'authors', attributes: { name } } })
const book = (name: string, authorId: string, collectionId?: string) => ({
  data: {
    type: 'books',
    attributes: { name },
    relationships: {
      author: { data: { type: 'authors', id: authorId } },
      ...(collectionId ? { book_collection: { data: { type: 'book_collections', id: collectionId } } } : {}),
    },
  },
})

/** The same requests, in order, each answered the same by both backends. */
const script: Sent[] = [
  { method: 'POST', path: '/api/v1/authors', body: author('Ursula K. Le Guin') },
  { method: 'POST', path: '/api/v1/authors', body: author('Émile Zola') },
  { method: 'POST', path: '/api/v1/authors', body: author('zola fan club') },
  {
    method: 'POST',
    path: '/api/v1/book_collections',
    body: { data: { type: 'book_collections', attributes: { name: 'Earthsea' } } },
  },
  { method: 'POST', path: '/api/v1/books', body: book('A Wizard of Earthsea', '1', '1') },
  { method: 'POST', path: '/api/v1/books', body: book('The Tombs of Atuan', '1', '1') },
  { method: 'POST', path: '/api/v1/books', body: book('Germinal', '2') },
  { method: 'POST', path: '/api/v1/books', body: book('L’Assommoir', '2') },
  { method: 'POST', path: '/api/v1/books', body: book('Ángel', '3') },
  { method: 'POST', path: '/api/v1/books', body: book('Orphan', '99') },
  { method: 'GET', path: '/api/v1/books' },
  { method: 'GET', path: '/api/v1/books?sort=-name&page[size]=2' },
  { method: 'GET', path: '/api/v1/books?sort=name&page[size]=2&page[number]=2' },
  { method: 'GET', path: '/api/v1/books?filter[search]=earth' },
  { method: 'GET', path: '/api/v1/books?filter[search]=ZOLA%20fan' },
  { method: 'GET', path: '/api/v1/books?filter[search]=emile germ' },
  { method: 'GET', path: '/api/v1/books?filter[book_collection]=null' },
  { method: 'GET', path: '/api/v1/books?filter[author]=1,2&sort=name' },
  { method: 'GET', path: '/api/v1/books/1?include=author,book_collection' },
  { method: 'GET', path: '/api/v1/authors/1/books' },
  { method: 'GET', path: '/api/v1/authors/2/relationships/books' },
  {
    method: 'PATCH',
    path: '/api/v1/books/3',
    body: { data: { type: 'books', id: '3', attributes: { name: 'Nana' } } },
  },
  { method: 'DELETE', path: '/api/v1/authors/1' },
  { method: 'DELETE', path: '/api/v1/book_collections/1' },
  { method: 'GET', path: '/api/v1/books/1' },
  { method: 'DELETE', path: '/api/v1/books/5' },
  { method: 'POST', path: '/api/v1/authors', body: author('After delete') },
  {
    method: 'POST',
    path: '/api/v1/operations',
    type: ATOMIC,
    body: {
      'atomic:operations': [
        { op: 'add', data: { type: 'authors', lid: 'a', attributes: { name: 'Octavia E. Butler' } } },
        {
          op: 'add',
          data: {
            type: 'books',
            attributes: { name: 'Kindred' },
            relationships: { author: { data: { type: 'authors', lid: 'a' } } },
          },
        },
      ],
    },
  },
  {
    method: 'POST',
    path: '/api/v1/operations',
    type: ATOMIC,
    body: {
      'atomic:operations': [
        { op: 'add', data: { type: 'authors', lid: 'b', attributes: { name: 'Never stored' } } },
        { op: 'remove', ref: { type: 'authors', id: '2' } },
      ],
    },
  },
  { method: 'GET', path: '/api/v1/authors?sort=name' },
  { method: 'GET', path: '/api/v1/books/99999999999999999999' },
  { method: 'GET', path: '/api/v1/books/9007199254740993' },
  { method: 'GET', path: '/api/v1/books?filter[author]=9007199254740993,99999999999999999999' },
  { method: 'GET', path: '/api/v1/books?filter[name]=Nana' },
  { method: 'GET', path: '/api/v1/books?filter[search]=%E2%80%99%20%F0%9F%98%80' },
  { method: 'POST', path: '/api/v1/books', body: book('Big', '9007199254740993') },
  { method: 'GET', path: '/api/v1/authors?page[size]=1' },
  { method: 'GET', path: '/api/v1/books?page[number]=9&page[size]=2' },
  { method: 'GET', path: '/api/v1/books?page[offset]=1&page[limit]=2&filter[search]=earth' },
  { method: 'POST', path: '/api/v1/authors', body: author('nul\u0000inside') },
  { method: 'GET', path: '/api/v1/authors?filter[name]=nul%00inside' },
  { method: 'GET', path: '/api/v1/books?filter[search]=nul%00inside' },
  { method: 'GET', path: '/api/v1/books?sort=-name' },
]

describe('the API over PostgreSQL', () => {
  it('answers a sequence of requests byte for byte as it does over SQLite', async () => {
    for (const sent of script) {
      const fromSqlite = await send(sqliteApp, sent)
      const fromPostgres = await send(postgresApp, sent)
      expect({ ...sent, ...fromPostgres }).toEqual({ ...sent, ...fromSqlite })
    }
  })

  it('walks cursor pages the same way: every next link, in name order both ways and by search', async () => {
    for (const start of [
      '/api/v1/books?page[size]=2&sort=name&page[after]=',
      '/api/v1/books?page[size]=1&sort=-name,id&page[after]=',
      '/api/v1/authors?page[size]=2&sort=name&page[after]=',
      '/api/v1/books?page[size]=1&filter[search]=e&page[after]=',
    ]) {
      let path: string | undefined = start
      let pages = 0
      while (path) {
        const fromSqlite = await send(sqliteApp, { method: 'GET', path })
        const fromPostgres = await send(postgresApp, { method: 'GET', path })
        expect({ path, ...fromPostgres }).toEqual({ path, ...fromSqlite })
        const next: string | undefined = JSON.parse(fromSqlite.body).links?.next
        path = next ? new URL(next, 'http://localhost').pathname + new URL(next, 'http://localhost').search : undefined
        pages++
      }
      expect(pages).toBeGreaterThan(1)
    }
  })
})

describe('the API over PostgreSQL, when the database cannot answer', () => {
  it('answers 503 with Retry-After when a statement outlasts STATEMENT_TIMEOUT, and 200 once the lock is gone', async () => {
    const url = new URL(SERVER)
    url.pathname = `/${database}`
    const store = await PostgresStore.open(url.toString(), resources, { poolSize: 2, statementTimeoutMs: 200 })
    stores.push(store)
    const app = createApp({ store, logger: createLogger('silent') })
    const locker = new SQL(url.toString(), { max: 1 })
    const held = await locker.reserve()
    try {
      await held`BEGIN`
      await held`LOCK TABLE authors IN ACCESS EXCLUSIVE MODE`
      const response = await app.handle(
        new Request('http://localhost/api/v1/authors', { headers: { accept: JSON_API } }),
      )
      expect(response.status).toBe(503)
      expect(response.headers.get('retry-after')).toBe('1')
      const document = (await response.json()) as { errors: { status: string }[] }
      expect(document.errors[0]?.status).toBe('503')
      await held`ROLLBACK`
      const after = await app.handle(new Request('http://localhost/api/v1/authors', { headers: { accept: JSON_API } }))
      expect(after.status).toBe(200)
    } finally {
      held.release()
      await locker.close()
    }
  })
})
