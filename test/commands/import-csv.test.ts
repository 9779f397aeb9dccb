import { afterAll, afterEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { booksIn, runCli, tempDatabase } from '../support/commands'
import { removeTempDirs, stopChildren } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

afterEach(stopChildren)
afterAll(removeTempDirs)

/** A database location and a CSV file beside it holding `content`. */
function csvFile(content: string | Uint8Array) {
  const database = tempDatabase()
  const file = join(database.dir, 'books.csv')
  writeFileSync(file, content)
  return { ...database, file, env: { DATABASE_URL: database.url } }
}

describe('catalogue import FILE.csv: the header', () => {
  it("reads a spreadsheet's export: names in any case, an unknown column left aside with one note", async () => {
    const { path, file, env } = csvFile(
      'Title,Author,Collection,ISBN\nDune,Frank Herbert,Dune,9780441013593\nKindred,Octavia E. Butler,,9780807083697\n',
    )
    const run = await runCli(['import', '--create', file], { env })
    expect(run.code).toBe(0)
    expect(run.lines[0]).toBe('note: the column "ISBN" is left aside (the import reads title, author, collection)')
    expect(run.lines[1]).toStartWith('imported 2 books (2 authors, 1 collection created)')
    expect(run.lines).toHaveLength(2)
    expect(booksIn(path)).toEqual([
      { title: 'Dune', author: 'Frank Herbert', collection: 'Dune' },
      { title: 'Kindred', author: 'Octavia E. Butler', collection: null },
    ])
  })

  it('names every column it leaves aside in its one note', async () => {
    const { path, file, env } = csvFile('Title,Author,ISBN,Year\nDune,Frank Herbert,9780441013593,1965\n')
    const run = await runCli(['import', '--create', file], { env })
    expect(run.code).toBe(0)
    expect(run.lines[0]).toBe(
      'note: the columns "ISBN", "Year" are left aside (the import reads title, author, collection)',
    )
    expect(booksIn(path)).toEqual([{ title: 'Dune', author: 'Frank Herbert', collection: null }])
  })

  it('takes the columns in any order, with spaces around their names, and no collection column (every book in none)', async () => {
    const { path, file, env } = csvFile(' YEAR , AUTHOR ,Title \n1965,Frank Herbert,Dune\n')
    const run = await runCli(['import', '--create', file], { env })
    expect(run.code).toBe(0)
    expect(run.lines[0]).toBe('note: the column " YEAR " is left aside (the import reads title, author, collection)')
    expect(booksIn(path)).toEqual([{ title: 'Dune', author: 'Frank Herbert', collection: null }])
  })

  it('exits 2 with one line, creating nothing, when the title or the author column is missing or named twice', async () => {
    const noAuthor = csvFile('title,collection\nDune,Dune\n')
    const run = await runCli(['import', '--create', noAuthor.file], { env: noAuthor.env })
    expect(run.code).toBe(2)
    expect(run.lines).toEqual([
      `catalogue import: ${noAuthor.file}: its header has no column author (found "title,collection"): a header names the columns title and author (collection optional), in any case and order, separated by commas, semicolons or tabs`,
    ])
    expect(existsSync(noAuthor.path)).toBe(false)

    const twice = csvFile('title,author,Title\nA,B,C\n')
    const again = await runCli(['import', '--create', twice.file], { env: twice.env })
    expect(again.code).toBe(2)
    expect(again.lines).toEqual([
      `catalogue import: ${twice.file}: its header names the column title twice (found "title,author,Title"): a header names the columns title and author (collection optional), in any case and order, separated by commas, semicolons or tabs`,
    ])
    expect(existsSync(twice.path)).toBe(false)
  })
})

describe('catalogue import FILE.csv: the delimiter', () => {
  it('is found from the header: semicolons (commas are then part of a name), or tabs', async () => {
    const semicolons = csvFile('Title;Author;Collection\nSmith, his book;Smith, John;\n"Quoted; title";Anon;Shelf\n')
    expect((await runCli(['import', '--create', semicolons.file], { env: semicolons.env })).code).toBe(0)
    expect(booksIn(semicolons.path)).toEqual([
      { title: 'Smith, his book', author: 'Smith, John', collection: null },
      { title: 'Quoted; title', author: 'Anon', collection: 'Shelf' },
    ])
    const tabs = csvFile('title\tauthor\tcollection\nA, B; C\tAnon\t\n')
    expect((await runCli(['import', '--create', tabs.file], { env: tabs.env })).code).toBe(0)
    expect(booksIn(tabs.path)).toEqual([{ title: 'A, B; C', author: 'Anon', collection: null }])
  })

  it('is given by --delimiter when the header does not tell (exit 2 without it), tab by name', async () => {
    const pipes = csvFile('title|author|collection\nDune|Frank Herbert|Dune\n')
    const refused = await runCli(['import', '--create', pipes.file], { env: pipes.env })
    expect(refused.code).toBe(2)
    expect(refused.lines[0]).toStartWith(`catalogue import: ${pipes.file}: its header has no column title and author`)
    expect(existsSync(pipes.path)).toBe(false)
    const given = await runCli(['import', '--create', '--delimiter', '|', pipes.file], { env: pipes.env })
    expect(given.code).toBe(0)
    expect(booksIn(pipes.path)).toEqual([{ title: 'Dune', author: 'Frank Herbert', collection: 'Dune' }])

    const tabs = csvFile('title\tauthor\nDune\tFrank Herbert\n')
    expect((await runCli(['import', '--create', '--delimiter', 'tab', tabs.file], { env: tabs.env })).code).toBe(0)
    expect(booksIn(tabs.path)).toEqual([{ title: 'Dune', author: 'Frank Herbert', collection: null }])
  })

  it('exits 2 when the delimiter given does not split the header, and for a delimiter that cannot be one', async () => {
    const commas = csvFile('title,author,collection\nDune,Frank Herbert,\n')
    const wrong = await runCli(['import', '--create', '--delimiter', ';', commas.file], { env: commas.env })
    expect(wrong.code).toBe(2)
    expect(wrong.lines).toEqual([
      `catalogue import: ${commas.file}: its header has no column title and author (found "title,author,collection", delimiter ";")`,
    ])
    for (const bad of ['"', ';;']) {
      const run = await runCli(['import', '--create', '--delimiter', bad, commas.file], { env: commas.env })
      expect(run.code).toBe(2)
      expect(run.lines).toEqual([
        `catalogue import: --delimiter must be one character, such as , or ; or tab (got "${bad}")`,
      ])
    }
    expect(existsSync(commas.path)).toBe(false)
  })
})

describe('catalogue import FILE.csv: names', () => {
  it('drops the spaces around a name, quoted or not; a name of spaces only is still blank', async () => {
    const { path, file, env } = csvFile(
      'title, author, collection\n  Dune , Frank Herbert ,  Dune \n" Kindred ", Octavia E. Butler ,\n   , Anon,\n',
    )
    const run = await runCli(['import', '--create', file], { env })
    expect(run.code).toBe(1)
    expect(run.lines[0]).toBe("line 4: Title can't be blank")
    expect(booksIn(path)).toEqual([
      { title: 'Dune', author: 'Frank Herbert', collection: 'Dune' },
      { title: 'Kindred', author: 'Octavia E. Butler', collection: null },
    ])
  })
})

describe('catalogue import --encoding', () => {
  // "Café", "Crème" and "€uro" in Latin-1 (Windows-1252: 0x80 is the euro sign), as a spreadsheet on Windows saves them.
  const latin1 = new Uint8Array([
    ...new TextEncoder().encode('title;author;collection\nCaf'),
    0xe9,
    ...new TextEncoder().encode(';Cr'),
    0xe8,
    ...new TextEncoder().encode('me;\n'),
    0x80,
    ...new TextEncoder().encode('uro;Anon;\n'),
  ])

  it('latin1 reads a Latin-1 file (as Windows-1252, as browsers do)', async () => {
    const { path, file, env } = csvFile(latin1)
    const run = await runCli(['import', '--create', '--encoding', 'latin1', file], { env })
    expect(run.code).toBe(0)
    expect(booksIn(path)).toEqual([
      { title: 'Café', author: 'Crème', collection: null },
      { title: '€uro', author: 'Anon', collection: null },
    ])
  })

  it('is UTF-8 by default: the same file has two lines that are not UTF-8, and a note names --encoding latin1', async () => {
    const { path, file, env } = csvFile(latin1)
    const run = await runCli(['import', '--create', file], { env })
    expect(run.code).toBe(1)
    expect(run.lines.slice(0, 3)).toEqual([
      'line 2: not UTF-8 text',
      'line 3: not UTF-8 text',
      'note: 2 lines are not UTF-8: if the file is Latin-1 (Windows-1252), import it with --encoding latin1',
    ])
    expect(booksIn(path)).toEqual([])
  })

  it('exits 2 for an encoding it does not read', async () => {
    const { path, file, env } = csvFile(latin1)
    const run = await runCli(['import', '--create', '--encoding', 'ebcdic', file], { env })
    expect(run.code).toBe(2)
    expect(run.lines).toEqual(['catalogue import: --encoding must be utf-8 or latin1 (got "ebcdic")'])
    expect(existsSync(path)).toBe(false)
  })
})
