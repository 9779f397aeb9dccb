import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type App, type AppOptions, createApp } from '../../src/http/app'
import type { RequestLimits } from '../../src/jsonapi/limits'
import { createLogger, type LogLevel } from '../../src/logger'
import type { ResourceDescription } from '../../src/model/description'
import { resources } from '../../src/resources/registry'
import { type DatabaseLocation, openStore } from '../../src/store/open'
import { PostgresStore } from '../../src/store/postgres/postgres-store'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'
import type { Store } from '../../src/store/store'
import { checkJsonApiAnswer } from './jsonapi-schema'
import { borrowDatabase, chosenBackend, type LentDatabase, type TestBackend } from './test-database'

export const JSON_API = 'application/vnd.api+json'

export interface SentRequest {
  /** A value to send as JSON, or a string sent as it is. */
  readonly body?: unknown
  readonly headers?: Record<string, string>
}

/** A request sent exactly as given: no default Accept or Content-Type, and the body's bytes untouched. */
export interface RawRequest {
  readonly headers?: Record<string, string>
  readonly body?: RequestInit['body']
}

/** A stored record seen flat: `{ id, name, author_id, book_collection_id }`. */
export type StoredRow = Record<string, string | number | null>

export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  /** The parsed body, or undefined when there is none or it is not JSON. */
  // biome-ignore lint/suspicious/noExplicitAny: tests read documents of every shape
  readonly json: any
}

/**
 * The real app over a fresh, empty database: a SQLite file in its own temporary folder, or a
 * PostgreSQL database when TEST_DATABASE_URL names a server (test/support/test-database.ts).
 */
export interface TestApp {
  readonly app: App
  /** Where the data is; test support code seeds it with SQL (test/support/bulk.ts). */
  readonly database: DatabaseLocation
  readonly logs: string[]
  /**
   * Sends exactly these headers and body bytes, for what `request` cannot express: a missing Accept or
   * Content-Type, bytes that are not UTF-8, a streamed body without Content-Length.
   */
  send(method: string, path: string, request?: RawRequest): Promise<Answer>
  /** Sends with `Accept: application/vnd.api+json` and, with a body, the JSON:API Content-Type. */
  request(method: string, path: string, options?: SentRequest): Promise<Answer>
  get(path: string, headers?: Record<string, string>): Promise<Answer>
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Answer>
  /** Creates a record through the API and returns its id. */
  create(type: string, attributes: Record<string, unknown>, relationships?: Record<string, unknown>): Promise<string>
  /**
   * Every stored record of a type in id order, read through the Store (not SQL): its id, its
   * attributes and its to-one ids under the relationships' id attribute names (`author_id`).
   */
  stored(type: string): Promise<StoredRow[]>
  /**
   * Another store on the same database, as another process would open it (its own connections):
   * for seeding through the Store, and for writes the app did not make. The caller closes it.
   */
  openStore(): Promise<Store>
  close(): Promise<void>
}

/** A test app that is about SQLite itself (its file, read workers, faults): opened with `backend: 'sqlite'`. */
export interface SqliteTestApp extends TestApp {
  readonly dbPath: string
}

export interface TestAppOptions {
  logLevel?: LogLevel
  maxBodyBytes?: number
  maxPageSize?: number
  maxOperations?: number
  /** Where the temporary folder goes (a small file system, for the fault tests); the OS's by default. */
  parent?: string
  busyTimeoutMs?: number
  limits?: Partial<RequestLimits>
  /** Read workers (see src/http/read-threads/read-pool.ts): one by default, so that tests cross them as the service does. */
  readWorkers?: number
  /** Any other option of createApp (tokens, CORS, ...), passed as it is. */
  app?: Partial<Omit<AppOptions, 'store' | 'logger'>>
  /**
   * `sqlite` for a test about SQLite itself, whatever TEST_DATABASE_URL says. By default the backend
   * TEST_DATABASE_URL chooses; over PostgreSQL there are no read workers (they read SQLite files).
   */
  backend?: 'sqlite'
}

export async function openTestApp(options: TestAppOptions & { backend: 'sqlite' }): Promise<SqliteTestApp>
export async function openTestApp(options?: TestAppOptions): Promise<TestApp>
export async function openTestApp(options: TestAppOptions = {}): Promise<TestApp | SqliteTestApp> {
  const chosen: TestBackend = options.backend === 'sqlite' ? { kind: 'sqlite' } : chosenBackend()
  let store: Store
  let database: DatabaseLocation
  let dir: string | undefined
  let lent: LentDatabase | undefined
  let readWorkers: AppOptions['readWorkers']
  if (chosen.kind === 'postgres') {
    lent = await borrowDatabase(chosen.server)
    database = { kind: 'postgres', url: lent.url }
    try {
      store = await PostgresStore.open(lent.url, resources, { poolSize: 5 })
    } catch (error) {
      lent.release()
      throw error
    }
  } else {
    dir = mkdtempSync(join(options.parent ?? tmpdir(), 'catalogue-test-'))
    const dbPath = join(dir, 'catalogue.db')
    database = { kind: 'sqlite', path: dbPath }
    store = SqliteStore.open(dbPath, resources, { busyTimeoutMs: options.busyTimeoutMs })
    readWorkers = { count: options.readWorkers ?? 1, databaseUrl: `sqlite://${dbPath}` }
  }
  const logs: string[] = []
  const logger = createLogger(options.logLevel ?? 'silent', { write: (line) => logs.push(line), flush() {} })
  const { maxBodyBytes, maxPageSize, maxOperations, limits } = options
  const app = createApp({
    // As on the two cores the service is sized for, whatever this machine lends the test run.
    cores: 2,
    ...options.app,
    store,
    logger,
    maxBodyBytes,
    maxPageSize,
    maxOperations,
    limits,
    readWorkers,
  })

  async function send(method: string, path: string, { headers, body }: RawRequest = {}): Promise<Answer> {
    const init: RequestInit & { duplex?: 'half' } = { method, headers: headers ?? {} }
    if (body !== undefined && body !== null) {
      init.body = body
      if (body instanceof ReadableStream) init.duplex = 'half'
    }
    const response = await app.handle(new Request(`http://localhost${path}`, init))
    const text = await response.text()
    // Every JSON:API answer a test sees meets JSON:API 1.1 and its schema (jsonapi-schema.ts).
    checkJsonApiAnswer({ method, path, status: response.status, headers: response.headers, text })
    return {
      status: response.status,
      headers: response.headers,
      text,
      json: text !== '' && response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : undefined,
    }
  }

  function request(method: string, path: string, { body, headers }: SentRequest = {}): Promise<Answer> {
    if (body === undefined) return send(method, path, { headers: { accept: JSON_API, ...headers } })
    return send(method, path, {
      headers: { 'content-type': JSON_API, accept: JSON_API, ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    })
  }

  return {
    app,
    database,
    ...(database.kind === 'sqlite' ? { dbPath: database.path } : {}),
    logs,
    send,
    request,
    get: (path, headers) => request('GET', path, { headers }),
    post: (path, body, headers) => request('POST', path, { body, headers }),
    async create(type, attributes, relationships) {
      const data: Record<string, unknown> = { type, attributes }
      if (relationships) data.relationships = relationships
      const answer = await request('POST', `/api/v1/${type}`, { body: { data } })
      if (answer.status !== 201) throw new Error(`create ${type} failed: ${answer.status} ${answer.text}`)
      return answer.json.data.id
    },
    stored: (type) => storedRows(store, resources.get(type)),
    openStore: () => openStore(database, resources, { poolSize: 2 }),
    async close() {
      // The change feed's streams and its pruning timer, which would otherwise go on over a closed store.
      app.decorator.changeFeed.close()
      await app.decorator.reads?.close()
      await store.close()
      if (dir) rmSync(dir, { recursive: true, force: true })
      lent?.release()
    },
  }
}

/** Every record of `resource` in id order, through the Store's own way of reading a whole list. */
export async function storedRows(store: Store, resource: ResourceDescription): Promise<StoredRow[]> {
  const rows: StoredRow[] = []
  const order = { filters: [], sort: [{ field: 'id', descending: false }] }
  for await (const batch of store.stream(resource, order, 500)) {
    for (const record of batch) {
      const row: StoredRow = { id: record.id, ...record.attributes }
      for (const [name, relationship] of Object.entries(resource.relationships)) {
        if (relationship.kind === 'to-one') row[relationship.idAttribute] = record.toOne[name] ?? null
      }
      rows.push(row)
    }
  }
  return rows
}
