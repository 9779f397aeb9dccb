import { Database } from 'bun:sqlite'
import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { linkSync, mkdtempSync, renameSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { resources } from '../../src/resources/registry'
import { GroupCommit } from '../../src/store/sqlite/commits/group-commit'
import { FileGuard, fileIdentity } from '../../src/store/sqlite/file-guard'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'

/*
 * A SQLite file replaced (a copy moved over it) or removed while a connection has it open: the
 * connection would go on reading the old file and committing into the WAL that now pairs with the
 * new one. Real files, real connections, real renames.
 */

let dir: string
let path: string
let opened: { close(): unknown }[]

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'catalogue-replaced-'))
  path = join(dir, 'catalogue.db')
  opened = []
})

afterEach(async () => {
  for (const each of opened.reverse()) await each.close()
  rmSync(dir, { recursive: true, force: true })
})

/** A connection in WAL mode with a table of names, as the service's file is. */
function openFile(at = path): Database {
  const db = new Database(at, { create: true, strict: true })
  opened.push(db)
  db.run('PRAGMA journal_mode = WAL')
  db.run('CREATE TABLE IF NOT EXISTS names (name TEXT NOT NULL)')
  return db
}

/** A copy of the file as it is now (VACUUM INTO, as `catalogue backup` makes it). */
function copyOf(db: Database): string {
  const copy = join(dir, 'copy.db')
  db.run(`VACUUM INTO '${copy}'`)
  return copy
}

/** The copy moved over the file. */
function replaceWithCopy(db: Database): void {
  renameSync(copyOf(db), path)
}

function namesIn(at: string): string[] {
  const db = new Database(at, { readonly: true })
  try {
    return db
      .query<{ name: string }, []>('SELECT name FROM names ORDER BY rowid')
      .all()
      .map((row) => row.name)
  } finally {
    db.close()
  }
}

const walSize = () => statSync(`${path}-wal`).size

describe('GroupCommit over a file replaced while its batch runs', () => {
  it('rolls the whole batch back and fails each write of it as replaced (503): nothing reaches either file', async () => {
    const db = openFile()
    db.run("INSERT INTO names VALUES ('before')")
    // A second name for the old file, to read it once it is no longer at the path.
    linkSync(path, join(dir, 'old.db'))
    const guard = new FileGuard(db, path)
    const commits = new GroupCommit(db, 1000, guard)
    opened.push({ close: () => commits.close().then(() => guard.close()) })

    const copy = copyOf(db)
    // Two writes of one batch; the file is replaced while the second runs, before the COMMIT.
    const first = commits.write(() => db.run("INSERT INTO names VALUES ('first')"))
    const second = commits.write(() => {
      db.run("INSERT INTO names VALUES ('second')")
      renameSync(copy, path)
    })
    const outcomes = await Promise.allSettled([first, second])
    for (const outcome of outcomes) {
      expect(outcome).toMatchObject({
        status: 'rejected',
        reason: { reason: 'replaced', code: 'DATABASE_FILE_REPLACED' },
      })
    }
    // And every write after it, without a BEGIN.
    await expect(commits.write(() => db.run("INSERT INTO names VALUES ('third')"))).rejects.toMatchObject({
      reason: 'replaced',
    })

    await commits.close()
    guard.close()
    expect(namesIn(join(dir, 'old.db'))).toEqual(['before'])
    expect(namesIn(path)).toEqual(['before'])
  })
})

describe('SqliteStore over a file replaced or removed', () => {
  it('refuses every read and write once the file is gone, and for good when it is put back', async () => {
    const store = SqliteStore.open(path, resources)
    opened.push(store)
    const authors = resources.get('authors')
    await store.create(authors, { attributes: { name: 'Before' }, toOne: {} })
    renameSync(path, join(dir, 'aside.db'))

    await expect(store.create(authors, { attributes: { name: 'After' }, toOne: {} })).rejects.toMatchObject({
      reason: 'replaced',
    })
    await expect(store.find(authors, 1)).rejects.toMatchObject({ reason: 'replaced' })
    await expect(store.ready()).rejects.toMatchObject({ reason: 'replaced' })
    renameSync(join(dir, 'aside.db'), path)
    // Put back, it is still refused: what happened to the file meanwhile only a restart can tell.
    await expect(store.find(authors, 1)).rejects.toMatchObject({ reason: 'replaced' })
    await expect(store.version()).rejects.toMatchObject({ reason: 'replaced' })
  })

  it('refuses to open read-only on another file than the one the service opened, and opens on that one', async () => {
    const store = SqliteStore.open(path, resources)
    opened.push(store)
    const identity = store.identity as string
    expect(identity).toBe(fileIdentity(path) as string)
    const reader = SqliteStore.open(path, resources, { readOnly: true, sameFileAs: identity })
    opened.push(reader)
    expect(await reader.version()).toBe(await store.version())

    const other = join(dir, 'other.db')
    await SqliteStore.open(other, resources).close()
    renameSync(other, path)
    expect(() => SqliteStore.open(path, resources, { readOnly: true, sameFileAs: identity })).toThrow(
      'the database file was replaced or removed while the service runs: the service must be restarted',
    )
  })
})

describe('an import open on a file that is replaced', () => {
  it('adds no batch, and once closed has written nothing more into the WAL the new file pairs with', async () => {
    const store = SqliteStore.open(path, resources)
    opened.push(store)
    const started = store.openImport({ dryRun: false })
    // Every frame in the file, so that a connection to the new file reads that file alone.
    const raw = new Database(path)
    raw.run('PRAGMA wal_checkpoint(PASSIVE)')
    replaceWithCopy(raw)
    raw.close()
    // Another process's connection to the new file: the WAL is left as it is, and must stay so.
    const other = new Database(path, { readonly: true })
    opened.push(other)
    other.query('SELECT count(*) FROM books').get()
    const before = walSize()

    await expect(started.add([{ title: 'After', author: 'Someone', collection: null }])).rejects.toMatchObject({
      reason: 'replaced',
    })
    await started.close()
    expect(walSize()).toBe(before)
  })
})

describe("a replaced file's WAL", () => {
  it('is emptied into the old file once the swap is seen: the new file opens as it was put there', async () => {
    const db = openFile()
    for (let i = 0; i < 50; i++) db.run('INSERT INTO names VALUES (?)', [`old ${i}`])
    linkSync(path, join(dir, 'old.db'))
    replaceWithCopy(db)
    db.run("INSERT INTO names VALUES ('after the copy')")
    expect(walSize()).toBeGreaterThan(0)

    const guard = new FileGuard(db, path)
    expect(guard.fault()?.reason).toBe('replaced')
    await Bun.sleep(10)
    expect(walSize()).toBe(0)
    guard.close()
    expect(namesIn(path)).toHaveLength(50)
    expect(namesIn(join(dir, 'old.db')).at(-1)).toBe('after the copy')
  })

  it('is emptied as soon as a read of the old file that held it is done', async () => {
    const db = openFile()
    for (let i = 0; i < 50; i++) db.run('INSERT INTO names VALUES (?)', [`old ${i}`])
    const reader = new Database(path, { readonly: true })
    opened.push(reader)
    reader.run('BEGIN')
    reader.query('SELECT count(*) FROM names').get()
    replaceWithCopy(db)

    const guard = new FileGuard(db, path)
    expect(guard.fault()?.reason).toBe('replaced')
    await Bun.sleep(10)
    expect(walSize()).toBeGreaterThan(0)
    reader.run('COMMIT')
    const deadline = Date.now() + 5000
    while (walSize() > 0 && Date.now() < deadline) await Bun.sleep(20)
    expect(walSize()).toBe(0)
    guard.close()
  })

  it('is left as SQLite leaves it while another connection has the new file open: it may hold its commits', async () => {
    const db = openFile()
    for (let i = 0; i < 50; i++) db.run('INSERT INTO names VALUES (?)', [`old ${i}`])
    // Every frame in the file: a connection to the new one then reads the file alone.
    db.run('PRAGMA wal_checkpoint(PASSIVE)')
    replaceWithCopy(db)
    const other = new Database(path, { readonly: true })
    opened.push(other)
    expect(other.query('SELECT count(*) AS n FROM names').get()).toEqual({ n: 50 })
    const before = walSize()

    const guard = new FileGuard(db, path)
    expect(guard.fault()?.reason).toBe('replaced')
    await Bun.sleep(10)
    guard.close()
    expect(walSize()).toBe(before)
  })
})
