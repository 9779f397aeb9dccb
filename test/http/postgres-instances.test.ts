import { expect, setDefaultTimeout } from 'bun:test'
import { SQL } from 'bun'
import { type Service, startService } from '../support/commands'
import { afterAll, beforeAll, describe, it, POSTGRES_SERVER } from '../support/postgres-tests'
import { removeTempDirs, stopChildren, WAIT_MS } from '../support/process'
import { scratchDatabases } from '../support/test-database'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/*
 * Several instances of the service, each its own process, on one PostgreSQL database: what one
 * writes the others read, many start together on an empty database, and the database itself keeps
 * a book from losing its author however the instances' requests interleave.
 */

const JSON_API = 'application/vnd.api+json'
/** New empty databases, dropped after the file. */
const scratch = scratchDatabases(POSTGRES_SERVER)
const freshDatabaseUrl = () => scratch.fresh()

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
  await scratch.dropAll()
})

describe('instances on one PostgreSQL database', () => {
  let instances: Service[]
  let url: string
  beforeAll(async () => {
    url = await freshDatabaseUrl()
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
    const direct = new SQL(url, { max: 1 })
    const orphans =
      await direct`SELECT count(*)::int AS n FROM books b LEFT JOIN authors a ON a.id = b.author_id WHERE a.id IS NULL`
    await direct.close()
    expect(orphans[0].n).toBe(0)
  })
})

/** What one client was told: each acknowledged write, in the order it was answered. */
interface Acknowledged {
  /** Books created (201), with the name and author they were stored with, then renamed (200) or deleted (204). */
  readonly books: Map<string, { name: string; author: string; deleted: boolean }>
  /** Authors created (201), and whether a delete of theirs was answered 204. */
  readonly authors: Map<string, { deleted: boolean }>
  /** The ids of this client's creates of each type, in the order they were answered. */
  readonly createdIds: { readonly authors: number[]; readonly books: number[] }
  /** Every status it got. */
  readonly statuses: number[]
}

describe('instances writing to one PostgreSQL database at once', () => {
  it('keeps every acknowledged write when 12 clients create, rename and delete through four instances at once', async () => {
    const url = await freshDatabaseUrl()
    const instances = await Promise.all(
      Array.from({ length: 4 }, () => startService({ DATABASE_URL: url, DATABASE_POOL_SIZE: '3' })),
    )
    const shared: string[] = []
    for (let n = 0; n < 3; n++) {
      shared.push(
        await createdId(
          await send(instances[0]?.api ?? '', 'POST', '/authors', {
            data: { type: 'author', attributes: { name: `Shared ${n}` } },
          }),
        ),
      )
    }
    /** Authors created so far by any client: others add books to the newest while its creator may delete it. */
    const otherAuthors: string[] = []
    /** A client: 30 writes, each through the next instance; its own books renamed and deleted, its own authors deleted while others may add books to them. */
    const client = async (c: number): Promise<Acknowledged> => {
      const seen: Acknowledged = {
        books: new Map(),
        authors: new Map(),
        createdIds: { authors: [], books: [] },
        statuses: [],
      }
      const api = (step: number) => instances[(c + step) % instances.length]?.api ?? ''
      const answered = async (response: Response) => {
        seen.statuses.push(response.status)
        const body = response.status === 204 ? null : ((await response.json()) as { data?: { id: string } })
        return body?.data?.id
      }
      for (let step = 0; step < 30; step++) {
        const mine = [...seen.books].filter(([, book]) => !book.deleted).map(([id]) => id)
        const myAuthors = [...seen.authors].filter(([, author]) => !author.deleted).map(([id]) => id)
        // Every other book to an author of any client's (perhaps deleted, or being deleted: 422 or 409), else to one that stays.
        const anyAuthor = otherAuthors[(c * 7 + step) % Math.max(1, otherAuthors.length)]
        const everyAuthor = step % 2 === 1 && anyAuthor !== undefined ? [anyAuthor] : [...shared, ...myAuthors]
        const kind = step % 6
        if (kind === 0) {
          const response = await send(api(step), 'POST', '/authors', {
            data: { type: 'author', attributes: { name: `Author ${c}.${step}` } },
          })
          const id = await answered(response)
          if (response.status === 201 && id) {
            seen.authors.set(id, { deleted: false })
            seen.createdIds.authors.push(Number(id))
            otherAuthors.push(id)
          }
        } else if (kind === 4 && myAuthors.length > 0) {
          const id = myAuthors[0] as string
          const response = await send(api(step), 'DELETE', `/authors/${id}`)
          await answered(response)
          if (response.status === 204) seen.authors.set(id, { deleted: true })
        } else if (kind === 3 && mine.length > 0) {
          const id = mine[0] as string
          const name = `Renamed ${c}.${step}`
          const response = await send(api(step), 'PATCH', `/books/${id}`, {
            data: { type: 'book', id, attributes: { name } },
          })
          await answered(response)
          const book = seen.books.get(id)
          if (response.status === 200 && book) book.name = name
        } else if (kind === 5 && mine.length > 1) {
          const id = mine[1] as string
          const response = await send(api(step), 'DELETE', `/books/${id}`)
          await answered(response)
          const book = seen.books.get(id)
          if (response.status === 204 && book) book.deleted = true
        } else {
          const author = everyAuthor[(c + step) % everyAuthor.length] as string
          const name = `Book ${c}.${step}`
          const response = await send(api(step), 'POST', '/books', {
            data: { type: 'book', attributes: { name, author_id: Number(author) } },
          })
          const id = await answered(response)
          if (response.status === 201 && id) {
            seen.books.set(id, { name, author, deleted: false })
            seen.createdIds.books.push(Number(id))
          }
        }
      }
      return seen
    }
    const clients = await Promise.all(Array.from({ length: 12 }, (_, c) => client(c)))

    const statuses = clients.flatMap((seen) => seen.statuses)
    // 409 and 422: the races between deleting an author and adding a book to them; nothing else fails.
    expect(statuses.filter((status) => ![200, 201, 204, 409, 422].includes(status))).toEqual([])
    expect(statuses.filter((status) => status === 201).length).toBeGreaterThan(100)
    expect(statuses).toContain(409)
    // Each client's creates, answered one after the other, got increasing ids (authors and books
    // have sequences of their own, so each type apart).
    for (const seen of clients) {
      for (const ids of [seen.createdIds.authors, seen.createdIds.books]) {
        expect(ids).toEqual([...ids].sort((a, b) => a - b))
      }
    }
    // No id answered twice, across clients and instances.
    for (const ids of [
      clients.flatMap((seen) => [...seen.books.keys()]),
      clients.flatMap((seen) => [...seen.authors.keys()]),
    ]) {
      expect(new Set(ids).size).toBe(ids.length)
    }

    const direct = new SQL(url, { max: 1 })
    try {
      const storedBooks = new Map(
        (
          (await direct`SELECT id::text AS id, name, author_id::text AS author FROM books`) as {
            id: string
            name: string
            author: string
          }[]
        ).map((row) => [row.id, row]),
      )
      const storedAuthors = new Set(
        ((await direct`SELECT id::text AS id FROM authors`) as { id: string }[]).map((row) => row.id),
      )
      for (const seen of clients) {
        for (const [id, book] of seen.books) {
          if (book.deleted) expect(storedBooks.has(id)).toBe(false)
          else expect(storedBooks.get(id)).toEqual({ id, name: book.name, author: book.author })
        }
        for (const [id, author] of seen.authors) expect(storedAuthors.has(id)).toBe(!author.deleted)
      }
      // Every stored book was acknowledged to its client, and has its author.
      const acknowledged = new Set(clients.flatMap((seen) => [...seen.books.keys()]))
      for (const [id, book] of storedBooks) {
        expect(acknowledged.has(id)).toBe(true)
        expect(storedAuthors.has(book.author)).toBe(true)
      }
    } finally {
      await direct.close()
    }
  })
})
