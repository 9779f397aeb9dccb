import { afterAll, afterEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { EXPORT_BATCH_SIZE } from '../../src/commands/export'
import {
  booksIn,
  CLI,
  countsIn,
  csvOf,
  REPO,
  runCli,
  runInTerminal,
  tempDatabase,
  withStore,
} from '../support/commands'
import { removeTempDirs, spawnChild, stopChildren, WAIT_MS } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

afterEach(stopChildren)
afterAll(removeTempDirs)

/** A database holding the books of `rows` (title, author, collection or ''), imported with the import command. */
async function databaseWith(rows: readonly (readonly string[])[]) {
  const database = tempDatabase()
  const file = join(database.dir, 'seed.csv')
  writeFileSync(file, csvOf(rows))
  const env = { DATABASE_URL: database.url }
  const run = await runCli(['import', '--create', file], { env, timeoutMs: WAIT_MS * 3 })
  if (run.code !== 0) throw new Error(`seeding failed: ${run.stderr}`)
  return { ...database, env }
}

function parseLines(text: string): unknown[] {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line))
}

describe('catalogue export', () => {
  it('writes the first line and a line per record to stdout, each type in id order, and sums them up on stderr', async () => {
    const { path, env } = await databaseWith([
      ['Dune', 'Frank Herbert', 'Dune'],
      ['Kindred', 'Octavia E. Butler', ''],
    ])
    const run = await runCli(['export'], { env })
    expect(run.code).toBe(0)
    expect(run.stdout).toBe(
      '{"format":"library-catalogue-export","version":1,"types":{"authors":{"records":2,"lastId":2},"book_collections":{"records":1,"lastId":1},"books":{"records":2,"lastId":2}}}\n' +
        '{"type":"authors","id":"1","attributes":{"name":"Frank Herbert"}}\n' +
        '{"type":"authors","id":"2","attributes":{"name":"Octavia E. Butler"}}\n' +
        '{"type":"book_collections","id":"1","attributes":{"name":"Dune"}}\n' +
        '{"type":"books","id":"1","attributes":{"name":"Dune"},"relationships":{"author":{"data":{"type":"authors","id":"1"}},"book_collection":{"data":{"type":"book_collections","id":"1"}}}}\n' +
        '{"type":"books","id":"2","attributes":{"name":"Kindred"},"relationships":{"author":{"data":{"type":"authors","id":"2"}},"book_collection":{"data":null}}}\n',
    )
    expect(run.lines).toEqual([
      expect.stringMatching(/^exported 2 authors, 1 book collection and 2 books in \d+\.\d s$/),
    ])
    expect(countsIn(path).books).toBe(2)
  })

  it(`reads the catalogue ${EXPORT_BATCH_SIZE} records at a time, in id order across batches`, async () => {
    const rows = Array.from({ length: EXPORT_BATCH_SIZE * 2 + 500 }, (_, i) => [
      `Book ${i}`,
      `Author ${i % 7}`,
      i % 3 === 0 ? '' : `Shelf ${i % 4}`,
    ])
    const { path, env } = await databaseWith(rows)
    const run = await runCli(['export'], { env })
    expect(run.code).toBe(0)
    const books = parseLines(run.stdout).filter((line) => (line as { type?: string }).type === 'books')
    expect(books.map((book) => (book as { attributes: { name: string } }).attributes.name)).toEqual(
      booksIn(path).map((book) => book.title),
    )
    expect(books.map((book) => Number((book as { id: string }).id))).toEqual(rows.map((_, i) => i + 1))
    expect(run.lines[0]).toStartWith(`exported 7 authors, 4 book collections and ${rows.length} books in `)
  })

  it('writes the first line alone for an empty database', async () => {
    const database = tempDatabase()
    await withStore(database.path)
    const run = await runCli(['export'], { env: { DATABASE_URL: database.url } })
    expect(run.code).toBe(0)
    expect(run.stdout).toBe(
      '{"format":"library-catalogue-export","version":1,"types":{"authors":{"records":0,"lastId":0},"book_collections":{"records":0,"lastId":0},"books":{"records":0,"lastId":0}}}\n',
    )
    expect(run.lines[0]).toStartWith('exported 0 authors, 0 book collections and 0 books in ')
  })
})

describe('catalogue export FILE', () => {
  it('writes the lines to FILE, refuses to replace it without --force (exit 2), and replaces it with --force', async () => {
    const { dir, env } = await databaseWith([['Dune', 'Frank Herbert', '']])
    const file = join(dir, 'out.jsonl')
    const first = await runCli(['export', file], { env })
    expect(first.code).toBe(0)
    expect(first.stdout).toBe('')
    expect(first.lines[0]).toStartWith(`exported 1 author, 0 book collections and 1 book to ${file} in `)
    const written = readFileSync(file, 'utf8')
    expect(written.split('\n')[2]).toBe(
      '{"type":"books","id":"1","attributes":{"name":"Dune"},"relationships":{"author":{"data":{"type":"authors","id":"1"}},"book_collection":{"data":null}}}',
    )

    writeFileSync(file, 'keep me')
    const refused = await runCli(['export', file], { env })
    expect(refused.code).toBe(2)
    expect(refused.lines).toEqual([`catalogue export: ${file} already exists: give --force to replace it`])
    expect(readFileSync(file, 'utf8')).toBe('keep me')

    const forced = await runCli(['export', '--force', file], { env })
    expect(forced.code).toBe(0)
    expect(readFileSync(file, 'utf8')).toBe(written)
    // No partial file is left beside it.
    expect(readdirSync(dir).filter((name) => name.includes('partial'))).toEqual([])
  })

  it('exits 2 for a folder that does not exist', async () => {
    const { dir, env } = await databaseWith([['Dune', 'Frank Herbert', '']])
    const run = await runCli(['export', join(dir, 'none', 'out.jsonl')], { env })
    expect(run.code).toBe(2)
    expect(run.lines).toEqual([`catalogue export: there is no folder ${join(dir, 'none')}`])
  })
})

describe('catalogue export failures', () => {
  it('exits 2 and creates nothing for a database that does not exist', async () => {
    const database = tempDatabase()
    const run = await runCli(['export'], { env: { DATABASE_URL: database.url } })
    expect(run.code).toBe(2)
    expect(run.lines).toEqual([`catalogue export: there is no database at ${database.url}`])
    expect(existsSync(database.path)).toBe(false)
  })

  it('exits 2 for sqlite://:memory:, which no other process can read', async () => {
    const run = await runCli(['export'], { env: { DATABASE_URL: 'sqlite://:memory:' } })
    expect(run.code).toBe(2)
    expect(run.stdout).toBe('')
    expect(run.lines).toEqual([
      "catalogue export: sqlite://:memory: lives inside one process only: a command cannot reach the service's, and what it stored would be lost; give the database file",
    ])
  })

  it('exits 2 for an unknown option or a second FILE', async () => {
    const unknown = await runCli(['export', '--bogus'])
    expect(unknown.code).toBe(2)
    expect(unknown.lines).toEqual(["catalogue export: Unknown option '--bogus' (see catalogue export --help)"])
    const two = await runCli(['export', 'a.jsonl', 'b.jsonl'])
    expect(two.code).toBe(2)
    expect(two.lines).toEqual(['catalogue export: unexpected argument "b.jsonl" (see catalogue export --help)'])
  })

  it('exits 1 with one line when its reader closes the output before the end', async () => {
    const rows = Array.from({ length: 20_000 }, (_, i) => [`A rather long book title, number ${i}`, 'Author', ''])
    const { env } = await databaseWith(rows)
    // As `catalogue export | head -c 100` does: the reader takes the first bytes and goes away.
    const script = `bun "${CLI}" export | head -c 100 > /dev/null; echo "exit \${PIPESTATUS[0]}" >&2`
    const child = spawnChild(['bash', '-c', script], REPO, env)
    expect(await child.exitCode()).toBe(0)
    const lines = child.stderr.split('\n').filter((line) => line !== '')
    expect(lines).toEqual([expect.stringMatching(/^catalogue export: .*; the export is not complete$/), 'exit 1'])
  })
})

describe('catalogue export progress', () => {
  it('draws a progress bar on a terminal when writing to FILE', async () => {
    const { dir, env } = await databaseWith([['Dune', 'Frank Herbert', '']])
    const { code, output } = await runInTerminal(['export', join(dir, 'out.jsonl')], { env })
    expect(code).toBe(0)
    expect(output).toContain(`exporting [${'#'.repeat(30)}] 100%  2 / 2 records`)
    expect(output).toContain('exported 1 author, 0 book collections and 1 book to')
  })
})

describe('catalogue export --help', () => {
  it('prints the usage and the format, and exits 0', async () => {
    const run = await runCli(['export', '--help'])
    expect(run.code).toBe(0)
    for (const word of [
      'Usage: catalogue export [options] [FILE]',
      'library-catalogue-export',
      '"data":null',
      '--force',
      '--database-url',
    ]) {
      expect(run.stdout).toContain(word)
    }
  })
})
