import { Database } from 'bun:sqlite'
import { afterAll, afterEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { IMPORT_BATCH_SIZE, MAX_REPORTED_LINES } from '../../src/commands/import'
import { authors } from '../../src/resources/authors'
import { bookCollections } from '../../src/resources/book-collections'
import { books } from '../../src/resources/books'
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

/** A database location and a file beside it holding `text`. */
function setup(name: string, text: string | Uint8Array) {
  const database = tempDatabase()
  const file = join(database.dir, name)
  writeFileSync(file, text)
  return { ...database, file, env: { DATABASE_URL: database.url } }
}

const SUMMARY =
  /^imported (\d+) books? \((\d+) authors?, (\d+) collections? created\), (\d+) already present, (\d+) bad lines? in \d+\.\d s$/

describe('catalogue import FILE.csv', () => {
  it('adds the books, finding authors and collections by exact name or creating them, and exits 0', async () => {
    const { path, file, env } = setup(
      'books.csv',
      csvOf([
        ['A Wizard of Earthsea', 'Ursula K. Le Guin', 'Earthsea'],
        ['The Tombs of Atuan', 'Ursula K. Le Guin', 'Earthsea'],
        ['The Dispossessed', 'Ursula K. Le Guin', ''],
        ['Kindred', 'Octavia E. Butler', ''],
      ]),
    )
    await withStore(path, async (store) => {
      await store.create(authors, { attributes: { name: 'Ursula K. Le Guin' }, toOne: {} })
      // Exact names only: this one is another author.
      await store.create(authors, { attributes: { name: 'octavia e. butler' }, toOne: {} })
    })
    const run = await runCli(['import', '--create', file], { env })
    expect(run.code).toBe(0)
    expect(run.lines).toEqual([expect.stringMatching(SUMMARY)])
    expect(run.lines[0]).toStartWith(
      'imported 4 books (1 author, 1 collection created), 0 already present, 0 bad lines in ',
    )
    expect(run.stdout).toBe('')
    expect(booksIn(path)).toEqual([
      { title: 'A Wizard of Earthsea', author: 'Ursula K. Le Guin', collection: 'Earthsea' },
      { title: 'The Tombs of Atuan', author: 'Ursula K. Le Guin', collection: 'Earthsea' },
      { title: 'The Dispossessed', author: 'Ursula K. Le Guin', collection: null },
      { title: 'Kindred', author: 'Octavia E. Butler', collection: null },
    ])
    expect(countsIn(path)).toEqual({ authors: 3, collections: 1, books: 4 })
    // The imported words are forgiven typos at once: titles, and the authors and collections created.
    await withStore(path, async (store) => {
      const found = async (text: string) =>
        (
          await store.page(books, { filters: [{ kind: 'search', text }], sort: [], ranked: true, limit: 20 })
        ).records.map((record) => record.attributes.name)
      expect(await found('dispossesed')).toEqual(['The Dispossessed'])
      expect(await found('bulter')).toEqual(['Kindred'])
      expect(await found('earthsae atuan')).toEqual(['The Tombs of Atuan'])
    })
  })

  it('reads RFC 4180 quoting (commas, doubled quotes, line breaks in a field), a BOM and CRLF, and counts lines across quoted line breaks', async () => {
    const text = [
      '\uFEFFtitle,author,collection',
      '"Smith, his book","Smith, John",',
      '"The ""Best"" Book",Anon,"Quotes, ""and"" commas"',
      '"A title',
      'on two lines",Anon,',
      'only,two',
      '"Three\r\nlines',
      'here",Anon,Poems',
      'Last,Anon,',
      '',
    ].join('\r\n')
    const { path, file, env } = setup('quoted.csv', text)
    const run = await runCli(['import', '--create', file], { env })
    expect(run.code).toBe(1)
    // A line break inside quotes is read as part of the field, and refused there as in any name;
    // line 6 of the file comes after a record that spans lines 4 and 5.
    expect(run.lines.slice(0, 3)).toEqual([
      'line 4: Title must not contain control characters or line breaks (U+000D at character 8)',
      'line 6: 2 fields where the header has 3 (title,author,collection)',
      'line 7: Title must not contain control characters or line breaks (U+000D at character 6)',
    ])
    expect(run.lines[3]).toStartWith(
      'imported 3 books (2 authors, 1 collection created), 0 already present, 3 bad lines in ',
    )
    expect(booksIn(path)).toEqual([
      { title: 'Smith, his book', author: 'Smith, John', collection: null },
      { title: 'The "Best" Book', author: 'Anon', collection: 'Quotes, "and" commas' },
      { title: 'Last', author: 'Anon', collection: null },
    ])
  })

  it('skips empty lines and reads a last line without a line feed', async () => {
    const { path, file, env } = setup('gaps.csv', 'title,author,collection\n\nOne,A,\n\n\nTwo,B,C')
    const run = await runCli(['import', '--create', file], { env })
    expect(run.code).toBe(0)
    expect(booksIn(path).map((book) => book.title)).toEqual(['One', 'Two'])
  })
})

describe('catalogue import FILE.jsonl', () => {
  it('adds the books of JSON lines; a collection null, absent or empty means none', async () => {
    const lines = [
      { title: 'Dune', author: 'Frank Herbert', collection: 'Dune' },
      { title: 'Dune Messiah', author: 'Frank Herbert', collection: 'Dune' },
      { title: 'The Dragon in the Sea', author: 'Frank Herbert', collection: null },
      { title: 'Whipping Star', author: 'Frank Herbert' },
      { title: 'Hellstrom’s Hive', author: 'Frank Herbert', collection: '' },
    ]
    const { path, file, env } = setup('books.jsonl', `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`)
    const run = await runCli(['import', '--create', file], { env })
    expect(run.code).toBe(0)
    expect(run.lines[0]).toStartWith(
      'imported 5 books (1 author, 1 collection created), 0 already present, 0 bad lines',
    )
    expect(booksIn(path)).toEqual([
      { title: 'Dune', author: 'Frank Herbert', collection: 'Dune' },
      { title: 'Dune Messiah', author: 'Frank Herbert', collection: 'Dune' },
      { title: 'The Dragon in the Sea', author: 'Frank Herbert', collection: null },
      { title: 'Whipping Star', author: 'Frank Herbert', collection: null },
      { title: 'Hellstrom’s Hive', author: 'Frank Herbert', collection: null },
    ])
  })

  it('takes .ndjson, or any name with --format jsonl', async () => {
    const line = `${JSON.stringify({ title: 'T', author: 'A', collection: null })}\n`
    const ndjson = setup('books.ndjson', line)
    expect((await runCli(['import', '--create', ndjson.file], { env: ndjson.env })).code).toBe(0)
    expect(countsIn(ndjson.path).books).toBe(1)
    const named = setup('books.txt', line)
    expect((await runCli(['import', '--create', '--format', 'jsonl', named.file], { env: named.env })).code).toBe(0)
    expect(countsIn(named.path).books).toBe(1)
  })
})

describe('catalogue import, run twice', () => {
  it('adds nothing the second time: a book with the same title, author and collection is already present', async () => {
    const { path, file, env } = setup(
      'books.csv',
      csvOf([
        ['Emma', 'Jane Austen', ''],
        ['Persuasion', 'Jane Austen', 'Novels'],
        // The same title by the same author in another collection (or none) is another book.
        ['Persuasion', 'Jane Austen', ''],
        // A line repeated in the file counts once.
        ['Emma', 'Jane Austen', ''],
      ]),
    )
    const first = await runCli(['import', '--create', file], { env })
    expect(first.code).toBe(0)
    expect(first.lines[0]).toStartWith(
      'imported 3 books (1 author, 1 collection created), 1 already present, 0 bad lines',
    )
    const stored = booksIn(path)
    const second = await runCli(['import', '--create', file], { env })
    expect(second.code).toBe(0)
    expect(second.lines[0]).toStartWith(
      'imported 0 books (0 authors, 0 collections created), 4 already present, 0 bad lines',
    )
    expect(booksIn(path)).toEqual(stored)
    expect(countsIn(path)).toEqual({ authors: 1, collections: 1, books: 3 })
  })

  it('knows a book as present whichever of two same-named authors it belongs to', async () => {
    const { path, file, env } = setup('books.csv', csvOf([['Twin', 'Same Name', 'Shelf']]))
    await withStore(path, async (store) => {
      const first = await store.create(authors, { attributes: { name: 'Same Name' }, toOne: {} })
      const second = await store.create(authors, { attributes: { name: 'Same Name' }, toOne: {} })
      const shelf = await store.create(bookCollections, { attributes: { name: 'Shelf' }, toOne: {} })
      if (!first.ok || !second.ok || !shelf.ok) throw new Error('seed failed')
      const { books } = await import('../../src/resources/books')
      await store.create(books, {
        attributes: { name: 'Twin' },
        toOne: { author: second.record.id, book_collection: shelf.record.id },
      })
    })
    const run = await runCli(['import', '--create', file], { env })
    expect(run.code).toBe(0)
    expect(run.lines[0]).toStartWith('imported 0 books (0 authors, 0 collections created), 1 already present')
    expect(countsIn(path).books).toBe(1)
  })
})

describe('catalogue import with bad lines', () => {
  it('reports each bad CSV line with its number and the reason the API would give, stores the rest and exits 1', async () => {
    const longTitle = 'x'.repeat(1001)
    const text = [
      'title,author,collection',
      'Good one,Author,',
      'Two fields,Author',
      'Four,fields,here,now',
      ',Author,',
      '   ,Author,',
      '\u200B\u200B,Author,',
      `${longTitle},Author,`,
      'Title,,',
      'Title,Author,\u2800',
      'Bad "quote",Author,',
      '"closed" then text,Author,',
      'Good two,Author,Shelf',
      '"never closed,Author,',
      'still inside the quote',
    ].join('\n')
    const { path, file, env } = setup('bad.csv', text)
    const run = await runCli(['import', '--create', file], { env })
    expect(run.code).toBe(1)
    expect(run.lines.slice(0, -1)).toEqual([
      'line 3: 2 fields where the header has 3 (title,author,collection)',
      'line 4: 4 fields where the header has 3 (title,author,collection)',
      "line 5: Title can't be blank",
      "line 6: Title can't be blank",
      "line 7: Title can't be blank",
      'line 8: Title is too long (maximum is 1000 characters)',
      "line 9: Author can't be blank",
      "line 10: Collection can't be blank",
      'line 11: a quote inside a field that does not start with one (quote the field and write "")',
      'line 12: text after the closing quote of a field (a quote inside a field is written "")',
      'line 14: a quoted field is not closed before the end of the file',
    ])
    expect(run.lines.at(-1)).toStartWith(
      'imported 2 books (1 author, 1 collection created), 0 already present, 11 bad lines in ',
    )
    expect(booksIn(path)).toEqual([
      { title: 'Good one', author: 'Author', collection: null },
      { title: 'Good two', author: 'Author', collection: 'Shelf' },
    ])
  })

  it('reports each bad JSON line with its number, stores the rest and exits 1', async () => {
    const text = [
      JSON.stringify({ title: 'Good', author: 'A', collection: null }),
      '{"title": "Broken", ',
      JSON.stringify({ author: 'A' }),
      JSON.stringify({ title: 'T', author: 42 }),
      JSON.stringify({ title: 'T', author: 'A', collection: ['x'] }),
      JSON.stringify({ title: 'T', author: 'A', year: 1999 }),
      JSON.stringify(['T', 'A', null]),
      '"just a string"',
      '{"title": "\\ud800", "author": "A"}',
      JSON.stringify({ title: 'Also good', author: 'A', collection: 'C' }),
    ].join('\n')
    const { path, file, env } = setup('bad.jsonl', text)
    const run = await runCli(['import', '--create', file], { env })
    expect(run.code).toBe(1)
    const reported = run.lines.slice(0, -1)
    expect(reported[0]).toStartWith('line 2: not valid JSON (')
    expect(reported.slice(1)).toEqual([
      "line 3: Title can't be blank",
      'line 4: Author must be a string',
      'line 5: Collection must be a string',
      'line 6: unknown member "year" (a line has title, author, collection)',
      'line 7: not a JSON object such as {"title": "...", "author": "...", "collection": null}',
      'line 8: not a JSON object such as {"title": "...", "author": "...", "collection": null}',
      'line 9: Title must be valid Unicode text',
    ])
    expect(run.lines.at(-1)).toStartWith(
      'imported 2 books (1 author, 1 collection created), 0 already present, 8 bad lines',
    )
    expect(booksIn(path).map((book) => book.title)).toEqual(['Good', 'Also good'])
  })

  it('reports a line that is not UTF-8 or longer than 64 KiB, and goes on with the next', async () => {
    const encoder = new TextEncoder()
    const bytes = new Uint8Array([
      ...encoder.encode('title,author,collection\nBefore,A,\n'),
      ...encoder.encode('Caf'),
      0xe9,
      ...encoder.encode(',Latin-1,\n'),
      ...encoder.encode(`${'y'.repeat(70_000)},A,\n`),
      ...encoder.encode('After,A,\n'),
    ])
    const { path, file, env } = setup('mixed.csv', bytes)
    const run = await runCli(['import', '--create', file], { env })
    expect(run.code).toBe(1)
    expect(run.lines.slice(0, 2)).toEqual([
      'line 3: not UTF-8 text',
      'line 4: longer than 65536 bytes, which no valid line is',
    ])
    expect(booksIn(path).map((book) => book.title)).toEqual(['Before', 'After'])
  })

  it('quotes what a bad line holds with control characters escaped and cut short, so a file cannot drive the terminal', async () => {
    const text = [
      JSON.stringify({ title: 'T', author: 'A', [`\x1b[2J${'m'.repeat(200)}`]: 1 }),
      '{"title": \x1b]0;owned\x07}',
    ].join('\n')
    const { file, env } = setup('hostile.jsonl', text)
    const run = await runCli(['import', '--create', file], { env })
    expect(run.code).toBe(1)
    expect(run.lines[0]).toBe(
      `line 1: unknown member "\\u001b[2J${'m'.repeat(76)}…" (a line has title, author, collection)`,
    )
    expect(run.lines[1]).toStartWith('line 2: not valid JSON (')
    expect(run.lines[1]).toContain('\\u001b')
    expect(run.stderr).not.toContain('\x1b')
    expect(run.stderr).not.toContain('\x07')
  })

  it(`prints the first ${MAX_REPORTED_LINES} bad lines, then how many more there were`, async () => {
    const rows = Array.from({ length: MAX_REPORTED_LINES + 50 }, () => 'only one field')
    const { file, env } = setup('many.csv', `title,author,collection\n${rows.join('\n')}\nGood,A,\n`)
    const run = await runCli(['import', '--create', file], { env })
    expect(run.code).toBe(1)
    const reported = run.lines.filter((line) => line.startsWith('line '))
    expect(reported).toHaveLength(MAX_REPORTED_LINES)
    expect(reported[0]).toStartWith('line 2: ')
    expect(reported.at(-1)).toStartWith(`line ${MAX_REPORTED_LINES + 1}: `)
    expect(run.lines.at(-2)).toBe('... and 50 more bad lines')
    expect(run.lines.at(-1)).toStartWith(
      'imported 1 book (1 author, 0 collections created), 0 already present, 150 bad lines',
    )
  })
})

describe('catalogue import --dry-run', () => {
  it('checks every line and says what it would add, but stores nothing', async () => {
    const { path, file, env } = setup(
      'books.csv',
      csvOf([
        ['Present', 'Known', ''],
        ['New', 'Known', 'New shelf'],
        ['New', 'Known', 'New shelf'],
        ['Other', 'Unknown', ''],
        ['Bad', '', ''],
      ]),
    )
    await withStore(path, async (store) => {
      const author = await store.create(authors, { attributes: { name: 'Known' }, toOne: {} })
      if (!author.ok) throw new Error('seed failed')
      const { books } = await import('../../src/resources/books')
      await store.create(books, { attributes: { name: 'Present' }, toOne: { author: author.record.id } })
    })
    const before = booksIn(path)
    const run = await runCli(['import', '--dry-run', file], { env })
    expect(run.code).toBe(1)
    expect(run.lines[0]).toBe("line 6: Author can't be blank")
    expect(run.lines[1]).toMatch(
      /^dry run: would import 2 books \(1 author, 1 collection to create\), 2 already present, 1 bad line in \d+\.\d s; nothing was stored$/,
    )
    expect(booksIn(path)).toEqual(before)
    expect(countsIn(path)).toEqual({ authors: 1, collections: 0, books: 1 })
  })

  it('counts a book or a name met again in a later batch once, as the import would', async () => {
    const rows = Array.from({ length: IMPORT_BATCH_SIZE }, (_, i) => [`Book ${i}`, `Author ${i % 10}`, 'Shelf'])
    // The second batch repeats the first one's books.
    const { path, file, env } = setup('twice.csv', csvOf([...rows, ...rows.slice(0, 100)]))
    await withStore(path)
    const dry = await runCli(['import', '--dry-run', file], { env })
    expect(dry.code).toBe(0)
    expect(dry.lines[0]).toStartWith(
      `dry run: would import ${IMPORT_BATCH_SIZE} books (10 authors, 1 collection to create), 100 already present, 0 bad lines`,
    )
    expect(countsIn(path)).toEqual({ authors: 0, collections: 0, books: 0 })
    const real = await runCli(['import', '--create', file], { env })
    expect(real.lines[0]).toStartWith(
      `imported ${IMPORT_BATCH_SIZE} books (10 authors, 1 collection created), 100 already present, 0 bad lines`,
    )
  })
})

describe(`catalogue import in batches of ${IMPORT_BATCH_SIZE}`, () => {
  it('keeps the batches committed before the database failed, exits 1, and a second run adds only the rest', async () => {
    const total = 20 * IMPORT_BATCH_SIZE
    const rows = Array.from({ length: total }, (_, i) => [`Book ${i}`, `Author ${i % 100}`, ''])
    const { path, file, env } = setup('big.csv', csvOf(rows))
    await withStore(path)
    const child = spawnChild(['bun', CLI, 'import', '--busy-timeout', '50', file], REPO, env)
    // As soon as a batch is in, take the write lock and hold it past the import's busy timeout.
    const watcher = new Database(path)
    watcher.run(`PRAGMA busy_timeout = ${WAIT_MS}`)
    const count = watcher.query<{ n: number }, []>('SELECT COUNT(*) AS n FROM books')
    const deadline = Date.now() + WAIT_MS
    while ((count.get()?.n ?? 0) === 0 && Date.now() < deadline) await Bun.sleep(2)
    // The lock is free only between two batches, while the import reads the next lines. SQLite's
    // busy handler tries again after sleeps of up to 100 ms and could miss every gap of an import
    // that ends within a second (it did once in CI): tried here every half millisecond instead.
    watcher.run('PRAGMA busy_timeout = 0')
    for (;;) {
      try {
        watcher.run('BEGIN IMMEDIATE')
        break
      } catch (error) {
        if (Date.now() >= deadline + WAIT_MS) throw error
        Bun.sleepSync(0.5)
      }
    }
    const code = await child.exitCode(WAIT_MS * 3)
    watcher.run('ROLLBACK')
    const stored = count.get()?.n ?? 0
    watcher.close()

    expect(code).toBe(1)
    expect(stored % IMPORT_BATCH_SIZE).toBe(0)
    expect(stored).toBeGreaterThan(0)
    expect(stored).toBeLessThan(total)
    expect(child.stderr).toContain('catalogue import: the database failed (locked by another connection')
    const first = stored + 2
    expect(child.stderr).toContain(
      `the batch of lines ${first} to ${first + IMPORT_BATCH_SIZE - 1} was not stored, the ${stored} books before it were`,
    )
    expect(child.stderr).toContain('Run the same import again once it is fixed: it adds only what is missing')

    const again = await runCli(['import', '--create', file], { env, timeoutMs: WAIT_MS * 3 })
    expect(again.code).toBe(0)
    expect(again.lines[0]).toStartWith(
      `imported ${total - stored} books (0 authors, 0 collections created), ${stored} already present`,
    )
    expect(booksIn(path).map((book) => book.title)).toEqual(rows.map((row) => row[0] as string))
  }, 60_000)

  it('stops at SIGINT after the batch under way, its indexes built, exits 130, and a second run adds only the rest', async () => {
    const total = 200_000
    const rows = Array.from({ length: total }, (_, i) => [`Book ${i}`, `Author ${i % 1000}`, `Series ${i % 40}`])
    const { path, file, env } = setup('big.csv', csvOf(rows))
    const indexesOfBooks = () => {
      const db = new Database(path, { readonly: true })
      try {
        return db
          .query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'books' ORDER BY name")
          .all()
      } finally {
        db.close()
      }
    }
    await withStore(path)
    const indexes = indexesOfBooks()
    const child = spawnChild(['bun', CLI, 'import', file], REPO, env)
    // Once a batch is in (an import into no books has then left most indexes of books to its end).
    const watcher = new Database(path, { readonly: true })
    const count = watcher.query<{ n: number }, []>('SELECT COUNT(*) AS n FROM books')
    const deadline = Date.now() + WAIT_MS
    while ((count.get()?.n ?? 0) === 0 && Date.now() < deadline) await Bun.sleep(2)
    child.proc.kill('SIGINT')
    expect(await child.exitCode(WAIT_MS * 3)).toBe(130)
    const stored = count.get()?.n ?? 0
    watcher.close()
    expect(stored).toBeGreaterThan(0)
    expect(stored).toBeLessThan(total)
    // Line 1 is the header: the books stored are those of lines 2 to N.
    expect(child.stderr).toContain(
      `catalogue import: stopped by SIGINT after line ${stored + 1}; ${stored} books added. Run the same import again to go on`,
    )
    expect(indexesOfBooks()).toEqual(indexes)

    const again = await runCli(['import', file], { env, timeoutMs: WAIT_MS * 3 })
    expect(again.code).toBe(0)
    expect(again.lines[0]).toStartWith(
      `imported ${total - stored} books (0 authors, 0 collections created), ${stored} already present`,
    )
    expect(countsIn(path)).toEqual({ authors: 1000, collections: 40, books: total })
  }, 90_000)

  it('imports 100,000 books in seconds: under 10 s of CPU time (about 3.5 s here; 17 s row by row)', async () => {
    const rows = Array.from({ length: 100_000 }, (_, i) => [
      `Book ${i}`,
      `Author ${i % 1000}`,
      i % 5 === 0 ? '' : `Collection ${i % 50}`,
    ])
    const { path, file, env } = setup('100k.csv', csvOf(rows))
    const child = spawnChild(['bun', CLI, 'import', '--create', file], REPO, env)
    expect(await child.exitCode(60_000)).toBe(0)
    expect(child.stderr).toStartWith('imported 100000 books (1000 authors, 40 collections created)')
    expect(countsIn(path)).toEqual({ authors: 1000, collections: 40, books: 100_000 })
    // CPU time, not wall time: other processes on a busy machine stretch the one, not the other.
    const usage = child.proc.resourceUsage()
    const cpuSeconds = Number(usage?.cpuTime.total ?? 0n) / 1e6
    console.log(
      `import of 100,000 books: ${cpuSeconds.toFixed(1)} s of CPU, ${Math.round((usage?.maxRSS ?? 0) / 2 ** 20)} MB at most`,
    )
    expect(cpuSeconds).toBeGreaterThan(0)
    expect(cpuSeconds).toBeLessThan(10)
  }, 90_000)
})

describe('catalogue import progress', () => {
  it('draws a progress bar on a terminal, then the summary line', async () => {
    const rows = Array.from({ length: 2000 }, (_, i) => [`Book ${i}`, 'A', ''])
    const { file, env } = setup('books.csv', csvOf(rows))
    const { code, output } = await runInTerminal(['import', '--create', file], { env })
    expect(code).toBe(0)
    expect(output).toMatch(/importing \[#{30}\] 100% {2}[\d.]+ KB \/ [\d.]+ KB/)
    expect(output).toContain('imported 2000 books')
  })

  it('writes no bar but the summary line alone when stderr is not a terminal', async () => {
    const { file, env } = setup('books.csv', csvOf([['T', 'A', '']]))
    const run = await runCli(['import', '--create', file], { env })
    expect(run.stderr).not.toContain('\r')
    expect(run.stderr).not.toContain('[')
    expect(run.lines).toHaveLength(1)
  })
})

describe('catalogue import with bad arguments', () => {
  it.each([
    { args: ['import'], message: 'needs the FILE to import (see catalogue import --help)' },
    { args: ['import', 'a.csv', 'b.csv'], message: 'unexpected argument "b.csv" (see catalogue import --help)' },
    { args: ['import', '--bogus', 'a.csv'], message: "Unknown option '--bogus' (see catalogue import --help)" },
    {
      args: ['import', '--format'],
      message: "Option '--format <value>' argument missing (see catalogue import --help)",
    },
    { args: ['import', '--format', 'xml', 'a.csv'], message: '--format must be csv or jsonl (got "xml")' },
  ])('exits 2 with one line for $args', async ({ args, message }) => {
    const database = tempDatabase()
    const run = await runCli(args, { env: { DATABASE_URL: database.url } })
    expect(run.code).toBe(2)
    expect(run.lines).toEqual([`catalogue import: ${message}`])
    expect(existsSync(database.path)).toBe(false)
  })

  it('exits 2 for a file that does not exist, a folder, or a name that tells no format', async () => {
    const { dir, path, env } = setup('books.txt', 'x')
    const missing = await runCli(['import', join(dir, 'none.csv')], { env })
    expect(missing.lines).toEqual([`catalogue import: cannot read ${join(dir, 'none.csv')}: no such file`])
    const folder = await runCli(['import', '--format', 'csv', dir], { env })
    expect(folder.lines).toEqual([`catalogue import: ${dir} is not a file`])
    const unknown = await runCli(['import', join(dir, 'books.txt')], { env })
    expect(unknown.lines).toEqual([
      `catalogue import: cannot tell the format of ${join(dir, 'books.txt')} from its name: give --format csv or --format jsonl`,
    ])
    for (const run of [missing, folder, unknown]) expect(run.code).toBe(2)
    expect(existsSync(path)).toBe(false)
  })

  it('exits 2, before touching the database, for a CSV file whose header names no title and author columns, or that is empty', async () => {
    const wrong = setup('books.csv', 'Name,Writer,Shelf\nT,A,\n')
    const run = await runCli(['import', '--create', wrong.file], { env: wrong.env })
    expect(run.code).toBe(2)
    expect(run.lines).toEqual([
      `catalogue import: ${wrong.file}: its header has no column title and author (found "Name,Writer,Shelf"): a header names the columns title and author (collection optional), in any case and order, separated by commas, semicolons or tabs`,
    ])
    expect(existsSync(wrong.path)).toBe(false)
    const binary = setup('binary.csv', '\x1b[31m\x00\x9b junk'.repeat(20))
    const junk = await runCli(['import', '--create', binary.file], { env: binary.env })
    expect(junk.code).toBe(2)
    expect(junk.stderr).not.toContain('\x1b')
    expect(junk.lines).toHaveLength(1)
    expect(junk.lines[0]).toStartWith(
      `catalogue import: ${binary.file}: its header has no column title and author (found "\\u001b[31m\\u0000\\u009b junk\\u001b`,
    )
    expect(existsSync(binary.path)).toBe(false)
    const empty = setup('empty.csv', '')
    const none = await runCli(['import', '--create', empty.file], { env: empty.env })
    expect(none.code).toBe(2)
    expect(none.lines).toEqual([
      `catalogue import: ${empty.file}: its first line is empty: a header names the columns title and author (collection optional), in any case and order, separated by commas, semicolons or tabs`,
    ])
  })

  it('exits 2 for sqlite://:memory:, where the books would vanish as the command exits', async () => {
    const { file } = setup('books.csv', csvOf([['T', 'A', '']]))
    for (const args of [
      ['import', file],
      ['import', '--dry-run', file],
    ]) {
      const run = await runCli(args, { env: { DATABASE_URL: 'sqlite://:memory:' } })
      expect(run.code).toBe(2)
      expect(run.lines).toEqual([
        "catalogue import: sqlite://:memory: lives inside one process only: a command cannot reach the service's, and what it stored would be lost; give the database file",
      ])
    }
  })

  it('exits 2 for a bad DATABASE_URL, and takes --database-url over it', async () => {
    const { path, file } = setup('books.csv', csvOf([['T', 'A', '']]))
    const bad = await runCli(['import', '--create', file], { env: { DATABASE_URL: 'mysql://x' } })
    expect(bad.code).toBe(2)
    expect(bad.lines).toEqual([
      'catalogue import: DATABASE_URL must start with sqlite:// or postgres:// (got "mysql://x")',
    ])
    const flag = await runCli(['import', '--create', '--database-url', `sqlite://${path}`, file], {
      env: { DATABASE_URL: 'mysql://x' },
    })
    expect(flag.code).toBe(0)
    expect(countsIn(path).books).toBe(1)
  })
})

describe('catalogue import --help', () => {
  it('prints the usage, the formats and the options, and exits 0', async () => {
    const run = await runCli(['import', '--help'])
    expect(run.code).toBe(0)
    for (const word of [
      'Usage: catalogue import [options] FILE',
      'title,author,collection',
      '--dry-run',
      '--format',
      '--database-url',
      'DATABASE_URL',
    ]) {
      expect(run.stdout).toContain(word)
    }
  })
})
