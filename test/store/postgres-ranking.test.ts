import { expect } from 'bun:test'
import { SQL } from 'bun'
import type { SearchOrder } from '../../src/model/query'
import type { Id } from '../../src/model/record'
import type { WriteResult } from '../../src/model/writes'
import { resources } from '../../src/resources/registry'
import { PostgresStore } from '../../src/store/postgres/postgres-store'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'
import type { Store } from '../../src/store/store'
import { afterAll, beforeAll, describe, it, POSTGRES_SERVER } from '../support/postgres-tests'

// Ranked search lists (filter[search] without a sort) come in the same order over PostgreSQL as
// over SQLite: both run the same ranking (src/store/search-ranking.ts) over their own reads.

const authors = resources.get('authors')
const collections = resources.get('book_collections')
const books = resources.get('books')

/** The server the tests use: POSTGRES_TEST_URL, the local one or a throwaway cluster (postgres-tests.ts). */
const SERVER = POSTGRES_SERVER
const admin = new SQL(SERVER, { max: 1 })
const database = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`
let postgres: PostgresStore
let sqlite: SqliteStore

beforeAll(async () => {
  await admin.unsafe(`CREATE DATABASE ${database}`)
  const url = new URL(SERVER)
  url.pathname = `/${database}`
  postgres = await PostgresStore.open(url.toString(), resources, { poolSize: 3 })
  sqlite = SqliteStore.open(':memory:', resources)
})

afterAll(async () => {
  await postgres.close()
  await sqlite.close()
  await admin.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
  await admin.close()
})

function created(result: WriteResult): Id {
  if (!result.ok) throw new Error(`write refused: missing ${result.missing.join(', ')}`)
  return result.record.id
}

/** A small deterministic generator: the same catalogue every run. */
function random(seed: number): () => number {
  let state = seed
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31
    return state / 2 ** 31
  }
}

// Few words, so that many records share them: ties, repeated words, prefixes of each other.
const vocabulary = ['zola', 'zol', 'hand', 'dark', 'darkness', 'émile', 'sea', 'search', 'le', 'the', 'of', '3']

/** The same writes to both stores: records, then renames, moves and deletes. */
async function fill(store: Store): Promise<void> {
  const next = random(7)
  const pick = (n: number) => Math.floor(next() * n)
  const phrase = (most: number) =>
    Array.from({ length: 1 + pick(most) }, () => vocabulary[pick(vocabulary.length)]).join(' ')
  const authorIds: Id[] = []
  const collectionIds: Id[] = []
  for (let i = 0; i < 12; i++) {
    authorIds.push(created(await store.create(authors, { attributes: { name: phrase(3) }, toOne: {} })))
  }
  for (let i = 0; i < 5; i++) {
    collectionIds.push(created(await store.create(collections, { attributes: { name: phrase(2) }, toOne: {} })))
  }
  const bookIds: Id[] = []
  for (let i = 0; i < 80; i++) {
    const collection = pick(3) === 0 ? null : (collectionIds[pick(collectionIds.length)] as Id)
    bookIds.push(
      created(
        await store.create(books, {
          attributes: { name: phrase(5) },
          toOne: { author: authorIds[pick(authorIds.length)] as Id, book_collection: collection },
        }),
      ),
    )
  }
  for (let i = 0; i < 10; i++) {
    await store.update(books, bookIds[pick(bookIds.length)] as Id, { attributes: { name: phrase(4) }, toOne: {} })
    await store.update(authors, authorIds[pick(authorIds.length)] as Id, { attributes: { name: phrase(2) }, toOne: {} })
  }
  for (let i = 0; i < 8; i++) await store.delete(books, bookIds[pick(bookIds.length)] as Id)
  await store.delete(collections, collectionIds[0] as Id)
}

const searches = [
  'zola',
  'zol',
  'z',
  'dark',
  'darkness hand',
  'emile zola',
  'sea',
  'se',
  'le the',
  'of',
  '3',
  'hand of',
  'the dark sea',
  'ZOLA Émile hand',
]

describe('ranked search over PostgreSQL', () => {
  it('orders every list as the SQLite store does, ties included', async () => {
    await fill(postgres)
    await fill(sqlite)
    for (const [resource, sort] of [
      [books, [{ field: 'id', descending: false }]],
      // As the API sorts: the last key is the id, so that no two records tie.
      [
        books,
        [
          { field: 'name', descending: true },
          { field: 'id', descending: true },
        ],
      ],
      [authors, [{ field: 'id', descending: false }]],
      [collections, [{ field: 'id', descending: true }]],
    ] as const) {
      for (const text of searches) {
        const query: SearchOrder = { filters: [{ kind: 'search', text }], sort, ranked: true }
        const expected = await sqlite.matchingIds(resource, query)
        expect({ type: resource.type, sort, text, ids: await postgres.matchingIds(resource, query) }).toEqual({
          sort,
          type: resource.type,
          text,
          ids: expected,
        })
      }
    }
  })
})
