import { Database } from 'bun:sqlite'
import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { resources } from '../../src/resources/registry'
import { SqliteStore } from '../../src/store/sqlite'

// What SQLite adds to the store's version (what tags a streamed answer; see Store.version in
// src/store/store.ts): other connections' commits, reopening, read-only connections. Conditional
// writes and the version's change after this store's own writes are in the contract (test/store/contract).

const authors = resources.get('authors')
const books = resources.get('books')

let dir: string
let store: SqliteStore

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'catalogue-conditional-'))
  store = SqliteStore.open(join(dir, 'catalogue.db'), resources)
  const author = await store.create(authors, { attributes: { name: 'Ann' }, toOne: {} })
  if (!author.ok) throw new Error('author not created')
  const book = await store.create(books, { attributes: { name: 'Stone' }, toOne: { author: author.record.id } })
  if (!book.ok) throw new Error('book not created')
})

afterEach(async () => {
  await store.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('SqliteStore.version', () => {
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
