import { expect, setDefaultTimeout } from 'bun:test'
import { join } from 'node:path'
import { SQL } from 'bun'
import { type Service, startService } from '../support/commands'
import type { Answered, Effect, Plan } from '../support/contention-writers'
import { afterAll, beforeAll, describe, it, POSTGRES_SERVER } from '../support/postgres-tests'
import { removeTempDirs, stopChildren, WAIT_MS } from '../support/process'
import { scratchDatabases } from '../support/test-database'

// Processes, a database and 12 s of load on a machine that may be busy: Bun's 5 s is far too short.
setDefaultTimeout(60_000)

/*
 * Writes of the same rows at once on PostgreSQL: two instances of the service on one database, and
 * three writer processes of four clients each (test/support/contention-writers.ts) moving the same
 * 20 books between two authors, PATCHing their authors and collections, changing collections'
 * members, deleting collections and sending atomic batches of these. PostgreSQL answers such a load
 * with serialization failures the store must run again: a client never sees one (no 503), the
 * writes lock rows in one order (no deadlock), and afterwards every book is where the writes
 * acknowledged to the clients put it, and the feed holds a change of it for each of them.
 */

const JSON_API = 'application/vnd.api+json'
const WRITERS = 3
const CLIENTS_EACH = 4
const LOAD_MS = 12_000

const scratch = scratchDatabases(POSTGRES_SERVER)

afterAll(async () => {
  await stopChildren()
  removeTempDirs()
  await scratch.dropAll()
})

async function created(api: string, path: string, data: unknown): Promise<string> {
  const response = await fetch(`${api}${path}`, {
    method: 'POST',
    headers: { accept: JSON_API, 'content-type': JSON_API },
    body: JSON.stringify({ data }),
    signal: AbortSignal.timeout(WAIT_MS),
  })
  expect(response.status).toBe(201)
  return ((await response.json()) as { data: { id: string } }).data.id
}

/** Runs one writer process to its end; the writes it had answered. */
async function writerProcess(plan: Plan): Promise<Answered[]> {
  const child = Bun.spawn(
    [process.execPath, join(import.meta.dir, '..', 'support', 'contention-writers.ts'), JSON.stringify(plan)],
    {
      stdout: 'pipe',
      stderr: 'pipe',
    },
  )
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  if (code !== 0) throw new Error(`writer ${plan.seed} exited ${code}: ${err}`)
  return JSON.parse(out) as Answered[]
}

/** An acknowledged write's effect on one book, with when it was sent and answered. */
type Timed = Effect & { readonly sent: number; readonly answered: number }

/**
 * What may have been the last of `sets` to take effect: those that no other one was sent after
 * they were answered (times in whole milliseconds: one sent in a later millisecond surely came after).
 */
function possiblyLast(sets: readonly Timed[]): readonly Timed[] {
  const latestSent = Math.max(...sets.map((set) => set.sent))
  return sets.filter((set) => !(latestSent > set.answered))
}

/**
 * Why the stored author and collection of a book cannot come from the writes acknowledged on it,
 * in any order they may have taken between their sending and their answer; null when they can.
 */
function unexplained(
  effects: readonly Timed[],
  author: string,
  collection: string | null,
  initialAuthor: string,
): string | null {
  const authors = effects.filter((effect) => effect.author !== undefined)
  const authorsLast = authors.length > 0 ? possiblyLast(authors).map((effect) => effect.author) : [initialAuthor]
  if (!authorsLast.includes(author)) return `author ${author}, where the last acknowledged writes gave ${authorsLast}`
  const sets = effects.filter((effect) => effect.collection !== undefined)
  const setsLast = sets.length > 0 ? possiblyLast(sets) : [{ collection: null, sent: -Infinity } as Timed]
  if (collection !== null) {
    return setsLast.some((effect) => effect.collection === collection)
      ? null
      : `collection ${collection}, where the last acknowledged writes gave ${setsLast.map((effect) => effect.collection)}`
  }
  // Null: set so last, or the last one's collection left by a write answered after it was sent.
  const nulled = setsLast.some(
    (set) =>
      set.collection === null ||
      effects.some((effect) => effect.leaves === set.collection && effect.answered >= set.sent),
  )
  return nulled
    ? null
    : `no collection, where the last acknowledged writes gave ${setsLast.map((effect) => effect.collection)}`
}

describe('writes of the same rows through two instances on one PostgreSQL database', () => {
  let instances: Service[]
  let url: string
  let authors: string[]
  let books: string[]
  let answered: Answered[]

  beforeAll(async () => {
    url = await scratch.fresh()
    // The first migrates the empty database; the second starts on it.
    instances = [await startService({ DATABASE_URL: url, DATABASE_POOL_SIZE: '4' })]
    instances.push(await startService({ DATABASE_URL: url, DATABASE_POOL_SIZE: '4' }))
    const api = instances[0]?.api ?? ''
    authors = [
      await created(api, '/authors', { type: 'authors', attributes: { name: 'First' } }),
      await created(api, '/authors', { type: 'authors', attributes: { name: 'Second' } }),
    ]
    books = []
    for (let n = 0; n < 20; n++) {
      books.push(
        await created(api, '/books', {
          type: 'books',
          attributes: { name: `Book ${n}`, author_id: Number(authors[0]) },
        }),
      )
    }
    const apis = instances.map((instance) => instance.api)
    const runs = await Promise.all(
      Array.from({ length: WRITERS }, (_, w) =>
        writerProcess({ apis, authors, books, clients: CLIENTS_EACH, ms: LOAD_MS, seed: w + 1 }),
      ),
    )
    answered = runs.flat()
    // The instances stopped, their connections end and PostgreSQL's statistics of them are complete.
    await stopChildren()
  })

  it('answers every write, none with a 5xx, most acknowledged', () => {
    const failed = answered.filter((write) => write.status >= 500)
    expect(failed.map((write) => `${write.what}: ${write.status} ${write.detail}`)).toEqual([])
    // 404 and 422: a collection deleted by another client before the write named it.
    expect(answered.filter((write) => ![200, 201, 204, 404, 422].includes(write.status))).toEqual([])
    const kinds = new Set(answered.filter((write) => write.status < 300).map((write) => write.what))
    expect([...kinds].sort()).toEqual([
      'add members',
      'atomic batch',
      'create collection',
      'delete a collection',
      'move the 20 books',
      'patch a book',
      'remove members',
      'replace members',
    ])
    expect(answered.filter((write) => write.status < 300).length).toBeGreaterThan(200)
  })

  it('locks rows in one order: PostgreSQL detects no deadlock', async () => {
    const direct = new SQL(url, { max: 1 })
    try {
      for (let waited = 0; waited < WAIT_MS; waited += 100) {
        const [others] =
          await direct`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`
        if (others.n === 0) break
        await Bun.sleep(100)
      }
      const [stats] = await direct`SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()`
      expect(stats.n).toBe(0)
    } finally {
      await direct.close()
    }
  })

  it('leaves every book where the acknowledged writes put it', async () => {
    const direct = new SQL(url, { max: 1 })
    try {
      const rows =
        (await direct`SELECT id::text AS id, author_id::text AS author, book_collection_id::text AS collection FROM books ORDER BY books.id`) as {
          id: string
          author: string
          collection: string | null
        }[]
      expect(rows.map((row) => row.id)).toEqual(books)
      const problems: string[] = []
      for (const row of rows) {
        const effects = answered.flatMap((write) =>
          write.effects
            .filter((effect) => effect.book === row.id)
            .map((effect) => ({ ...effect, sent: write.sent, answered: write.answered })),
        )
        const why = unexplained(effects, row.author, row.collection, authors[0] as string)
        if (why) problems.push(`book ${row.id}: ${why}`)
      }
      expect(problems).toEqual([])
    } finally {
      await direct.close()
    }
  })

  it("holds a change in the feed for each acknowledged write of a book's author or collection", async () => {
    const direct = new SQL(url, { max: 1 })
    try {
      const counted =
        (await direct`SELECT record_id::text AS id, count(*)::int AS n FROM changes WHERE type = 'books' AND op = 'update' GROUP BY record_id`) as {
          id: string
          n: number
        }[]
      const changes = new Map(counted.map((row) => [row.id, row.n]))
      for (const book of books) {
        const writes = answered.filter((write) =>
          write.effects.some(
            (effect) => effect.book === book && (effect.author !== undefined || effect.collection !== undefined),
          ),
        ).length
        expect(changes.get(book) ?? 0).toBeGreaterThanOrEqual(writes)
      }
    } finally {
      await direct.close()
    }
  })
})
