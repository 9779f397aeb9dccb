import { afterAll, afterEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { authors } from '../../src/resources/authors'
import { books } from '../../src/resources/books'
import { resources } from '../../src/resources/registry'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'
import { insertCatalogue } from '../support/bulk'
import { CLI, REPO, runCli, tempDatabase, withStore } from '../support/commands'
import { dumpCatalogue, nextIds, seedGappyCatalogue, writeUntil } from '../support/exports'
import { removeTempDirs, spawnChild, stopChildren, WAIT_MS } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(60_000)

afterEach(stopChildren)
afterAll(removeTempDirs)

/** A SQLite database holding the gappy catalogue, and its export written beside it. */
async function exported() {
  const source = tempDatabase()
  await withStore(source.path, seedGappyCatalogue)
  const file = join(source.dir, 'catalogue.jsonl')
  const run = await runCli(['export', file], { env: { DATABASE_URL: source.url } })
  if (run.code !== 0) throw new Error(`export failed: ${run.stderr}`)
  return { source, file, text: readFileSync(file, 'utf8') }
}

async function dumpOf(path: string) {
  const store = SqliteStore.open(path, resources)
  try {
    return await dumpCatalogue(store)
  } finally {
    await store.close()
  }
}

/** The names of the books a search finds in a SQLite database, in ranked order. */
async function searched(path: string, text: string): Promise<string[]> {
  const store = SqliteStore.open(path, resources)
  try {
    const page = await store.page(books, { filters: [{ kind: 'search', text }], sort: [], ranked: true, limit: 20 })
    return page.records.map((record) => record.attributes.name as string)
  } finally {
    await store.close()
  }
}

const SUMMARY = /^restored 4 authors, 2 book collections and 5 books, 0 already present, in \d+\.\d s$/

describe('catalogue export', () => {
  it('writes a first line describing the file, then every record of every type with its id and relationships', async () => {
    const { text } = await exported()
    const lines = text.trimEnd().split('\n')
    expect(JSON.parse(lines[0] as string)).toEqual({
      format: 'library-catalogue-export',
      version: 1,
      types: {
        authors: { records: 4, lastId: 6 },
        book_collections: { records: 2, lastId: 4 },
        books: { records: 5, lastId: 7 },
      },
    })
    const book = (id: string, name: string, author: string, collection: string | null) =>
      JSON.stringify({
        type: 'books',
        id,
        attributes: { name },
        relationships: {
          author: { data: { type: 'authors', id: author } },
          book_collection: { data: collection === null ? null : { type: 'book_collections', id: collection } },
        },
      })
    expect(lines.slice(1)).toEqual([
      '{"type":"authors","id":"1","attributes":{"name":"Ursula K. Le Guin"}}',
      '{"type":"authors","id":"2","attributes":{"name":"Octavia E. Butler"}}',
      '{"type":"authors","id":"4","attributes":{"name":"No Books Yet"}}',
      '{"type":"authors","id":"5","attributes":{"name":"Émile Zola"}}',
      '{"type":"book_collections","id":"1","attributes":{"name":"Earthsea"}}',
      '{"type":"book_collections","id":"3","attributes":{"name":"Empty Shelf"}}',
      book('1', 'A Wizard of Earthsea', '1', '1'),
      book('3', 'Kindred', '2', null),
      book('4', 'The "Quoted", \\ back\\slash {json}', '5', null),
      book('5', '  spaced  ', '5', '1'),
      book('6', '源氏物語 📚', '1', null),
    ])
  })
})

describe('catalogue import of an export', () => {
  it('restores every record with its id into a new database, and exporting that gives the same bytes', async () => {
    const { source, file, text } = await exported()
    const target = tempDatabase()
    const run = await runCli(['import', '--create', file], { env: { DATABASE_URL: target.url } })
    expect(run.code).toBe(0)
    expect(run.lines).toEqual([expect.stringMatching(SUMMARY)])
    expect(await dumpOf(target.path)).toEqual(await dumpOf(source.path))
    const again = await runCli(['export'], { env: { DATABASE_URL: target.url } })
    expect(again.stdout).toBe(text)
    // The restored words are forgiven typos as the source's were (the vocabulary came with them).
    expect(await searched(target.path, 'earthsae')).toEqual(['A Wizard of Earthsea', '  spaced  '])
  })

  it("starts the new database's change feed after the restore: a position from the source is 410 there, never taken for one", async () => {
    const { source, file } = await exported()
    let sourceLatest: string | null = null
    await withStore(source.path, async (store) => {
      sourceLatest = await store.changes.latest()
    })
    const target = tempDatabase()
    expect((await runCli(['import', '--create', file], { env: { DATABASE_URL: target.url } })).code).toBe(0)
    await withStore(target.path, async (store) => {
      // The restore's creates are no history to follow: the feed is empty, and goes on after them.
      const start = await store.changes.read({ after: null, types: null, size: 100 })
      expect(start).toMatchObject({ kind: 'page', changes: [] })
      for (const position of ['0', sourceLatest as unknown as string]) {
        expect(await store.changes.read({ after: position, types: null, size: 100 })).toEqual({ kind: 'gone' })
      }
      const made = await store.create(authors, { attributes: { name: 'After the restore' }, toOne: {} })
      // The source's position stays gone once the new feed has changes of its own.
      expect(await store.changes.read({ after: sourceLatest as unknown as string, types: null, size: 100 })).toEqual({
        kind: 'gone',
      })
      const after = await store.changes.read({ after: null, types: null, size: 100 })
      expect(after).toMatchObject({
        kind: 'page',
        changes: [{ type: 'authors', op: 'create', recordId: made.ok ? made.record.id : 0 }],
      })
    })
  })

  it('never hands out again an id the export held or held once: new records take ids after its last ones', async () => {
    const { file } = await exported()
    const target = tempDatabase()
    expect((await runCli(['import', '--create', file], { env: { DATABASE_URL: target.url } })).code).toBe(0)
    let ids: Awaited<ReturnType<typeof nextIds>> | undefined
    await withStore(target.path, async (store) => {
      ids = await nextIds(store)
    })
    // Deleted before the export: author 6, collection 4, book 7 were the last handed out.
    expect(ids).toEqual({ author: 7, collection: 5, book: 8 })
  })

  it('restores an export taken while the catalogue was being written to: one snapshot, every reference in it', async () => {
    const source = tempDatabase()
    await withStore(source.path)
    await insertCatalogue(
      { database: { kind: 'sqlite', path: source.path } },
      {
        authors: Array.from({ length: 3000 }, (_, i) => `Author ${i}`),
        collections: ['Shelf'],
        books: 20_000,
        authorOf: (i) => (i % 3000) + 1,
        collectionOf: (i) => (i % 2 === 0 ? 1 : null),
      },
    )
    const file = join(source.dir, 'catalogue.jsonl')
    const writer = SqliteStore.open(source.path, resources)
    const child = spawnChild(['bun', CLI, 'export', '--busy-timeout', String(WAIT_MS), file], REPO, {
      DATABASE_URL: source.url,
    })
    const exit = child.exitCode(WAIT_MS * 3)
    // Authors and their books added all through the export: a reading that is not one snapshot
    // writes books whose authors came after it read the authors.
    const rounds = await writeUntil(writer, exit)
    await writer.close()
    expect(await exit).toBe(0)
    expect(rounds).toBeGreaterThan(0)

    const target = tempDatabase()
    const run = await runCli(['import', '--create', file], {
      env: { DATABASE_URL: target.url },
      timeoutMs: WAIT_MS * 3,
    })
    expect(run.lines.at(-1)).toMatch(/^restored \d+ authors, 1 book collection and \d+ books, 0 already present/)
    expect(run.code).toBe(0)
  })

  it('stores a name written in NFD in NFC, as the API does, and counts its length in NFC', async () => {
    const target = tempDatabase()
    const file = join(target.dir, 'decomposed.jsonl')
    const zola = 'Émile Zola'
    // 1000 characters in NFC, 2000 code points in NFD: within the limit as the API counts it.
    const longest = 'é'.repeat(1000)
    const author = (id: string, name: string) =>
      JSON.stringify({ type: 'authors', id, attributes: { name: name.normalize('NFD') } })
    const header = { format: 'library-catalogue-export', version: 1, types: { authors: { records: 2, lastId: 2 } } }
    writeFileSync(file, `${[JSON.stringify(header), author('1', zola), author('2', longest)].join('\n')}\n`)
    const run = await runCli(['import', '--create', file], { env: { DATABASE_URL: target.url } })
    expect(run.lines.at(-1)).toStartWith('restored 2 authors')
    expect(run.code).toBe(0)
    const names = (await dumpOf(target.path)).authors?.map((record) => record.attributes.name)
    expect(names).toEqual([zola.normalize('NFC'), longest.normalize('NFC')])
  })

  it('exits 2 for --encoding latin1: an export is UTF-8', async () => {
    const { file } = await exported()
    const target = tempDatabase()
    const run = await runCli(['import', '--create', '--encoding', 'latin1', file], {
      env: { DATABASE_URL: target.url },
    })
    expect(run.code).toBe(2)
    expect(run.lines).toEqual([`catalogue import: ${file} is a catalogue export, always UTF-8: drop --encoding`])
    expect(existsSync(target.path)).toBe(false)
  })

  it('--dry-run says what it would restore, and creates no database', async () => {
    const { file } = await exported()
    const target = tempDatabase()
    const run = await runCli(['import', '--dry-run', file], { env: { DATABASE_URL: target.url } })
    expect(run.code).toBe(0)
    expect(run.lines[1]).toMatch(
      /^dry run: would restore 4 authors, 2 book collections and 5 books, 0 already present, in \d+\.\d s; nothing was stored$/,
    )
    expect(existsSync(target.path)).toBe(false)
  })
})

describe('catalogue import of an export into a database that holds records', () => {
  it('exits 2 with one line saying what the database holds and what to do, and changes nothing', async () => {
    const { file } = await exported()
    const target = tempDatabase()
    await withStore(target.path, async (store) => {
      await store.create(authors, { attributes: { name: 'Already here' }, toOne: {} })
    })
    const before = await dumpOf(target.path)
    for (const args of [
      ['import', file],
      ['import', '--dry-run', file],
    ]) {
      const run = await runCli(args, { env: { DATABASE_URL: target.url } })
      expect(run.code).toBe(2)
      expect(run.lines).toEqual([
        `catalogue import: ${target.url} already holds 1 author, 0 book collections and 0 books, and ${file} is a catalogue export, which restores records with their ids into an empty catalogue: restore it into an empty database (--create makes a new one), or give --merge to add the records the database lacks (those it holds under the same ids must be the same)`,
      ])
    }
    expect(await dumpOf(target.path)).toEqual(before)
  })

  it('--merge adds the records it lacks with their ids and counts those it holds the same as present', async () => {
    const { source, file } = await exported()
    // The database it came from, since missing a book and a collection.
    await withStore(source.path, async (store) => {
      const { books } = await import('../../src/resources/books')
      const { bookCollections } = await import('../../src/resources/book-collections')
      await store.delete(books, 6)
      await store.delete(bookCollections, 3)
    })
    const run = await runCli(['import', '--merge', file], { env: { DATABASE_URL: source.url } })
    expect(run.code).toBe(0)
    expect(run.lines).toEqual([
      expect.stringMatching(/^restored 0 authors, 1 book collection and 1 book, 9 already present, in \d+\.\d s$/),
    ])
    const again = await runCli(['export'], { env: { DATABASE_URL: source.url } })
    expect(again.stdout).toBe(readFileSync(file, 'utf8'))
  })

  it('--merge --dry-run counts as to restore only the records the database lacks, and stores nothing', async () => {
    const { source, file } = await exported()
    await withStore(source.path, async (store) => {
      const { books } = await import('../../src/resources/books')
      const { bookCollections } = await import('../../src/resources/book-collections')
      await store.delete(books, 6)
      await store.delete(bookCollections, 3)
    })
    const before = await dumpOf(source.path)
    const run = await runCli(['import', '--merge', '--dry-run', file], { env: { DATABASE_URL: source.url } })
    expect(run.code).toBe(0)
    expect(run.lines).toEqual([
      expect.stringMatching(
        /^dry run: would restore 0 authors, 1 book collection and 1 book, 9 already present, in \d+\.\d s; nothing was stored$/,
      ),
    ])
    expect(await dumpOf(source.path)).toEqual(before)
  })

  it('--merge stores nothing when a record it holds under an id of the file has other fields', async () => {
    const { source, file } = await exported()
    await withStore(source.path, async (store) => {
      await store.update(authors, 2, { attributes: { name: 'Renamed since' }, toOne: {} })
      const { books } = await import('../../src/resources/books')
      await store.delete(books, 6)
    })
    const before = await dumpOf(source.path)
    const run = await runCli(['import', '--merge', file], { env: { DATABASE_URL: source.url } })
    expect(run.code).toBe(2)
    expect(run.lines).toEqual([
      'line 3: authors 2 is stored with other fields',
      `catalogue import: ${file} is not a whole, sound catalogue export (1 problem): nothing was stored, since a restore stores all of a file or nothing`,
    ])
    expect(await dumpOf(source.path)).toEqual(before)
  })
})

describe('catalogue import of a damaged export', () => {
  /** The export with its lines changed by `edit`, imported with --create into a new database. */
  async function importEdited(edit: (lines: string[]) => string[]) {
    const { source, text } = await exported()
    const file = join(source.dir, 'edited.jsonl')
    writeFileSync(file, `${edit(text.trimEnd().split('\n')).join('\n')}\n`)
    const target = tempDatabase()
    const run = await runCli(['import', '--create', file], { env: { DATABASE_URL: target.url } })
    return { run, file, target }
  }

  it.each([
    {
      damage: 'cut short',
      edit: (lines: string[]) => lines.slice(0, -2),
      reports: ['FILE: it holds 3 books where its first line gives 5: it is cut short, or was changed'],
    },
    {
      damage: 'a book whose author is not in it',
      edit: (lines: string[]) => lines.filter((line) => !line.includes('"Octavia E. Butler"')),
      reports: ['line 8: its author (authors 2) is not a record of an earlier line'],
    },
    {
      damage: 'a record twice',
      edit: (lines: string[]) => [...lines.slice(0, 2), lines[1] as string, ...lines.slice(2)],
      reports: ['line 3: authors 1 is in the file twice'],
    },
    {
      damage: 'an id above the last one its first line gives',
      edit: (lines: string[]) => [...lines, '{"type":"authors","id":"99","attributes":{"name":"Late"}}'],
      reports: ['line 13: authors 99 is above the last id its first line gives (6)'],
    },
    {
      damage: 'a line that is not JSON, and a blank name',
      edit: (lines: string[]) => [
        ...lines.slice(0, 2),
        '{"type": "authors", "id": "3"',
        '{"type":"authors","id":"6","attributes":{"name":"  "}}',
        ...lines.slice(2),
      ],
      reports: [expect.stringMatching(/^line 3: not valid JSON \(/), "line 4: Name can't be blank"],
    },
  ])('$damage: reports it, exits 2 and creates no database', async ({ edit, reports }) => {
    const { run, file, target } = await importEdited(edit)
    expect(run.code).toBe(2)
    expect(run.lines.slice(0, -1)).toEqual(
      reports.map((line) => (typeof line === 'string' ? line.replace('FILE', file) : line)),
    )
    expect(run.lines.at(-1)).toStartWith(`catalogue import: ${file} is not a whole, sound catalogue export (`)
    expect(existsSync(target.path)).toBe(false)
  })

  it.each([
    {
      header: { format: 'library-catalogue-export', version: 2, types: {} },
      reason: 'it is version 2 of library-catalogue-export, and this build reads version 1',
    },
    {
      header: { format: 'library-catalogue-export', version: 1, types: { shelves: { records: 0, lastId: 0 } } },
      reason: 'it holds the type "shelves", which this build does not know',
    },
    {
      // The service would hand out ids past 2^53, which are no longer exact numbers.
      header: {
        format: 'library-catalogue-export',
        version: 1,
        types: { authors: { records: 0, lastId: Number.MAX_SAFE_INTEGER } },
      },
      reason:
        'its first line gives authors no sound "records" and "lastId" (whole numbers, records at most lastId, lastId at most 999999999999999)',
    },
    {
      header: { format: 'something-else', version: 1 },
      reason: 'its first line names the format "something-else", not library-catalogue-export',
    },
  ])('exits 2 with one line for a first line it cannot read: $reason', async ({ header, reason }) => {
    const target = tempDatabase()
    const file = join(target.dir, 'other.jsonl')
    writeFileSync(file, `${JSON.stringify(header)}\n`)
    const run = await runCli(['import', '--create', file], { env: { DATABASE_URL: target.url } })
    expect(run.code).toBe(2)
    expect(run.lines).toEqual([`catalogue import: ${file} cannot be restored: ${reason}`])
    expect(existsSync(target.path)).toBe(false)
  })
})
