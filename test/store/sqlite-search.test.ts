import { Database } from 'bun:sqlite'
import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Id, StoredRecord } from '../../src/model/record'
import { resources } from '../../src/resources/registry'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'

const authors = resources.get('authors')
const collections = resources.get('book_collections')
const books = resources.get('books')

let dir: string
let dbPath: string
let store: SqliteStore

async function create(
  resource: typeof books,
  name: string,
  toOne: Record<string, Id | null> = {},
): Promise<StoredRecord> {
  const result = await store.create(resource, { attributes: { name }, toOne })
  if (!result.ok) throw new Error(`could not create ${name}`)
  return result.record
}

/** The ids of the books a search finds: most relevant first when `ranked`, else in id order. */
async function found(text: string, ranked = false): Promise<Id[]> {
  const records = await store.list(books, {
    filters: [{ kind: 'search', text }],
    sort: [{ field: 'id', descending: false }],
    ranked,
    limit: 1000,
  })
  return records.map((r) => r.id)
}

describe('SqliteStore books search', () => {
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'catalogue-search-'))
    dbPath = join(dir, 'catalogue.db')
    store = SqliteStore.open(dbPath, resources)
  })

  afterEach(async () => {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it("renaming an author leaves every book's search row as it was, yet searches follow the new name", async () => {
    const renamed = await create(authors, 'Oldname Person')
    const other = await create(authors, 'Someone Else')
    const shelf = await create(collections, 'Shelf')
    const mine = [
      await create(books, 'First', { author: renamed.id }),
      await create(books, 'Second', { author: renamed.id, book_collection: shelf.id }),
    ]
    await create(books, 'Third', { author: other.id })
    mine.push(await create(books, 'Fourth', { author: renamed.id }))

    const before = searchRows()
    expect(before).toHaveLength(4)
    expect(await found('oldname')).toEqual(mine.map((b) => b.id))
    await store.update(authors, renamed.id, { attributes: { name: 'Newname Person' }, toOne: {} })

    expect(searchRows()).toEqual(before)
    expect(await found('newname')).toEqual(mine.map((b) => b.id))
    expect(await found('oldname')).toEqual([])
    expect(await found('newname first')).toEqual([mine[0]?.id as Id])
  })

  it("renaming a collection leaves the books' search rows as they were, yet searches follow the new name", async () => {
    const author = await create(authors, 'Jane Doe')
    const shelf = await create(collections, 'Dusty Shelf')
    const inside = await create(books, 'Inside', { author: author.id, book_collection: shelf.id })
    await create(books, 'Outside', { author: author.id })

    const before = searchRows()
    await store.update(collections, shelf.id, { attributes: { name: 'Shiny Shelf' }, toOne: {} })

    expect(searchRows()).toEqual(before)
    expect(await found('shiny')).toEqual([inside.id])
    expect(await found('dusty')).toEqual([])
  })
})

/** Every row of the books' full-text index, read on a connection of its own. */
function searchRows(): Record<string, unknown>[] {
  const db = new Database(dbPath, { readonly: true })
  try {
    return db
      .query<Record<string, unknown>, []>(
        'SELECT rowid, name, author_id, book_collection_id FROM books_search ORDER BY rowid',
      )
      .all()
  } finally {
    db.close()
  }
}
