import { Database } from 'bun:sqlite'
import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { resources } from '../../src/resources/registry'
import { SqliteStore } from '../../src/store/sqlite'
import type { Id, StoredRecord } from '../../src/store/store'

// Conditional writes (the store's half of HTTP If-Match) and the store's version (what tags a
// streamed answer): see Expectation and Store.version in src/store/store.ts.

const authors = resources.get('authors')
const books = resources.get('books')
const collections = resources.get('book_collections')

let dir: string
let store: SqliteStore
let authorId: Id
let bookId: Id

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'catalogue-conditional-'))
  store = SqliteStore.open(join(dir, 'catalogue.db'), resources)
  const author = await store.create(authors, { attributes: { name: 'Ann' }, toOne: {} })
  if (!author.ok) throw new Error('author not created')
  authorId = author.record.id
  const book = await store.create(books, { attributes: { name: 'Stone' }, toOne: { author: authorId } })
  if (!book.ok) throw new Error('book not created')
  bookId = book.record.id
})

afterEach(async () => {
  await store.close()
  rmSync(dir, { recursive: true, force: true })
})

const rename = (name: string) => ({ attributes: { name }, toOne: {} })

describe('SqliteStore conditional writes', () => {
  it('update: shows the expectation the record as it is, and writes when it agrees', async () => {
    const seen: StoredRecord[] = []
    const result = await store.update(books, bookId, rename('New'), (current) => {
      seen.push(current)
      return true
    })
    expect(seen).toEqual([
      { id: bookId, attributes: { name: 'Stone' }, toOne: { author: authorId, book_collection: null } },
    ])
    expect(result).toMatchObject({ ok: true, record: { attributes: { name: 'New' } } })
  })

  it('update, delete and changeToMany: answer stale and write nothing when it refuses', async () => {
    expect(await store.update(books, bookId, rename('New'), () => false)).toBe('stale')
    expect(await store.delete(books, bookId, () => false)).toBe('stale')
    expect(await store.changeToMany(authors, authorId, 'books', [], 'replace', () => false)).toBe('stale')
    expect(await store.find(books, bookId)).toMatchObject({
      attributes: { name: 'Stone' },
      toOne: { author: authorId },
    })
  })

  it('changeToMany: shows the expectation the members in id order', async () => {
    const collection = await store.create(collections, { attributes: { name: 'Shelf' }, toOne: {} })
    if (!collection.ok) throw new Error('collection not created')
    const shelf = collection.record.id
    const second = await store.create(books, { attributes: { name: 'Second' }, toOne: { author: authorId } })
    if (!second.ok) throw new Error('book not created')
    await store.changeToMany(collections, shelf, 'books', [second.record.id, bookId], 'add')
    const seen: (readonly Id[])[] = []
    await store.changeToMany(collections, shelf, 'books', [bookId], 'remove', (members) => {
      seen.push([...members])
      return true
    })
    expect(seen).toEqual([[bookId, second.record.id]])
  })

  it('reports a missing record as the write does, whatever the expectation', async () => {
    expect(await store.update(books, 999, rename('X'), () => false)).toBeNull()
    expect(await store.delete(books, 999, () => false)).toEqual({ status: 'not-found' })
    expect(await store.changeToMany(authors, 999, 'books', [], 'replace', () => false)).toEqual({
      status: 'not-found',
    })
  })

  it('checks inside the write: of two writes expecting the same state, the second sees the first', async () => {
    const before = await store.find(books, bookId)
    const unchanged = (current: StoredRecord) => current.attributes.name === before?.attributes.name
    // Both queued in the same turn: they share one transaction, one after the other.
    const results = await Promise.all([
      store.update(books, bookId, rename('First'), unchanged),
      store.update(books, bookId, rename('Second'), unchanged),
    ])
    expect(results[0]).toMatchObject({ ok: true })
    expect(results[1]).toBe('stale')
    expect((await store.find(books, bookId))?.attributes.name).toBe('First')
  })
})

describe('SqliteStore.version', () => {
  it('stays the same while nothing is written', async () => {
    const version = await store.version()
    await store.find(books, bookId)
    expect(await store.version()).toBe(version)
  })

  it('changes after each write this store commits', async () => {
    const before = await store.version()
    await store.update(books, bookId, rename('New'))
    const after = await store.version()
    expect(after).not.toBe(before)
    await store.delete(books, bookId)
    expect(await store.version()).not.toBe(after)
  })

  it('changes after another connection commits to the same file', async () => {
    const before = await store.version()
    const other = new Database(join(dir, 'catalogue.db'))
    try {
      other.run("UPDATE books SET name = 'Elsewhere'")
    } finally {
      other.close()
    }
    expect(await store.version()).not.toBe(before)
  })

  it('differs from one opening of the file to the next', async () => {
    const before = await store.version()
    await store.close()
    store = SqliteStore.open(join(dir, 'catalogue.db'), resources)
    expect(await store.version()).not.toBe(before)
  })

  it('is null on a read-only store, which cannot tell', async () => {
    const reader = SqliteStore.open(join(dir, 'catalogue.db'), resources, { readOnly: true })
    try {
      expect(await reader.version()).toBeNull()
    } finally {
      await reader.close()
    }
  })
})
