import { Database } from 'bun:sqlite'
import { afterAll, afterEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { existsSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  booksIn,
  countsIn,
  csvOf,
  readDatabase,
  runCli,
  runInTerminal,
  startService,
  tempDatabase,
  withStore,
} from '../support/commands'
import { removeTempDirs, stopChildren, WAIT_MS } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

afterEach(stopChildren)
afterAll(removeTempDirs)

const JSON_API = 'application/vnd.api+json'

/** A database of `books` books (by 100 authors, in 10 collections), imported with the import command. */
async function seededDatabase(books: number) {
  const database = tempDatabase()
  const file = join(database.dir, 'seed.csv')
  const rows = Array.from({ length: books }, (_, i) => [`Seeded book ${i}`, `Author ${i % 100}`, `Shelf ${i % 10}`])
  writeFileSync(file, csvOf(rows))
  const env = { DATABASE_URL: database.url }
  const run = await runCli(['import', '--create', file], { env, timeoutMs: WAIT_MS * 3 })
  if (run.code !== 0) throw new Error(`seeding failed: ${run.stderr}`)
  return { ...database, env }
}

/** What every backup must be: a sound SQLite file, foreign keys and search indexes whole. */
function expectSound(path: string): void {
  const db = new Database(path)
  try {
    expect(db.query('PRAGMA integrity_check').all()).toEqual([{ integrity_check: 'ok' }])
    expect(db.query('PRAGMA foreign_key_check').all()).toEqual([])
    // FTS5's own check: it throws when an index does not match its table.
    for (const index of ['authors_search', 'book_collections_search', 'books_search']) {
      db.run(`INSERT INTO ${index} (${index}) VALUES ('integrity-check')`)
    }
  } finally {
    db.close()
  }
}

describe('catalogue backup FILE', () => {
  it('copies the database while the service writes to it: sound, with every write acknowledged before it began, and the service opens it', async () => {
    const source = await seededDatabase(30_000)
    const service = await startService(source.env)
    const target = join(source.dir, 'backup.db')

    // Writers create authors through the API without pause, before, during and after the backup.
    const acknowledged: { id: string; name: string }[] = []
    const failures: string[] = []
    let stop = false
    let slowest = 0
    const writer = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const name = `Writer ${w} author ${i}`
        const started = performance.now()
        const response = await fetch(`${service.api}/authors`, {
          method: 'POST',
          headers: { accept: JSON_API, 'content-type': JSON_API },
          body: JSON.stringify({ data: { type: 'authors', attributes: { name } } }),
          signal: AbortSignal.timeout(WAIT_MS),
        })
        const text = await response.text()
        slowest = Math.max(slowest, performance.now() - started)
        if (response.status === 201) acknowledged.push({ id: JSON.parse(text).data.id, name })
        else failures.push(`${response.status} ${text}`)
      }
    }
    const writers = [0, 1, 2, 3].map(writer)
    try {
      while (acknowledged.length < 20) await Bun.sleep(5)
      const before = acknowledged.slice()
      const backup = await runCli(['backup', target], { env: source.env, timeoutMs: WAIT_MS * 3 })
      const during = acknowledged.length - before.length
      stop = true
      await Promise.all(writers)

      expect(backup.code).toBe(0)
      expect(backup.lines).toEqual([
        expect.stringMatching(new RegExp(`^backed up ${source.url} to ${target} \\([\\d.]+ [KM]B\\) in \\d+\\.\\d s$`)),
      ])
      // The service went on answering writes, none of them refused, while the backup ran.
      expect(failures).toEqual([])
      expect(during).toBeGreaterThan(0)
      console.log(
        `backup: ${during} writes acknowledged while it ran; the slowest write took ${Math.round(slowest)} ms`,
      )

      expectSound(target)
      const names = readDatabase(
        target,
        (db) =>
          new Map(
            db
              .query<{ id: number; name: string }, []>('SELECT id, name FROM authors')
              .all()
              .map((a) => [String(a.id), a.name]),
          ),
      )
      for (const { id, name } of before) expect(names.get(id)).toBe(name)
      expect(countsIn(target).books).toBe(30_000)
    } finally {
      stop = true
      await Promise.all(writers)
    }

    // The copy is a database the service starts on and answers from, searches included.
    const restored = await startService({ DATABASE_URL: `sqlite://${target}` })
    const first = acknowledged[0] as { id: string; name: string }
    const author = await fetch(`${restored.api}/authors/${first.id}`, { headers: { accept: JSON_API } })
    expect(author.status).toBe(200)
    expect(((await author.json()) as { data: { attributes: { name: string } } }).data.attributes.name).toBe(first.name)
    const found = await fetch(`${restored.api}/books?filter[search]=Seeded%20299&page[size]=5`, {
      headers: { accept: JSON_API },
    })
    expect(found.status).toBe(200)
    const titles = ((await found.json()) as { data: { attributes: { name: string } }[] }).data.map(
      (b) => b.attributes.name,
    )
    expect(titles).toContain('Seeded book 299')
  }, 90_000)

  it('copies a database no service has open, and leaves no partial file', async () => {
    const source = await seededDatabase(100)
    const target = join(source.dir, 'copy.db')
    const run = await runCli(['backup', target], { env: source.env })
    expect(run.code).toBe(0)
    expectSound(target)
    expect(booksIn(target)).toEqual(booksIn(source.path))
    expect(readdirSync(source.dir).filter((name) => name.includes('partial'))).toEqual([])
  })

  it('refuses to replace an existing FILE without --force (exit 2), and replaces it with --force', async () => {
    const source = await seededDatabase(10)
    const target = join(source.dir, 'backup.db')
    writeFileSync(target, 'an older backup')
    const refused = await runCli(['backup', target], { env: source.env })
    expect(refused.code).toBe(2)
    expect(refused.lines).toEqual([`catalogue backup: ${target} already exists: give --force to replace it`])
    expect(readFileSync(target, 'utf8')).toBe('an older backup')

    const forced = await runCli(['backup', '--force', target], { env: source.env })
    expect(forced.code).toBe(0)
    expectSound(target)
    expect(countsIn(target).books).toBe(10)
  })

  it('takes --database-url over DATABASE_URL', async () => {
    const source = await seededDatabase(3)
    const target = join(source.dir, 'flag.db')
    const run = await runCli(['backup', '--database-url', source.url, target], {
      env: { DATABASE_URL: 'sqlite:///none/x.db' },
    })
    expect(run.code).toBe(0)
    expect(countsIn(target).books).toBe(3)
  })
})

describe('catalogue backup failures', () => {
  it('exits 1 and leaves nothing at FILE when the copy fails (the database is not an SQLite file)', async () => {
    const database = tempDatabase()
    writeFileSync(database.path, 'not a database, only text that is long enough to be read as a header '.repeat(20))
    const target = join(database.dir, 'backup.db')
    const run = await runCli(['backup', target], { env: { DATABASE_URL: database.url } })
    expect(run.code).toBe(1)
    expect(run.lines).toEqual([expect.stringMatching(new RegExp(`^catalogue backup: cannot copy ${database.url}: .+`))])
    expect(existsSync(target)).toBe(false)
    expect(readdirSync(database.dir).filter((name) => name.includes('partial'))).toEqual([])
  })

  it.each([
    {
      name: 'no FILE',
      args: [],
      url: 'sqlite:///tmp/x.db',
      message: 'needs the FILE to write the copy to (see catalogue backup --help)',
    },
    {
      name: 'a PostgreSQL URL',
      args: ['b.db'],
      url: 'postgres://localhost/catalogue',
      message:
        "backup supports sqlite:// databases only (DATABASE_URL is postgres://...): use catalogue export, the portable backup that catalogue import restores, or the database's own tools (pg_dump)",
    },
    {
      name: 'an in-memory database',
      args: ['b.db'],
      url: 'sqlite://:memory:',
      message: 'sqlite://:memory: lives inside one process only: there is no file to back up',
    },
    {
      name: 'an unknown option',
      args: ['--bogus', 'b.db'],
      url: 'sqlite:///tmp/x.db',
      message: "Unknown option '--bogus' (see catalogue backup --help)",
    },
  ])('exits 2 with one line for $name', async ({ args, url, message }) => {
    const run = await runCli(['backup', ...args], { env: { DATABASE_URL: url } })
    expect(run.code).toBe(2)
    expect(run.lines).toEqual([`catalogue backup: ${message}`])
  })

  it('exits 2 for a database that does not exist, and creates none', async () => {
    const database = tempDatabase()
    const run = await runCli(['backup', join(database.dir, 'b.db')], { env: { DATABASE_URL: database.url } })
    expect(run.code).toBe(2)
    expect(run.lines).toEqual([`catalogue backup: there is no database at ${database.url}`])
    expect(readdirSync(database.dir)).toEqual([])
  })

  it('exits 2 for FILE in a folder that does not exist, or FILE that is the database itself', async () => {
    const database = tempDatabase()
    await withStore(database.path)
    const env = { DATABASE_URL: database.url }
    const missing = await runCli(['backup', join(database.dir, 'none', 'b.db')], { env })
    expect(missing.code).toBe(2)
    expect(missing.lines).toEqual([`catalogue backup: there is no folder ${join(database.dir, 'none')}`])
    const link = join(database.dir, 'link.db')
    symlinkSync(database.path, link)
    for (const target of [database.path, link]) {
      const itself = await runCli(['backup', '--force', target], { env })
      expect(itself.code).toBe(2)
      expect(itself.lines).toEqual([`catalogue backup: ${target} is the database itself`])
    }
    expect(countsIn(database.path)).toEqual({ authors: 0, collections: 0, books: 0 })
  })
})

describe('catalogue backup progress', () => {
  it('draws a progress bar on a terminal, then the summary line', async () => {
    const source = await seededDatabase(2000)
    const target = join(source.dir, 'backup.db')
    const { code, output } = await runInTerminal(['backup', target], { env: source.env })
    expect(code).toBe(0)
    expect(output).toMatch(/backing up \[#{30}\] 100% {2}[\d.]+ [KM]B \/ [\d.]+ [KM]B/)
    expect(output).toContain(`backed up ${source.url} to ${target}`)
  })
})

describe('catalogue backup --help', () => {
  it('prints the usage and the options, and exits 0', async () => {
    const run = await runCli(['backup', '--help'])
    expect(run.code).toBe(0)
    for (const word of ['Usage: catalogue backup [options] FILE', '--force', '--database-url', 'DATABASE_URL']) {
      expect(run.stdout).toContain(word)
    }
  })
})
