import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { copyFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { START_OF_FEED } from '../../src/model/changes'
import { resources } from '../../src/resources/registry'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'
import { csvOf, runCli, tempDatabase } from '../support/commands'
import { removeTempDirs } from '../support/process'

// The backup and the import run as processes of their own.
setDefaultTimeout(30_000)

afterAll(removeTempDirs)

/*
 * The SQLite change feed across copies of its file (docs/changes.md, "Restores, copies and
 * failovers"): a position is a row of the file. A copy put back in its place (however: `mv`, `cp`
 * over it in place, `rm` then `cp`) holds the rows up to when it was taken; a position handed out
 * after that is no row of it, and is gone (410) for good, even once the copy's ids pass it, since
 * each opening moves the next id past its own time. A position the copy holds goes on.
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

/**
 * A catalogue with one author (the copy is taken after it, at `early`), then three more (a
 * follower at `late`), closed; `takeCopy` makes the copy at its moment, its path returned.
 */
async function copiedCatalogue(takeCopy: (path: string, url: string, dir: string) => Promise<string>) {
  const { path, url, dir } = tempDatabase()
  let store = SqliteStore.open(path, resources)
  await addAuthor(store, 'Before the copy')
  const early = await latest(store)
  await store.close()
  const copy = await takeCopy(path, url, dir)
  store = SqliteStore.open(path, resources)
  for (let i = 0; i < 3; i++) await addAuthor(store, `After the copy ${i}`)
  const late = await latest(store)
  await store.close()
  return { path, url, dir, copy, early, late }
}

/** Opens the file put back and checks what the follower at each position gets. */
async function expectFollowers(path: string, early: string, late: string): Promise<void> {
  const store = SqliteStore.open(path, resources)
  try {
    expect(await after(store, late)).toBe('gone')
    // The copy's ids pass the late position: it stays gone; the early one sees every new change.
    const made: number[] = []
    for (let i = 0; i < 5; i++) made.push(await addAuthor(store, `After the restore ${i}`))
    expect(await after(store, late)).toBe('gone')
    expect(await after(store, early)).toEqual(made.map((id) => `create authors/${id}`))
    expect(await after(store, START_OF_FEED)).toEqual(['create authors/1', ...made.map((id) => `create authors/${id}`)])
  } finally {
    await store.close()
  }
}

const copyWithCp = async (path: string, _url: string, dir: string) => {
  const copy = join(dir, 'copy.db')
  copyFileSync(path, copy)
  return copy
}

describe('the SQLite change feed across copies of its file', () => {
  it('starts a new file at 1, and keeps every position across openings of the same file', async () => {
    const { path } = tempDatabase()
    let store = SqliteStore.open(path, resources)
    await addAuthor(store, 'One')
    expect(await latest(store)).toBe('1')
    await store.close()
    store = SqliteStore.open(path, resources)
    try {
      const id = await addAuthor(store, 'Two')
      expect(await after(store, '1')).toEqual([`create authors/${id}`])
      expect(await after(store, START_OF_FEED)).toEqual(['create authors/1', `create authors/${id}`])
    } finally {
      await store.close()
    }
  })

  it('answers gone, for good, to a position the file gave after a catalogue backup copy that was moved in its place', async () => {
    const { path, early, late } = await copiedCatalogue(async (source, url, dir) => {
      const copy = join(dir, 'backup.db')
      expect((await runCli(['backup', copy], { env: { DATABASE_URL: url } })).code).toBe(0)
      expect(source).not.toBe(copy)
      return copy
    })
    rmSync(`${path}-wal`, { force: true })
    rmSync(`${path}-shm`, { force: true })
    renameSync(join(path, '..', 'backup.db'), path)
    await expectFollowers(path, early, late)
  })

  it('answers gone to it after a copy was written over the file in place (the same inode)', async () => {
    const { path, copy, early, late } = await copiedCatalogue(copyWithCp)
    const inode = statSync(path).ino
    copyFileSync(copy, path)
    expect(statSync(path).ino).toBe(inode)
    await expectFollowers(path, early, late)
  })

  it('answers gone to it after the file was removed and a copy put at its path', async () => {
    const { path, copy, early, late } = await copiedCatalogue(copyWithCp)
    rmSync(path)
    copyFileSync(copy, path)
    await expectFollowers(path, early, late)
  })

  it('answers gone to it when a command wrote to the copy before the service opened it', async () => {
    const { path, url, dir, copy, early, late } = await copiedCatalogue(copyWithCp)
    copyFileSync(copy, path)
    const file = join(dir, 'books.csv')
    writeFileSync(file, csvOf([['A book', 'An imported author', '']]))
    expect((await runCli(['import', file], { env: { DATABASE_URL: url } })).code).toBe(0)
    const store = SqliteStore.open(path, resources)
    try {
      expect(await after(store, late)).toBe('gone')
      const imported = await after(store, early)
      expect(imported).not.toBe('gone')
      expect((imported as string[]).length).toBeGreaterThan(0)
    } finally {
      await store.close()
    }
  })
})
