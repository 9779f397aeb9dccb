import { Database } from 'bun:sqlite'
import { afterAll, afterEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { migrate } from '../../src/store/sqlite/migrate'
import { sqliteMigrations } from '../../src/store/sqlite/migrations'
import { booksIn, csvOf, readDatabase, runCli, tempDatabase } from '../support/commands'
import { removeTempDirs, stopChildren } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

afterEach(stopChildren)
afterAll(removeTempDirs)

const BOOKS = csvOf([
  ['Dune', 'Frank Herbert', 'Dune'],
  ['Kindred', 'Octavia E. Butler', ''],
])

/** A database in a folder that does not exist yet, as a mistyped path names one, and a CSV file. */
function mistyped() {
  const { dir } = tempDatabase()
  const path = join(dir, 'no-such-folder', 'catalogue.db')
  const file = join(dir, 'books.csv')
  writeFileSync(file, BOOKS)
  return { dir, path, url: `sqlite://${path}`, file }
}

describe('catalogue import into a database that does not exist', () => {
  it('exits 2 with one line naming --create, and creates no file or folder', async () => {
    const { path, url, file } = mistyped()
    const run = await runCli(['import', file], { env: { DATABASE_URL: url } })
    expect(run.code).toBe(2)
    expect(run.lines).toEqual([
      `catalogue import: there is no catalogue at ${url}: check the database's name, or give --create to make a new one there`,
    ])
    expect(existsSync(join(path, '..'))).toBe(false)
  })

  it('counts an empty file (no catalogue in it) as none too', async () => {
    const { dir, file } = mistyped()
    const path = join(dir, 'empty.db')
    writeFileSync(path, '')
    const run = await runCli(['import', file], { env: { DATABASE_URL: `sqlite://${path}` } })
    expect(run.code).toBe(2)
    expect(run.lines[0]).toContain('give --create to make a new one there')
    expect(readFileSync(path).length).toBe(0)
  })

  it('creates it, folder and all, with --create', async () => {
    const { path, url, file } = mistyped()
    const run = await runCli(['import', '--create', file], { env: { DATABASE_URL: url } })
    expect(run.code).toBe(0)
    expect(run.lines[0]).toStartWith('imported 2 books (2 authors, 1 collection created)')
    expect(booksIn(path)).toEqual([
      { title: 'Dune', author: 'Frank Herbert', collection: 'Dune' },
      { title: 'Kindred', author: 'Octavia E. Butler', collection: null },
    ])
  })

  it('--dry-run checks the lines and counts as against an empty catalogue, and creates nothing, --create or not', async () => {
    const { path, url, file } = mistyped()
    for (const args of [
      ['import', '--dry-run', file],
      ['import', '--dry-run', '--create', file],
    ]) {
      const run = await runCli(args, { env: { DATABASE_URL: url } })
      expect(run.code).toBe(0)
      expect(run.lines[0]).toBe(
        `note: there is no catalogue at ${url}: the file is checked as against an empty one, and none is created`,
      )
      expect(run.lines[1]).toStartWith(
        'dry run: would import 2 books (2 authors, 1 collection to create), 0 already present, 0 bad lines in ',
      )
      expect(existsSync(join(path, '..'))).toBe(false)
    }
  })
})

describe('catalogue import --dry-run on a database', () => {
  it('neither migrates one whose schema is behind this build nor writes to it: exit 2, run catalogue migrate first', async () => {
    const { dir, url, path } = tempDatabase()
    mkdirSync(dir, { recursive: true })
    const db = new Database(path)
    migrate(db, sqliteMigrations.slice(0, 3))
    db.close()
    const before = readFileSync(path)
    const file = join(dir, 'books.csv')
    writeFileSync(file, BOOKS)
    const run = await runCli(['import', '--dry-run', file], { env: { DATABASE_URL: url } })
    expect(run.code).toBe(2)
    expect(run.lines).toEqual([
      `catalogue import: cannot open the database at ${url}: the database schema is at version 3, and this build needs ${sqliteMigrations.length}: run catalogue migrate first`,
    ])
    const versions = readDatabase(path, (read) => read.query('SELECT MAX(version) AS v FROM schema_migrations').get())
    expect(versions).toEqual({ v: 3 })
    expect(readFileSync(path).equals(before)).toBe(true)
  })
})
