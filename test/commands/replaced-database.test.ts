import { Database } from 'bun:sqlite'
import { afterAll, afterEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { existsSync, renameSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { resources } from '../../src/resources/registry'
import { readDatabase, runCli, type Service, startService, tempDatabase, withStore } from '../support/commands'
import { type LogLine, removeTempDirs, stopChildren, WAIT_MS } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(60_000)

afterEach(stopChildren)
afterAll(removeTempDirs)

/*
 * An operator puts a backup in the database's place (`catalogue backup b.db; mv b.db catalogue.db`)
 * or removes the file while the service runs. The service must notice, refuse every request until
 * it is restarted, and leave nothing behind that a start on the new file would replay onto it.
 */

const JSON_API = 'application/vnd.api+json'

type Author = { id: number; name: string }

function send(service: Service, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${service.api}${path}`, {
    method,
    headers: body === undefined ? { accept: JSON_API } : { accept: JSON_API, 'content-type': JSON_API },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(WAIT_MS),
  })
}

function createAuthor(service: Service, name: string): Promise<Response> {
  return send(service, 'POST', '/authors', { data: { type: 'authors', attributes: { name } } })
}

/** The authors a file holds, in id order, read straight with SQLite. */
function authorsIn(path: string): Author[] {
  return readDatabase(path, (db) => db.query<Author, []>('SELECT id, name FROM authors ORDER BY id').all())
}

/**
 * A catalogue of 300 authors whose WAL holds only what the service writes once started (a stop
 * checkpoints it into the file): the frames a start would replay onto a replacement are a part of
 * the file, as in a service that has run for a while, not the whole of it.
 */
async function seededCatalogue() {
  const database = tempDatabase()
  await withStore(database.path, async (store) => {
    const authors = resources.get('authors')
    for (let i = 0; i < 300; i++) {
      await store.create(authors, { attributes: { name: `Seeded author ${i}` }, toOne: {} })
    }
  })
  return { ...database, env: { DATABASE_URL: database.url } }
}

/** Writes through the service, then `catalogue backup` and the copy moved over the live file; what it holds. */
async function replaceWithBackup(
  service: Service,
  database: { dir: string; path: string; env: Record<string, string> },
) {
  for (let i = 0; i < 20; i++) expect((await createAuthor(service, `Before the backup ${i}`)).status).toBe(201)
  const copy = join(database.dir, 'b.db')
  const backup = await runCli(['backup', copy], { env: database.env })
  expect(backup.code).toBe(0)
  const held = authorsIn(copy)
  expect(held).toHaveLength(320)
  renameSync(copy, database.path)
  return held
}

/** Three writes, each refused 503 with Retry-After and a detail that says to restart. */
async function expectWritesRefused(service: Service): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const answer = await createAuthor(service, `After the swap ${i}`)
    expect(answer.status).toBe(503)
    expect(answer.headers.get('retry-after')).toBe('5')
    expect(await answer.json()).toEqual({
      errors: [
        {
          status: '503',
          title: 'Service Unavailable',
          detail:
            'The database file was replaced or removed while the service runs: the service must be restarted before it answers again; try again shortly',
        },
      ],
    })
  }
}

/** SIGTERM, and a clean stop. */
async function stop(service: Service): Promise<void> {
  service.child.proc.kill('SIGTERM')
  expect(await service.child.exitCode()).toBe(0)
}

/** The file is sound, holds exactly `held`, and a service started on it serves that and takes writes. */
async function expectRestoredTo(path: string, held: Author[]): Promise<void> {
  const db = new Database(path)
  try {
    expect(db.query('PRAGMA integrity_check').all()).toEqual([{ integrity_check: 'ok' }])
  } finally {
    db.close()
  }
  expect(authorsIn(path)).toEqual(held)
  const service = await startService({ DATABASE_URL: `sqlite://${path}` })
  const last = held.at(-1) as Author
  const answer = await send(service, 'GET', `/authors/${last.id}`)
  expect(answer.status).toBe(200)
  expect(((await answer.json()) as { data: { attributes: { name: string } } }).data.attributes.name).toBe(last.name)
  expect((await createAuthor(service, 'After the restart')).status).toBe(201)
  await stop(service)
}

describe('catalogue with its database file replaced by a backup while it runs', () => {
  it('answers each write 503 with Retry-After, reads and /ready too; restarted, it serves exactly the backup, sound', async () => {
    const database = await seededCatalogue()
    const service = await startService(database.env)
    const held = await replaceWithBackup(service, database)

    await expectWritesRefused(service)
    // Reads: what the old file holds is no longer the catalogue.
    expect((await send(service, 'GET', '/authors/1')).status).toBe(503)
    expect((await send(service, 'GET', '/authors')).status).toBe(503)
    const ready = await fetch(`${service.api.replace('/api/v1', '')}/ready`)
    expect(ready.status).toBe(503)
    expect(await ready.json()).toMatchObject({ status: 'unavailable', reason: 'replaced' })

    await stop(service)
    await expectRestoredTo(database.path, held)
  })

  it('leaves the new file sound when it is killed once it has refused a request', async () => {
    const database = await seededCatalogue()
    const service = await startService(database.env)
    const held = await replaceWithBackup(service, database)
    await expectWritesRefused(service)

    service.child.proc.kill('SIGKILL')
    await service.child.exitCode()
    await expectRestoredTo(database.path, held)
  })

  it('leaves the new file sound when stopped with no request since the swap, and the old file, renamed away, whole', async () => {
    const database = await seededCatalogue()
    const service = await startService(database.env)
    for (let i = 0; i < 20; i++) expect((await createAuthor(service, `Before the backup ${i}`)).status).toBe(201)
    const copy = join(database.dir, 'b.db')
    expect((await runCli(['backup', copy], { env: database.env })).code).toBe(0)
    const held = authorsIn(copy)
    // Written after the backup, into the old file's WAL: the old file is given it at the stop.
    expect((await createAuthor(service, 'Between the backup and the swap')).status).toBe(201)
    const old = join(database.dir, 'old.db')
    renameSync(database.path, old)
    renameSync(copy, database.path)

    await stop(service)
    await expectRestoredTo(database.path, held)
    expect(authorsIn(old).at(-1)?.name).toBe('Between the backup and the swap')
  })
})

describe('catalogue with its database file removed while it runs', () => {
  it('answers writes and reads 503; restarted, it makes a new empty catalogue', async () => {
    const database = await seededCatalogue()
    const service = await startService(database.env)
    expect((await createAuthor(service, 'Before the removal')).status).toBe(201)
    rmSync(database.path)

    await expectWritesRefused(service)
    expect((await send(service, 'GET', '/authors/1')).status).toBe(503)
    await stop(service)
    expect(existsSync(database.path)).toBe(false)

    const restarted = await startService(database.env)
    const list = await send(restarted, 'GET', '/authors')
    expect(((await list.json()) as { data: unknown[] }).data).toEqual([])
    expect((await createAuthor(restarted, 'In the new catalogue')).status).toBe(201)
    await stop(restarted)
  })
})

describe('catalogue --workers 2 with its database file replaced by a backup', () => {
  /** The request lines of the refused POSTs, by worker. */
  function refusedBy(service: Service): Set<unknown> {
    const refused = service.child.logs.filter(
      (line: LogLine) => line.msg === 'request' && line.method === 'POST' && line.status === 503,
    )
    return new Set(refused.map((line) => line.worker))
  }

  it('answers 503 from every worker; restarted, it serves exactly the backup, sound', async () => {
    const database = await seededCatalogue()
    const service = await startService({ ...database.env, WORKERS: '2' })
    const held = await replaceWithBackup(service, database)

    // Many at once: the kernel spreads the connections over both workers.
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => createAuthor(service, `After ${i}`)))
    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 503))
    await service.child.waitForLog((line) => line.msg === 'request' && line.status === 503 && line.worker === 1)
    await service.child.waitForLog((line) => line.msg === 'request' && line.status === 503 && line.worker === 2)
    expect(refusedBy(service)).toEqual(new Set([1, 2]))

    await stop(service)
    await expectRestoredTo(database.path, held)
  })

  it('does not start a worker that dies again on the new file: it logs why', async () => {
    const database = await seededCatalogue()
    const service = await startService({ ...database.env, WORKERS: '2' })
    await replaceWithBackup(service, database)
    const worker = service.child.logs.find((line) => line.msg === 'worker listening' && line.worker === 2)
    process.kill(Number(worker?.pid), 'SIGKILL')

    const line = await service.child.waitForLog((l) => l.msg.startsWith('worker exited; not started again'))
    expect(line).toMatchObject({ level: 'error', worker: 2, signal: 'SIGKILL' })
    // The other worker still answers, and refuses.
    expect((await createAuthor(service, 'After the swap')).status).toBe(503)
    expect(service.child.logs.filter((l) => l.msg === 'worker listening' && l.worker === 2)).toHaveLength(1)
    // Its death was logged; the stop of the others is clean.
    await stop(service)
  })
})
