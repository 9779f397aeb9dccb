import type { Database } from 'bun:sqlite'
import { afterEach, describe, expect, it } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { resources } from '../../src/resources/registry'
import { StoreUnavailableError } from '../../src/store/faults'
import { WalFlusher } from '../../src/store/sqlite/commits/wal-flush'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'

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

  it('cannot be made for a file that is not there', () => {
    expect(() => new WalFlusher(join(tempDir(), 'none.db-wal'))).toThrow('ENOENT')
  })

  it('fails every flush after one has failed, and refuses any after close', async () => {
    const dir = tempDir()
    const store = SqliteStore.open(join(dir, 'test.db'), resources)
    stores.push(store)
    await store.create(authors, { attributes: { name: 'A' }, toOne: {} })
    const flusher = new WalFlusher(join(dir, 'test.db-wal'))
    rmSync(join(dir, 'test.db-wal'))
    await expect(flusher.flush()).rejects.toThrow('ENOENT')
    expect(flusher.failed?.message).toContain('ENOENT')
    await expect(flusher.flush()).rejects.toThrow('ENOENT')
    await flusher.close()
    const other = new WalFlusher(join(dir, 'test.db'))
    await other.close()
    await expect(other.flush()).rejects.toThrow('closed')
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
    // The flusher is the group commit's (src/store/sqlite/commits/group-commit.ts).
    const own = (store as unknown as { commits: { flusher: WalFlusher } }).commits
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

  it('finds the WAL next to the file a link points to, as SQLite does', async () => {
    const dir = tempDir()
    mkdirSync(join(dir, 'real'))
    const real = SqliteStore.open(join(dir, 'real', 'test.db'), resources)
    await real.close()
    symlinkSync(join(dir, 'real', 'test.db'), join(dir, 'link.db'))
    const store = SqliteStore.open(join(dir, 'link.db'), resources, { durability: 'full', offloadDiskWaits: true })
    stores.push(store)
    expect(synchronousOf(store)).toBe(1)
    const written = await store.create(authors, { attributes: { name: 'Ada' }, toOne: {} })
    expect(written.ok).toBe(true)
    expect(existsSync(join(dir, 'real', 'test.db-wal'))).toBe(true)
  })

  it('refuses writes once it has begun to close, rather than meeting a closed connection', async () => {
    const store = SqliteStore.open(join(tempDir(), 'test.db'), resources, {
      durability: 'full',
      offloadDiskWaits: true,
    })
    const closing = store.close()
    const failure = await store.create(authors, { attributes: { name: 'Late' }, toOne: {} }).catch((error) => error)
    await closing
    expect(failure).toBeInstanceOf(StoreUnavailableError)
    expect(failure).toMatchObject({ reason: 'unavailable', code: 'STORE_CLOSING' })
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
    // The kernel may have dropped what it could not write: nothing more is written, and /ready says so.
    const refused = await store.create(authors, { attributes: { name: 'Linus' }, toOne: {} }).catch((error) => error)
    expect(refused).toMatchObject({ reason: 'io', code: 'WAL_FLUSH_FAILED' })
    expect((refused as Error).message).toContain('refused until the service is started again')
    await expect(store.ready()).rejects.toMatchObject({ code: 'WAL_FLUSH_FAILED' })
    // Grace was committed before her flush failed; Linus was never written.
    expect((await store.find(authors, 2))?.attributes.name).toBe('Grace')
    expect(await store.find(authors, 3)).toBeNull()
  })
})
