import { Database } from 'bun:sqlite'
import { afterEach, beforeEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { migrate, useWal } from '../../src/store/sqlite/migrate'
import { sqliteMigrations } from '../../src/store/sqlite/migrations'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/*
 * Two processes on one file: the other one is a child process, since both functions block while
 * they wait for the lock it holds.
 */

let dir: string
let dbPath: string
let opened: Database[]

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'catalogue-migrate-'))
  dbPath = join(dir, 'catalogue.db')
  opened = []
})

afterEach(() => {
  for (const db of opened) db.close()
  rmSync(dir, { recursive: true, force: true })
})

function open(): Database {
  const db = new Database(dbPath, { create: true, strict: true })
  db.run('PRAGMA busy_timeout = 5000')
  opened.push(db)
  return db
}

/**
 * Runs `statements` in another process in one write transaction (BEGIN IMMEDIATE) and commits it
 * `holdMs` later; resolves once the lock is held, with the child's exit code to come.
 */
async function holdWriteLock(
  journalMode: string,
  statements: string[],
  holdMs: number,
): Promise<{ exited: Promise<number> }> {
  const script = `
    import { Database } from 'bun:sqlite'
    const db = new Database(${JSON.stringify(dbPath)})
    db.run('PRAGMA journal_mode = ${journalMode}')
    db.run('BEGIN IMMEDIATE')
    for (const sql of ${JSON.stringify(statements)}) db.run(sql)
    console.log('held')
    await Bun.sleep(${holdMs})
    db.run('COMMIT')
    db.close()
  `
  const child = Bun.spawn(['bun', '-e', script], { stdout: 'pipe', stderr: 'inherit' })
  const reader = child.stdout.getReader()
  const { value } = await reader.read()
  expect(new TextDecoder().decode(value)).toBe('held\n')
  reader.releaseLock()
  return { exited: child.exited }
}

describe('useWal', () => {
  it('switches a rollback-journal file to WAL although another process holds its write lock', async () => {
    // SQLite answers SQLITE_BUSY to this switch at once, without waiting out busy_timeout.
    const db = open()
    db.run('CREATE TABLE t (x)')
    const { exited } = await holdWriteLock('DELETE', ['INSERT INTO t VALUES (1)'], 300)
    useWal(db)
    expect(db.query('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' })
    expect(await exited).toBe(0)
  })
})

describe('migrate', () => {
  it('reads the version under the write lock: what another process committed meanwhile is not applied again', async () => {
    // The file is at version 0 and another process is in the middle of applying migration 1.
    const setup = open()
    useWal(setup)
    migrate(setup, [])
    const [first] = sqliteMigrations
    if (!first) throw new Error('no migrations')
    const { exited } = await holdWriteLock(
      'WAL',
      [first.sql, `INSERT INTO schema_migrations VALUES (${first.version}, 'by the other process', 'then')`],
      300,
    )
    const db = open()
    migrate(db, sqliteMigrations)
    expect(db.query('SELECT version, name FROM schema_migrations ORDER BY version').all()).toEqual([
      { version: first.version, name: 'by the other process' },
      ...sqliteMigrations.slice(1).map(({ version, name }) => ({ version, name })),
    ])
    expect(await exited).toBe(0)
  })
})
