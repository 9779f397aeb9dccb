import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { bookFromJson, bookFromCsv as fromCsv } from '../../src/commands/formats/book-lines'
import { booksIn, countsIn, csvOf, runCli, tempDatabase } from '../support/commands'
import { removeTempDirs } from '../support/process'

// The names of an import line follow the API's rules (docs/names.md): stored in NFC, refused with
// a control character or a line break, blank when only combining marks.

setDefaultTimeout(30_000)
afterAll(removeTempDirs)

const NFC = 'Émile Zola'
/** A CSV record under the header title,author,collection. */
const bookFromCsv = (fields: readonly string[]) =>
  fromCsv(fields, { title: 0, author: 1, collection: 2 }, ['title', 'author', 'collection'])
const NFD = 'E\u0301mile Zola'

describe('an import line', () => {
  it('gives its title, author and collection in NFC, from CSV and from JSON', () => {
    const expected = { title: 'Thérèse Raquin', author: NFC, collection: 'Les Rougon-Macquart, édition' }
    const sent = ['The\u0301re\u0300se Raquin', NFD, 'Les Rougon-Macquart, e\u0301dition']
    expect(bookFromCsv(sent)).toEqual(expected)
    expect(bookFromJson(JSON.stringify({ title: sent[0], author: sent[1], collection: sent[2] }))).toEqual(expected)
  })

  it.each([
    [['Two\nlines', NFC, ''], 'Title must not contain control characters or line breaks (U+000A at character 4)'],
    [
      ['Germinal', '\u001b[2JZola', ''],
      'Author must not contain control characters or line breaks (U+001B at character 1)',
    ],
    [
      ['Germinal', NFC, 'Rougon\u0000'],
      'Collection must not contain control characters or line breaks (U+0000 at character 7)',
    ],
    [
      ['Germinal', NFC, 'Rougon\t1'],
      'Collection must not contain control characters or line breaks (U+0009 at character 7)',
    ],
    [['\u0301\u0308', NFC, ''], "Title can't be blank"],
    [['Germinal', '\u0301', ''], "Author can't be blank"],
  ])('%j is bad: %s', (fields, reason) => {
    expect(bookFromCsv(fields)).toBe(reason)
    const [title, author, collection] = fields
    expect(bookFromJson(JSON.stringify({ title, author, collection }))).toBe(reason)
  })
})

describe('catalogue import', () => {
  it('makes one author of a name sent composed and decomposed, and reports lines with control characters', async () => {
    const { dir, path, url } = tempDatabase()
    const file = join(dir, 'books.csv')
    writeFileSync(
      file,
      csvOf([
        ['Germinal', NFC, ''],
        ['Nana', NFD, ''],
        ['Bad\u001b[31m', NFC, ''],
      ]),
    )
    const run = await runCli(['import', '--create', file], { env: { DATABASE_URL: url } })
    expect(run.code).toBe(1)
    expect(run.lines[0]).toBe(
      'line 4: Title must not contain control characters or line breaks (U+001B at character 4)',
    )
    expect(run.lines[1]).toStartWith(
      'imported 2 books (1 author, 0 collections created), 0 already present, 1 bad line',
    )
    expect(countsIn(path)).toEqual({ authors: 1, collections: 0, books: 2 })
    expect(booksIn(path).map((book) => book.author)).toEqual([NFC, NFC])
  })
})
