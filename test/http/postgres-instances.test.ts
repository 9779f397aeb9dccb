import { expect, setDefaultTimeout } from 'bun:test'
import { SQL } from 'bun'
import { type Service, startService } from '../support/commands'
import { afterAll, beforeAll, describe, it, POSTGRES_SERVER } from '../support/postgres-tests'
import { removeTempDirs, stopChildren, WAIT_MS } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/*
 * Several instances of the service, each its own process, on one PostgreSQL database: what one
 * writes the others read, many start together on an empty database, and the database itself keeps
 * a book from losing its author however the instances' requests interleave.
 */

const SERVER = POSTGRES_SERVER
const JSON_API = 'application/vnd.api+json'
const admin = new SQL(SERVER, { max: 1 })
const databases: string[] = []

/** A new empty database, dropped after the file. */
async function freshDatabaseUrl(): Promise<string> {
  const name = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`
  await admin.unsafe(`CREATE DATABASE ${name}`)
  databases.push(name)
  const url = new URL(SERVER)
  url.pathname = `/${name}`
  return url.toString()
}

async function send(api: string, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${api}${path}`, {
    method,
    headers: body === undefined ? { accept: JSON_API } : { accept: JSON_API, 'content-type': JSON_API },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(WAIT_MS),
  })
}

async function createdId(response: Response): Promise<string> {
  expect(response.status).toBe(201)
  return ((await response.json()) as { data: { id: string } }).data.id
}

afterAll(async () => {
  await stopChildren()
  removeTempDirs()
  for (const name of databases) await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await admin.close()
})

describe('instances on one PostgreSQL database', () => {
  let instances: Service[]
  beforeAll(async () => {
    const url = await freshDatabaseUrl()
    // Ten start at once on an empty database: each migrates or waits for the one that does.
    instances = await Promise.all(
      Array.from({ length: 10 }, () => startService({ DATABASE_URL: url, DATABASE_POOL_SIZE: '2' })),
    )
  })

  it('all ten start together on an empty database and answer', async () => {
    const answers = await Promise.all(instances.map((instance) => send(instance.api, 'GET', '/authors')))
    expect(answers.map((answer) => answer.status)).toEqual(Array(10).fill(200))
  })

  it('reads through one instance what another wrote', async () => {
    const [first, second] = instances as [Service, Service]
    const id = await createdId(
      await send(first.api, 'POST', '/authors', { data: { type: 'author', attributes: { name: 'Written by one' } } }),
    )
    const read = await send(second.api, 'GET', `/authors/${id}`)
    expect(read.status).toBe(200)
    expect(((await read.json()) as { data: { attributes: { name: string } } }).data.attributes.name).toBe(
      'Written by one',
    )
  })

  it('never leaves a book without its author when two instances delete the author while a third adds a book', async () => {
    const [a, b, c] = instances as [Service, Service, Service]
    for (let round = 0; round < 50; round++) {
      const author = await createdId(
        await send(a.api, 'POST', '/authors', { data: { type: 'author', attributes: { name: `Race ${round}` } } }),
      )
      const [deleteA, deleteB, addBook] = await Promise.all([
        send(a.api, 'DELETE', `/authors/${author}`),
        send(b.api, 'DELETE', `/authors/${author}`),
        send(c.api, 'POST', '/books', {
          data: { type: 'book', attributes: { name: `Book ${round}`, author_id: Number(author) } },
        }),
      ])
      // The book is stored, and then no delete succeeds (409), or the author is gone and the book refused (422).
      const statuses = { deletes: [deleteA.status, deleteB.status].sort(), book: addBook.status }
      expect([201, 422]).toContain(statuses.book)
      if (statuses.book === 201) expect(statuses.deletes.every((status) => status === 409)).toBe(true)
      else expect(statuses.deletes.filter((status) => status === 204)).toHaveLength(1)
      for (const response of [deleteA, deleteB, addBook]) await response.arrayBuffer()
    }
    const url = new URL(SERVER)
    url.pathname = `/${databases[0]}`
    const direct = new SQL(url.toString(), { max: 1 })
    const orphans =
      await direct`SELECT count(*)::int AS n FROM books b LEFT JOIN authors a ON a.id = b.author_id WHERE a.id IS NULL`
    await direct.close()
    expect(orphans[0].n).toBe(0)
  })
})
