import { Database } from 'bun:sqlite'
import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { copyFileSync, renameSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { START_OF_FEED } from '../../src/model/changes'
import { resources } from '../../src/resources/registry'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'
import { runCli, tempDatabase } from '../support/commands'
import { removeTempDirs } from '../support/process'

// The backup runs as a process of its own.
setDefaultTimeout(30_000)

afterAll(removeTempDirs)

/*
 * The SQLite change feed across copies of its file (docs/changes.md, "Restores, copies and
 * failovers"): an id is a row of one file, so a copy put in its place (a backup restored, a `cp`)
 * would hand out again the ids the file it came from gave for other changes. The feed remembers its
 * file: a position from before such a copy is 410, even once the copy's ids pass it.
 */

const authors = resources.get('authors')

async function addAuthor(store: SqliteStore, name: string): Promise<number> {
  const created = await store.create(authors, { attributes: { name }, toOne: {} })
  if (!created.ok) throw new Error('create failed')
  return created.record.id
}

async function latest(store: SqliteStore): Promise<string> {
  return (await store.changes.latest()) as string
}

async function after(store: SqliteStore, position: string): Promise<string[] | 'gone'> {
  const read = await store.changes.read({ after: position, types: null, size: 100 })
  return read.kind === 'gone' ? 'gone' : read.changes.map((c) => `${c.op} ${c.type}/${c.recordId}`)
}

/** Puts `copy` in the database's place, as an operator restoring it does (the old -wal and -shm go). */
function putInPlace(copy: string, path: string): void {
  rmSync(`${path}-wal`, { force: true })
  rmSync(`${path}-shm`, { force: true })
  renameSync(copy, path)
}

describe('the SQLite change feed across copies of its file', () => {
  it('keeps its ids across openings of the same file, from 1 on a new one', async () => {
    const { path } = tempDatabase()
    let store = SqliteStore.open(path, resources)
    await addAuthor(store, 'One')
    expect(await latest(store)).toBe('1')
    await store.close()
    store = SqliteStore.open(path, resources)
    try {
      const id = await addAuthor(store, 'Two')
      expect(await after(store, '1')).toEqual([`create authors/${id}`])
      expect(await latest(store)).toBe('2')
    } finally {
      await store.close()
    }
  })

  it('answers gone to every position from before a catalogue backup copy was put in its place, even once its ids pass them', async () => {
    const { path, url, dir } = tempDatabase()
    let store = SqliteStore.open(path, resources)
    await addAuthor(store, 'Before the backup')
    const early = await latest(store)
    const copy = join(dir, 'backup.db')
    expect((await runCli(['backup', copy], { env: { DATABASE_URL: url } })).code).toBe(0)
    for (let i = 0; i < 3; i++) await addAuthor(store, `After the backup ${i}`)
    const late = await latest(store)
    await store.close()

    putInPlace(copy, path)
    store = SqliteStore.open(path, resources)
    try {
      for (const held of [early, late, START_OF_FEED]) expect(await after(store, held)).toBe('gone')
      // The copy's ids pass the late position: still gone; the new changes come after the new start.
      const start = await latest(store)
      const made: number[] = []
      for (let i = 0; i < 5; i++) made.push(await addAuthor(store, `After the restore ${i}`))
      for (const held of [early, late]) expect(await after(store, held)).toBe('gone')
      expect(await after(store, start)).toEqual(made.map((id) => `create authors/${id}`))
    } finally {
      await store.close()
    }
  })

  it('answers gone to every position from before the file was copied over, and tells the opener', async () => {
    const { path, dir } = tempDatabase()
    let store = SqliteStore.open(path, resources)
    await addAuthor(store, 'One')
    await store.close()
    const copy = join(dir, 'copy.db')
    copyFileSync(path, copy)
    store = SqliteStore.open(path, resources)
    await addAuthor(store, 'Two')
    await addAuthor(store, 'Three')
    const held = await latest(store)
    await store.close()

    putInPlace(copy, path)
    let told = 0
    store = SqliteStore.open(path, resources, { onFeedRestart: () => told++ })
    try {
      expect(told).toBe(1)
      const id = await addAuthor(store, 'Four')
      expect(await after(store, held)).toBe('gone')
      expect(await after(store, '1')).toBe('gone')
      expect(await latest(store)).not.toBe(held)
      const feed = await store.changes.read({ after: null, types: null, size: 100 })
      expect(feed.kind === 'page' && feed.changes.map((c) => c.recordId)).toEqual([id])
    } finally {
      await store.close()
    }
    // Opened again, it is the file the feed recorded: nothing starts over.
    told = 0
    store = SqliteStore.open(path, resources, { onFeedRestart: () => told++ })
    await store.close()
    expect(told).toBe(0)
  })

  it('takes the file as its own where none was recorded: a database from before the feed recorded its file', async () => {
    const { path } = tempDatabase()
    let store = SqliteStore.open(path, resources)
    await addAuthor(store, 'One')
    await store.close()
    const raw = new Database(path)
    raw.run("UPDATE change_horizon SET history = ''")
    raw.close()
    store = SqliteStore.open(path, resources)
    try {
      expect(await after(store, '1')).toEqual([])
      expect(await latest(store)).toBe('1')
    } finally {
      await store.close()
    }
  })
})
