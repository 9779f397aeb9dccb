import { Database } from 'bun:sqlite'
import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { renameSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { resources } from '../../src/resources/registry'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'
import { JSON_API, openTestApp, type SqliteTestApp, type TestApp } from '../support/harness'

/** An Accept header the API answers 406, and each kind a probe or a browser sends. */
const accepts = [
  `${JSON_API}; ext="https://example.com/unknown"`,
  'text/plain;version=0.0.4',
  'text/html,application/xhtml+xml;q=0.9,*/*;q=0.8',
  '*/*',
]

type LogLine = Record<string, unknown> & { msg: string; level: string }

function logLines(t: TestApp, msg: string): LogLine[] {
  return t.logs.map((line) => JSON.parse(line) as LogLine).filter((line) => line.msg === msg)
}

let t: TestApp
let stopping = false
beforeEach(async () => {
  stopping = false
  t = await openTestApp({ logLevel: 'info', app: { stopping: () => stopping } })
})
afterEach(async () => {
  await t.close()
})

/** For a test about the SQLite file itself: an app of the same settings over a SQLite file, whatever the backend. */
async function onSqliteFile(run: (t: SqliteTestApp) => Promise<void>): Promise<void> {
  const file = await openTestApp({ backend: 'sqlite', logLevel: 'info', app: { stopping: () => stopping } })
  try {
    await run(file)
  } finally {
    await file.close()
  }
}

describe('GET /health', () => {
  it('answers 200 {"status":"ok"} as application/json', async () => {
    const answer = await t.send('GET', '/health')
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toBe('application/json')
    expect(answer.json).toEqual({ status: 'ok' })
  })

  it('answers 200 whatever the client accepts', async () => {
    for (const accept of accepts) expect((await t.send('GET', '/health', { headers: { accept } })).status).toBe(200)
  })

  it('answers 200 while the database is gone and while the service stops: the process still answers', async () => {
    await onSqliteFile(async (t) => {
      rmSync(t.dbPath)
      stopping = true
      expect((await t.send('GET', '/health')).status).toBe(200)
    })
  })

  it('answers 405 with Allow: GET to another method', async () => {
    const answer = await t.send('POST', '/health')
    expect(answer.status).toBe(405)
    expect(answer.headers.get('allow')).toBe('GET')
  })
})

describe('GET /ready', () => {
  it('answers 200 {"status":"ready"} as application/json when the database answers and is migrated', async () => {
    const answer = await t.send('GET', '/ready')
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toBe('application/json')
    expect(answer.json).toEqual({ status: 'ready' })
  })

  it('answers 200 whatever the client accepts', async () => {
    for (const accept of accepts) expect((await t.send('GET', '/ready', { headers: { accept } })).status).toBe(200)
  })

  it('answers 503 with Retry-After and Connection: close while the service is stopping, so a load balancer drains it', async () => {
    stopping = true
    const answer = await t.send('GET', '/ready')
    expect(answer.status).toBe(503)
    expect(answer.headers.get('retry-after')).toBe('5')
    expect(answer.headers.get('connection')).toBe('close')
    expect(answer.headers.get('content-type')).toBe('application/json')
    expect(answer.json).toEqual({
      status: 'stopping',
      detail: 'The service is stopping; send requests to another instance',
    })
  })

  it('answers 503 with Retry-After once the database file is removed, and says why', async () => {
    await onSqliteFile(async (t) => {
      rmSync(t.dbPath)
      const answer = await t.send('GET', '/ready')
      expect(answer.status).toBe(503)
      expect(answer.headers.get('retry-after')).toBe('5')
      expect(answer.headers.get('content-type')).toBe('application/json')
      expect(answer.json).toEqual({
        status: 'unavailable',
        reason: 'replaced',
        detail:
          'The database is not ready: the database file was replaced or removed while the service runs: the service must be restarted',
      })
    })
  })

  it('answers 503 once the database file is replaced by another', async () => {
    await onSqliteFile(async (t) => {
      const other = join(t.dbPath, '..', 'other.db')
      const replacement = SqliteStore.open(other, resources)
      await replacement.close()
      renameSync(other, t.dbPath)
      expect((await t.send('GET', '/ready')).status).toBe(503)
    })
  })

  it('logs that it is not ready once, however often it is asked, and that it is ready again once', async () => {
    await onSqliteFile(async (t) => {
      // The schema as an older build left it: its last migration not applied.
      const raw = new Database(t.dbPath)
      const last = raw.query('SELECT * FROM schema_migrations ORDER BY version DESC LIMIT 1').get() as {
        version: number
        name: string
        applied_at: string
      }
      raw.run('DELETE FROM schema_migrations WHERE version = ?', [last.version])
      for (let i = 0; i < 3; i++) {
        const answer = await t.send('GET', '/ready')
        expect(answer.status).toBe(503)
        expect(answer.json).toEqual({
          status: 'unavailable',
          reason: 'unavailable',
          detail: `The database is not ready: the schema is at version ${last.version - 1}; this build needs ${last.version}`,
        })
      }
      raw.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [
        last.version,
        last.name,
        last.applied_at,
      ])
      raw.close()
      expect((await t.send('GET', '/ready')).status).toBe(200)
      expect((await t.send('GET', '/ready')).status).toBe(200)
      expect(logLines(t, 'not ready')).toEqual([
        expect.objectContaining({ level: 'warn', reason: 'unavailable', code: 'MIGRATIONS_PENDING' }),
      ])
      expect(logLines(t, 'ready again')).toEqual([expect.objectContaining({ level: 'info' })])
    })
  })

  it('leaves the API answering while it is not ready: readiness only advises', async () => {
    stopping = true
    expect((await t.send('GET', '/ready')).status).toBe(503)
    expect((await t.get('/api/v1/authors')).status).toBe(200)
  })
})

describe('the OpenAPI document', () => {
  it('leaves out /health, /ready and /metrics: they are not part of the API', async () => {
    const paths = Object.keys((await t.get('/api/v1/openapi.json')).json.paths)
    expect(paths.length).toBeGreaterThan(0)
    for (const path of ['/health', '/ready', '/metrics']) expect(paths).not.toContain(path)
  })
})
