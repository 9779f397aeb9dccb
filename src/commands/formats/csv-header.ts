import { UsageError } from '../command'
import { BOOK_FIELDS, type BookColumns } from './book-lines'
import { CsvRecords } from './csv-records'
import { printable } from './printable'

/** The delimiters a header is tried with, in this order, when none is given. */
export const DELIMITERS = [',', ';', '\t'] as const

const NEEDED =
  'a header names the columns title and author (collection optional), in any case and order, separated by commas, semicolons or tabs'

/** Where a CSV file's columns are, as its header names them. */
export interface CsvLayout {
  readonly delimiter: string
  /** Each column the import reads, by its index; a file without a collection column has its books in none. */
  readonly columns: BookColumns
  /** The header's names, as the file writes them (a record has as many fields). */
  readonly names: readonly string[]
  /** The names of the columns the import leaves aside. */
  readonly ignored: readonly string[]
}

/** `--delimiter`: one character (not a quote or a line break), or `tab`. */
export function parseDelimiter(given: string): string {
  if (given === 'tab' || given === '\\t') return '\t'
  if ([...given].length !== 1 || /["\r\n]/.test(given)) {
    throw new UsageError(`--delimiter must be one character, such as , or ; or tab (got "${printable(given)}")`)
  }
  return given
}

/** The header's fields split at `delimiter`, or null when it cannot be read so. */
function headerFields(header: string, delimiter: string): string[] | null {
  const record = new CsvRecords(delimiter).push({ number: 1, text: header })
  return record && 'fields' in record ? record.fields : null
}

/** The layout the header gives with this delimiter, or why it gives none. */
function layoutWith(header: string, delimiter: string): CsvLayout | string {
  const names = headerFields(header, delimiter)
  if (!names) return `its first line is not a header that can be read with the delimiter ${shown(delimiter)}`
  const keys = names.map((name) => name.trim().toLowerCase())
  const index = (field: string): number | null => {
    const at = keys.indexOf(field)
    return at === -1 ? null : at
  }
  const twice = BOOK_FIELDS.find((field) => keys.indexOf(field) !== keys.lastIndexOf(field))
  if (twice) return `its header names the column ${twice} twice`
  const title = index('title')
  const author = index('author')
  if (title === null || author === null) {
    const missing = [title === null ? 'title' : null, author === null ? 'author' : null].filter(Boolean).join(' and ')
    return `its header has no column ${missing}`
  }
  const ignored = names.filter((_, i) => !(BOOK_FIELDS as readonly string[]).includes(keys[i] as string))
  return { delimiter, columns: { title, author, collection: index('collection') }, names, ignored }
}

function shown(delimiter: string): string {
  return delimiter === '\t' ? 'tab' : `"${printable(delimiter)}"`
}

/**
 * Reads a CSV file's first line: the columns title and author (collection optional), named in any
 * case, with spaces around, in any order, among others the import ignores. The delimiter is the
 * one given, or the first of `,` `;` tab with which the header names title and author.
 */
export function csvLayout(header: string, given: string | undefined): CsvLayout | string {
  if (header === '') return `its first line is empty: ${NEEDED}`
  const found = `found "${printable(header)}"`
  if (given !== undefined) {
    const layout = layoutWith(header, given)
    return typeof layout === 'string' ? `${layout} (${found}, delimiter ${shown(given)})` : layout
  }
  for (const delimiter of DELIMITERS) {
    const layout = layoutWith(header, delimiter)
    if (typeof layout !== 'string') return layout
  }
  // The reason the delimiter the header holds most gives: the likeliest one meant.
  const likeliest = [...DELIMITERS].sort((a, b) => header.split(b).length - header.split(a).length)[0] ?? ','
  const reason = layoutWith(header, likeliest)
  const why = typeof reason === 'string' ? reason : 'its header cannot be read'
  return `${why} (${found}): ${NEEDED}`
}
