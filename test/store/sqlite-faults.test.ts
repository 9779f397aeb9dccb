import { Database } from 'bun:sqlite'
import { afterEach, beforeEach, describe, expect, it } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { StoreUnavailableError } from '../../src/store/faults'
import { sqliteFault } from '../../src/store/sqlite/faults'

let dir: string
let path: string
let opened: Database[]

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'catalogue-faults-'))
  path = join(dir, 'catalogue.db')
  opened = []
  const db = open()
  db.run('PRAGMA journal_mode = WAL')
  db.run('CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)')
  db.run("INSERT INTO things (name) VALUES ('one')")
})

afterEach(() => {
  for (const db of opened.reverse()) db.close()
  rmSync(dir, { recursive: true, force: true })
})

function open(options?: { readonly?: boolean }): Database {
  const db = new Database(path, options)
  opened.push(db)
  return db
}

/** What `work` throws: it must throw. */
function thrownBy(work: () => unknown): unknown {
  try {
    work()
  } catch (error) {
    return error
  }
  throw new Error('expected an error')
}

describe('sqliteFault', () => {
  it('is read-only for a write through a read-only connection', () => {
    const error = thrownBy(() => open({ readonly: true }).run("INSERT INTO things (name) VALUES ('two')"))
    expect(sqliteFault(error)).toMatchObject({ reason: 'read-only', code: 'SQLITE_READONLY', retryAfterSeconds: 5 })
  })

  it('is busy for a write lock another connection holds past the busy timeout', () => {
    open().run('BEGIN EXCLUSIVE')
    const waiting = open()
    waiting.run('PRAGMA busy_timeout = 0')
    const fault = sqliteFault(thrownBy(() => waiting.run('BEGIN IMMEDIATE')))
    expect(fault).toMatchObject({ reason: 'busy', code: 'SQLITE_BUSY', retryAfterSeconds: 1 })
    expect(fault?.message).toBe('database is locked')
    expect(fault?.cause).toBeInstanceOf(Error)
  })

  it('is corrupt for a file that is not a database', () => {
    const other = join(dir, 'other.db')
    writeFileSync(other, 'this is not an SQLite file, but it is long enough to have a header'.repeat(100))
    const error = thrownBy(() => new Database(other).query('SELECT * FROM sqlite_master').all())
    expect(sqliteFault(error)).toMatchObject({ reason: 'corrupt', code: 'SQLITE_NOTADB', retryAfterSeconds: 30 })
  })

  it('is unavailable for a file that cannot be opened', () => {
    const error = thrownBy(() => new Database(join(dir, 'missing', 'x.db'), { readonly: true }))
    expect(sqliteFault(error)).toMatchObject({ reason: 'unavailable', code: 'SQLITE_CANTOPEN' })
  })

  it('is null for what is our own mistake: bad SQL, a broken constraint, misuse, any other error', () => {
    const db = open()
    expect(sqliteFault(thrownBy(() => db.run('SELEC 1')))).toBeNull()
    expect(sqliteFault(thrownBy(() => db.run("INSERT INTO things (name) VALUES ('one')")))).toBeNull()
    expect(sqliteFault(thrownBy(() => db.run('COMMIT')))).toBeNull()
    expect(sqliteFault(new TypeError('undefined is not an object'))).toBeNull()
  })

  it('passes a StoreUnavailableError through as it is', () => {
    const fault = new StoreUnavailableError('full', 'SQLITE_FULL', 'database or disk is full')
    expect(sqliteFault(fault)).toBe(fault)
  })
})
