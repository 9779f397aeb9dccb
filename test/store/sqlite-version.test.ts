import { Database } from 'bun:sqlite'
import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { resources } from '../../src/resources/registry'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'

// What SQLite adds to the store's version (what tags a streamed answer; see Store.version in
// src/store/store.ts): other connections' commits, every connection alike (the workers of
// --workers, read-only ones), a new generation each start. Conditional writes and the version's
// change after this store's own writes are in the contract (test/store/contract).

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

  it("changes when a row is written with a connection of its own (an operator's sqlite3 shell)", async () => {
    const before = await store.version()
    const other = new Database(join(dir, 'catalogue.db'))
    try {
      other.run("INSERT INTO book_collections (name) VALUES ('Shelf')")
      expect(await store.version()).not.toBe(before)
      const between = await store.version()
      other.run("DELETE FROM book_collections WHERE name = 'Shelf'")
      expect(await store.version()).not.toBe(between)
    } finally {
      other.close()
    }
  })

  it('is the same for every store open on the file, read-only ones included, before and after a write', async () => {
    const second = SqliteStore.open(join(dir, 'catalogue.db'), resources)
    const reader = SqliteStore.open(join(dir, 'catalogue.db'), resources, { readOnly: true })
    try {
      const now = await store.version()
      expect(await second.version()).toBe(now)
      expect(await reader.version()).toBe(now)
      const written = await second.create(authors, { attributes: { name: 'Bea' }, toOne: {} })
      expect(written.ok).toBe(true)
      const after = await second.version()
      expect(after).not.toBe(now)
      expect(await store.version()).toBe(after)
      expect(await reader.version()).toBe(after)
    } finally {
      await second.close()
      await reader.close()
    }
  })

  it('does not change with a write that is rolled back', async () => {
    const before = await store.version()
    const other = new Database(join(dir, 'catalogue.db'))
    try {
      other.run('BEGIN')
      other.run("UPDATE books SET name = 'Undone'")
      other.run('ROLLBACK')
    } finally {
      other.close()
    }
    expect(await store.version()).toBe(before)
  })

  it('takes a new generation at each start: a file put back from a copy never gives a tag given before', async () => {
    const path = join(dir, 'catalogue.db')
    await store.close()
    const copy = join(dir, 'copy.db')
    // The copy, as a backup would keep it; then one more write, and the copy is put back.
    const backup = new Database(path)
    backup.run(`VACUUM INTO '${copy}'`)
    backup.close()
    store = SqliteStore.open(path, resources, { newGeneration: true })
    const written = await store.create(authors, { attributes: { name: 'Lost' }, toOne: {} })
    expect(written.ok).toBe(true)
    const tagged = await store.version()
    await store.close()
    rmSync(path)
    rmSync(`${path}-wal`, { force: true })
    rmSync(`${path}-shm`, { force: true })
    Bun.spawnSync(['cp', copy, path])
    store = SqliteStore.open(path, resources, { newGeneration: true })
    const rewritten = await store.create(authors, { attributes: { name: 'Other' }, toOne: {} })
    expect(rewritten.ok).toBe(true)
    // The count of changes is back where it was when the lost write was tagged; the tag is not.
    expect((await store.version())?.split('.')[1]).toBe(tagged?.split('.')[1])
    expect(await store.version()).not.toBe(tagged)
  })

  it('keeps its generation for an opening that is not a start of the service: a command, a worker', async () => {
    const before = await store.version()
    const command = SqliteStore.open(join(dir, 'catalogue.db'), resources)
    await command.close()
    expect(await store.version()).toBe(before)
  })

  it('makes its row again at a start if it was deleted, and gives no tag meanwhile', async () => {
    const other = new Database(join(dir, 'catalogue.db'))
    try {
      other.run('DELETE FROM data_version')
    } finally {
      other.close()
    }
    expect(await store.version()).toBeNull()
    const started = SqliteStore.open(join(dir, 'catalogue.db'), resources, { newGeneration: true })
    try {
      expect(await started.version()).toMatch(/^[0-9a-f]{16}\.0$/)
    } finally {
      await started.close()
    }
  })
})
