import { statSync } from 'node:fs'
import { STORE_SETTINGS, storeSettingsHelp } from '../config'
import { resources } from '../resources/registry'
import { holdsCatalogue, openStore, refusedToCommands, shownDatabaseUrl } from '../store/open'
import type { Store } from '../store/store'
import { parseCommandArguments } from './arguments'
import { IMPORT_BATCH_SIZE, importBooks, MAX_IMPORT_BATCH_SIZE, MAX_REPORTED_LINES } from './book-import'
import { type Command, UsageError } from './command'
import { BOOK_FIELDS } from './formats/book-lines'
import { exportHeaderOf, FORMAT_NAME, parseHeader } from './formats/catalogue-file'
import { csvLayout, parseDelimiter } from './formats/csv-header'
import { decodeBytes, type Encoding, encodings, MAX_LINE_BYTES } from './formats/line-reader'
import { printable } from './formats/printable'
import { openCommandStore } from './open-store'
import { say } from './progress'
import { RESTORE_BATCH_SIZE, restoreExport } from './restore'

export { IMPORT_BATCH_SIZE, MAX_REPORTED_LINES } from './book-import'

const help = `catalogue import: restore an export, or add books from a CSV or JSON Lines file

Usage: catalogue import [options] FILE

FILE is one of:
- an export (its first line names the format ${FORMAT_NAME}): every record is
  restored with its id, into an empty database; the id counters are raised to the file's, so
  that no id it holds or held is handed out again. The file is checked whole first: if any of it
  is bad, nothing is stored. ${RESTORE_BATCH_SIZE} records per transaction.
- CSV (.csv) whose first line names the columns ${BOOK_FIELDS.join(', ')} (title and author needed),
  in any case and order, separated by commas, semicolons or tabs (found from the header, or
  --delimiter), such as ${BOOK_FIELDS.join(',')} or Title;Author;Collection;ISBN; other columns
  are left aside. Spaces around a name are dropped.
- JSON Lines (.jsonl, .ndjson) of objects
  {"title": "...", "author": "...", "collection": "..." or null}.
For CSV and JSON Lines, the collection may be empty, null or absent: the book is then in none.
Authors and collections are found by their exact name, or created. A book whose title, author and
collection are those of a book already stored is not added again: importing a file twice adds
nothing the second time. Books are stored in batches, each in one transaction, so the service can
keep running meanwhile: ${IMPORT_BATCH_SIZE} books; on SQLite more as the catalogue grows (a twentieth
of its books, at most ${MAX_IMPORT_BATCH_SIZE}, and what the last batch's pace stores in a second). A
bad line (wrong number of fields, not JSON, a name the API would refuse) is reported on stderr as
"line N: reason" (the first ${MAX_REPORTED_LINES}, then how many more) and skipped; the others are
stored.

Options:
  --create                            create the database if there is none (else: exit 2)
  --dry-run                           check every line and count what would be added; store
                                      nothing, and create or migrate no database
  --merge                             an export into a database that holds records: add the
                                      records it lacks; those it holds under the same ids must be
                                      the same (else nothing is stored)
  --format csv|jsonl                  the file's format, when its name does not tell
  --delimiter ,|;|tab                 CSV: the delimiter, when the header does not tell
  --encoding utf-8|latin1             a file of books' encoding (default utf-8; latin1 is read
                                      as Windows-1252, as browsers do); an export is UTF-8
${storeSettingsHelp(STORE_SETTINGS)}
  --help                              print this text and exit

Exit status: 0 every line imported or already present, 1 some lines were bad (the others were
stored) or the database failed part-way, 2 bad arguments, no database (without --create), an
unreadable file, a wrong header, an export that is not sound or meets a database not empty;
130 or 143 a file of books stopped by SIGINT or SIGTERM (the batches before kept).
`

const flags = {
  format: { type: 'string' },
  'dry-run': { type: 'boolean' },
  create: { type: 'boolean' },
  merge: { type: 'boolean' },
  delimiter: { type: 'string' },
  encoding: { type: 'string' },
} as const

type Format = 'csv' | 'jsonl'

function formatOf(file: string, given: string | undefined): Format | null {
  if (given !== undefined) {
    if (given === 'csv' || given === 'jsonl') return given
    throw new UsageError(`--format must be csv or jsonl (got "${given}")`)
  }
  const lower = file.toLowerCase()
  if (lower.endsWith('.csv')) return 'csv'
  if (lower.endsWith('.jsonl') || lower.endsWith('.ndjson')) return 'jsonl'
  return null
}

function encodingOf(given: string | undefined): Encoding {
  if (given === undefined) return 'utf-8'
  const name = given
    .toLowerCase()
    .replace(/^utf8$/, 'utf-8')
    .replace(/^(latin-1|iso-8859-1)$/, 'latin1')
  if ((encodings as readonly string[]).includes(name)) return name as Encoding
  throw new UsageError(`--encoding must be utf-8 or latin1 (got "${given}")`)
}

/** The size of a file that can be read, or a UsageError saying why not. */
function readableSize(file: string): number {
  try {
    const stat = statSync(file)
    if (!stat.isFile()) throw new UsageError(`${file} is not a file`)
    return stat.size
  } catch (error) {
    if (error instanceof UsageError) throw error
    const code = (error as { code?: string }).code
    throw new UsageError(`cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : (error as Error).message}`)
  }
}

/** The file's first line as text, without its line break (or a byte order mark); '' for an empty file. */
async function firstLine(file: string, encoding: Encoding): Promise<string> {
  const head = await Bun.file(file)
    .slice(0, MAX_LINE_BYTES)
    .bytes()
    .catch((error: Error) => {
      throw new UsageError(`cannot read ${file}: ${error.message}`)
    })
  const end = head.indexOf(0x0a)
  const bytes = end === -1 ? head : head.subarray(0, end)
  const text = decodeBytes(bytes, encoding) ?? new TextDecoder().decode(bytes)
  return text.replace(/^\uFEFF/, '').replace(/\r$/, '')
}

async function runImport(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<number> {
  const started = performance.now()
  const { values, positionals, store: settings } = parseCommandArguments('import', argv, env, flags, 1, STORE_SETTINGS)
  const file = positionals[0]
  if (file === undefined) throw new UsageError('needs the FILE to import (see catalogue import --help)')
  let format = formatOf(file, values.format)
  const encoding = encodingOf(values.encoding)
  const delimiter = values.delimiter === undefined ? undefined : parseDelimiter(values.delimiter)
  const dryRun = values['dry-run'] === true
  const size = readableSize(file)
  const first = await firstLine(file, encoding)

  // An export is known by its first line, whatever the file's name.
  const header = format === 'csv' ? null : exportHeaderOf(first)
  if (!header && format === null) {
    throw new UsageError(`cannot tell the format of ${file} from its name: give --format csv or --format jsonl`)
  }
  format ??= 'jsonl'
  if (delimiter !== undefined && format !== 'csv') throw new UsageError('--delimiter is for CSV files only')
  const tallies = header ? parseHeader(header, resources) : null
  if (typeof tallies === 'string') throw new UsageError(`${file} cannot be restored: ${tallies}`)
  if (tallies && encoding !== 'utf-8')
    throw new UsageError(`${file} is a catalogue export, always UTF-8: drop --encoding`)
  const layout = format === 'csv' ? csvLayout(first, delimiter) : null
  if (typeof layout === 'string') throw new UsageError(`${file}: ${layout}`)
  if (values.merge && !tallies) throw new UsageError('--merge is for a catalogue export; a file of books always adds')

  const where = shownDatabaseUrl(settings.databaseUrl)
  const refused = refusedToCommands(settings.database, settings.databaseUrl)
  if (refused !== null) throw new UsageError(refused)
  const present = await holdsCatalogue(settings.database, {
    connectTimeoutSeconds: settings.databaseConnectTimeout,
    preparedStatements: settings.databasePreparedStatements,
  }).catch((error: Error) => {
    throw new UsageError(`cannot open the database at ${where}: ${error.message}`)
  })
  if (!present && !dryRun && values.create !== true) {
    throw new UsageError(
      `there is no catalogue at ${where}: check the database's name, or give --create to make a new one there`,
    )
  }
  // Opened when needed: a restore that creates the database does so once the file is found sound.
  const opened: { store?: Store } = {}
  const open = async (): Promise<Store> => {
    if (!present && dryRun) {
      say(`note: there is no catalogue at ${where}: the file is checked as against an empty one, and none is created`)
      opened.store = await openStore({ kind: 'sqlite', path: ':memory:' }, resources)
    } else {
      // A dry run neither migrates the database nor writes to it.
      opened.store = await openCommandStore(settings, resources, { migrate: !dryRun })
    }
    return opened.store
  }
  try {
    if (tallies) {
      const exported = { path: file, size, encoding, tallies }
      const options = { dryRun, merge: values.merge === true, where }
      return await restoreExport(present || dryRun ? await open() : open, resources, exported, options, started)
    }
    if (layout && layout.ignored.length > 0) {
      const ignored = layout.ignored.map((name) => `"${printable(name)}"`).join(', ')
      const columns = layout.ignored.length === 1 ? `column ${ignored} is` : `columns ${ignored} are`
      say(`note: the ${columns} left aside (the import reads ${BOOK_FIELDS.join(', ')})`)
    }
    return await importBooks(await open(), { path: file, size, encoding, csv: layout }, dryRun, started)
  } finally {
    await opened.store?.close()
  }
}

export const importCommand: Command = {
  name: 'import',
  summary: 'restore an export, or add books from a CSV or JSON Lines file',
  help,
  run: runImport,
}
