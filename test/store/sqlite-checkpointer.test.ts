import { Database } from 'bun:sqlite'
import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { resources } from '../../src/resources/registry'
import { CHECKPOINT_INTERVAL_MS, WalCheckpointer } from '../../src/store/sqlite/commits/checkpointer'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'

let dir: string
let path: string
let db: Database

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'catalogue-checkpoint-'))
  path = join(dir, 'test.db')
  db = new Database(path, { create: true, strict: true })
  db.run('PRAGMA journal_mode = WAL')
  db.run('CREATE TABLE pages (id INTEGER PRIMARY KEY, body BLOB NOT NULL)')
  db.run('PRAGMA wal_checkpoint(TRUNCATE)')
  // The service's writer tries its lock again on a timer; this one may wait in SQLite's handler.
  db.run('PRAGMA busy_timeout = 5000')
})

afterEach(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

const autocheckpoint = () =>
  (db.query('PRAGMA wal_autocheckpoint').get() as { wal_autocheckpoint: number }).wal_autocheckpoint
const insert = (rows: number) => {
  const statement = db.query('INSERT INTO pages (body) VALUES (randomblob(4000))')
  db.transaction(() => {
    for (let i = 0; i < rows; i++) statement.run()
  })()
}
/**
 * Rows of the database file alone, as it would be read without its WAL; -1 for a copy taken while
 * a checkpoint was writing into the file (torn: SQLite finds it malformed).
 */
function rowsInFile(): number {
  const copy = join(dir, 'file-only.db')
  copyFileSync(path, copy)
  const alone = new Database(copy, { readonly: true })
  try {
    return (alone.query('SELECT count(*) AS n FROM pages').get() as { n: number }).n
  } catch (error) {
    if ((error as { code?: string }).code === 'SQLITE_CORRUPT') return -1
    throw error
  } finally {
    alone.close()
    rmSync(copy, { force: true })
  }
}
/** The WAL header's checkpoint sequence number (bytes 12-15): one more each time the WAL starts over. */
async function walRestarts(): Promise<number> {
  const header = await Bun.file(`${path}-wal`).slice(0, 16).arrayBuffer()
  return new DataView(header).getUint32(12)
}
async function eventually(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20 * CHECKPOINT_INTERVAL_MS
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${20 * CHECKPOINT_INTERVAL_MS} ms: ${what}`)
    await Bun.sleep(10)
  }
}

describe('WalCheckpointer', () => {
  it("turns the writer's own checkpoints off once its thread is up, and copies commits into the file from there", async () => {
    const checkpointer = new WalCheckpointer(db, path)
    expect(await checkpointer.started).toBe(true)
    expect(autocheckpoint()).toBe(0)
    insert(20)
    // 20 pages: far below SQLite's own threshold, so only the thread can have copied them.
    expect(rowsInFile()).toBe(0)
    checkpointer.committed()
    await eventually(() => rowsInFile() === 20, 'the 20 rows in the database file')
    await checkpointer.close()
  })

  it('starts the WAL over again and again under a steady stream of commits, every row reaching the file', async () => {
    const checkpointer = new WalCheckpointer(db, path)
    expect(await checkpointer.started).toBe(true)
    insert(20)
    checkpointer.committed()
    const first = await walRestarts()
    // Commits of 20 pages, one every millisecond or two, until the WAL has been started over three
    // times: waited for, not timed, so that a slow disk under a loaded machine only makes it longer.
    let commits = 1
    const deadline = Date.now() + 100 * CHECKPOINT_INTERVAL_MS
    while ((await walRestarts()) < first + 3) {
      if (Date.now() > deadline)
        throw new Error(`the WAL was not started over 3 times within ${100 * CHECKPOINT_INTERVAL_MS} ms`)
      insert(20)
      checkpointer.committed()
      commits++
      await Bun.sleep(1)
    }
    checkpointer.committed()
    // Started over, it holds no more than the commits since: the WAL stays bounded.
    await eventually(() => rowsInFile() === commits * 20, 'every row in the database file')
    await checkpointer.close()
  })

  it("leaves the writer's own checkpoints on when its thread cannot open the database", async () => {
    const checkpointer = new WalCheckpointer(db, join(dir, 'missing.db'))
    expect(await checkpointer.started).toBe(false)
    expect(autocheckpoint()).toBe(1000)
    checkpointer.committed()
    await checkpointer.close()
  })
})

describe('SqliteStore with offloadDiskWaits', () => {
  it('closes its thread first, so that its own close checkpoints the WAL and removes it', async () => {
    db.close()
    const store = SqliteStore.open(join(dir, 'store.db'), resources, { offloadDiskWaits: true })
    await store.create(resources.get('authors'), { attributes: { name: 'Ursula K. Le Guin' }, toOne: {} })
    expect(existsSync(join(dir, 'store.db-wal'))).toBe(true)
    await store.close()
    expect(existsSync(join(dir, 'store.db-wal'))).toBe(false)
    db = new Database(join(dir, 'store.db'), { readonly: true })
    expect(db.query('SELECT name FROM authors').all()).toEqual([{ name: 'Ursula K. Le Guin' }])
  })
})
