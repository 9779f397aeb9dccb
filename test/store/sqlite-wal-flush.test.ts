import type { Database } from 'bun:sqlite'
import { afterEach, describe, expect, it } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { resources } from '../../src/resources/registry'
import { StoreUnavailableError } from '../../src/store/faults'
import { SqliteStore } from '../../src/store/sqlite'
import { WalFlusher } from '../../src/store/sqlite-wal-flush'

const dirs: string[] = []
const stores: SqliteStore[] = []

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close().catch(() => {})
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'catalogue-wal-flush-'))
  dirs.push(dir)
  return dir
}

const authors = resources.get('authors')
const synchronousOf = (store: SqliteStore) =>
  (store as unknown as { db: Database }).db.query<{ synchronous: number }, []>('PRAGMA synchronous').get()?.synchronous

describe('WalFlusher', () => {
  it('flushes the file; commits made while a flush is under way share the next one', async () => {
    const dir = tempDir()
    const store = SqliteStore.open(join(dir, 'test.db'), resources)
    stores.push(store)
    await store.create(authors, { attributes: { name: 'A' }, toOne: {} })
    const flusher = new WalFlusher(join(dir, 'test.db-wal'))
    const first = flusher.flush()
    const second = flusher.flush()
    const third = flusher.flush()
    expect(second).not.toBe(first)
    expect(third).toBe(second)
    await Promise.all([first, second, third])
    // None under way: the next flush starts at once.
    const fourth = flusher.flush()
    expect(fourth).not.toBe(third)
    await fourth
    flusher.close()
  })

  it('fails when the file is not there', async () => {
    const flusher = new WalFlusher(join(tempDir(), 'none.db-wal'))
    await expect(flusher.flush()).rejects.toThrow('ENOENT')
  })
})

describe('SqliteStore at durability full with offloadDiskWaits', () => {
  it('commits as NORMAL does, and answers a write once the WAL is flushed off the event loop', async () => {
    const store = SqliteStore.open(join(tempDir(), 'test.db'), resources, {
      durability: 'full',
      offloadDiskWaits: true,
    })
    stores.push(store)
    expect(synchronousOf(store)).toBe(1)
    const written = await store.create(authors, { attributes: { name: 'Ada' }, toOne: {} })
    expect(written.ok).toBe(true)
    // The flush held back: the write is committed (another connection would read it) but not answered.
    const own = store as unknown as { flusher: WalFlusher }
    const real = own.flusher
    let release = () => {}
    own.flusher = Object.assign(Object.create(real), {
      flush: () => real.flush().then(() => new Promise<void>((resolve) => (release = resolve))),
    })
    let answered = false
    const next = store.create(authors, { attributes: { name: 'Grace' }, toOne: {} }).then(() => {
      answered = true
    })
    await Bun.sleep(50)
    expect(answered).toBe(false)
    release()
    await next
    expect(answered).toBe(true)
    own.flusher = real
    // Without offloadDiskWaits SQLite flushes inside COMMIT itself.
    const plain = SqliteStore.open(join(tempDir(), 'plain.db'), resources, { durability: 'full' })
    stores.push(plain)
    expect(synchronousOf(plain)).toBe(2)
  })

  it('fails a write whose flush fails as a fault of the disk (503), saying it may be lost', async () => {
    const dir = tempDir()
    const store = SqliteStore.open(join(dir, 'test.db'), resources, { durability: 'full', offloadDiskWaits: true })
    stores.push(store)
    await store.create(authors, { attributes: { name: 'Ada' }, toOne: {} })
    // The WAL taken away under the running store: its flush cannot find the file.
    rmSync(join(dir, 'test.db-wal'))
    const failure = await store.create(authors, { attributes: { name: 'Grace' }, toOne: {} }).catch((error) => error)
    expect(failure).toBeInstanceOf(StoreUnavailableError)
    expect(failure).toMatchObject({ reason: 'io', code: 'WAL_FLUSH_FAILED', retryAfterSeconds: 5 })
    expect((failure as Error).message).toContain('may be lost')
  })
})
