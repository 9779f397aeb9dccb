import { statSync } from 'node:fs'
import { storeSettingsHelp } from '../config'
import { resources } from '../resources/registry'
import { StoreUnavailableError } from '../store/faults'
import type { ImportCounts, NamedBook } from '../store/store'
import { parseCommandArguments } from './arguments'
import { BOOK_FIELDS, bookFromCsv, bookFromJson } from './book-lines'
import { type Command, UsageError } from './command'
import { CsvRecords } from './csv-records'
import { LineReader, type PhysicalLine, TOO_LONG } from './line-reader'
import { openCommandStore } from './open-store'
import { count, formatBytes, Progress, printable, say } from './progress'

/** Books per transaction: large enough to amortize a commit, short enough not to hold up the service's writes. */
export const IMPORT_BATCH_SIZE = 5000
/** Bad lines reported one by one; past these, only their number. */
export const MAX_REPORTED_LINES = 100

type Format = 'csv' | 'jsonl'
const HEADER = BOOK_FIELDS.join(',')

const help = `catalogue import: add books from a CSV or JSON Lines file

Usage: catalogue import [options] FILE

FILE is CSV (.csv) whose first line is exactly the header ${HEADER}, or JSON Lines
(.jsonl, .ndjson) of objects {"title": "...", "author": "...", "collection": "..." or null}.
The collection may be empty (CSV), null or absent (JSON): the book is then in none.
Authors and collections are found by their exact name, or created. A book whose title, author and
collection are those of a book already stored is not added again: importing a file twice adds
nothing the second time. Books are stored ${IMPORT_BATCH_SIZE} at a time, each batch in one transaction,
so the service can keep running meanwhile.

A bad line (wrong number of fields, not JSON, a name the API would refuse) is reported on stderr
as "line N: reason" (the first ${MAX_REPORTED_LINES}, then how many more) and skipped; the others are stored.

Options:
  --format csv|jsonl                  the file's format, when its name does not tell
  --dry-run                           check every line and count what would be added; store nothing
${storeSettingsHelp}
  --help                              print this text and exit

Exit status: 0 every line imported or already present, 1 some lines were bad (the others were
stored) or the database failed part-way, 2 bad arguments, an unreadable file or a wrong header.
`

function formatOf(file: string, given: string | undefined): Format {
  if (given !== undefined) {
    if (given === 'csv' || given === 'jsonl') return given
    throw new UsageError(`--format must be csv or jsonl (got "${given}")`)
  }
  const lower = file.toLowerCase()
  if (lower.endsWith('.csv')) return 'csv'
  if (lower.endsWith('.jsonl') || lower.endsWith('.ndjson')) return 'jsonl'
  throw new UsageError(`cannot tell the format of ${file} from its name: give --format csv or --format jsonl`)
}

/** The size of a file that can be read, or a UsageError saying why not. */
async function readableSize(file: string): Promise<number> {
  let size: number
  try {
    const stat = statSync(file)
    if (!stat.isFile()) throw new UsageError(`${file} is not a file`)
    size = stat.size
  } catch (error) {
    if (error instanceof UsageError) throw error
    const code = (error as { code?: string }).code
    throw new UsageError(`cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : (error as Error).message}`)
  }
  // Opening it reports a file that cannot be read (permissions) before the database is touched.
  await Bun.file(file)
    .slice(0, 1)
    .bytes()
    .catch((error: Error) => {
      throw new UsageError(`cannot read ${file}: ${error.message}`)
    })
  return size
}

/** Checks the CSV header line before anything else happens. */
async function checkHeader(file: string): Promise<void> {
  const head = await Bun.file(file).slice(0, 1024).text()
  const first = head.split('\n', 1)[0] ?? ''
  const header = first.replace(/^\uFEFF/, '').replace(/\r$/, '')
  if (header !== HEADER) {
    const found = head === '' ? 'the file is empty' : `found "${printable(header)}"`
    throw new UsageError(`${file}: the first line must be the header ${HEADER} (${found})`)
  }
}

function summary(dryRun: boolean, totals: ImportCounts, bad: number, seconds: number): string {
  const created = `${count(totals.authors, 'author')}, ${count(totals.collections, 'collection')}`
  const rest = `${totals.present} already present, ${count(bad, 'bad line')} in ${seconds.toFixed(1)} s`
  return dryRun
    ? `dry run: would import ${count(totals.books, 'book')} (${created} to create), ${rest}; nothing was stored`
    : `imported ${count(totals.books, 'book')} (${created} created), ${rest}`
}

async function runImport(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<number> {
  const started = performance.now()
  const {
    values,
    positionals,
    store: settings,
  } = parseCommandArguments('import', argv, env, { format: { type: 'string' }, 'dry-run': { type: 'boolean' } }, 1)
  const file = positionals[0]
  if (file === undefined) throw new UsageError('needs the FILE to import (see catalogue import --help)')
  const format = formatOf(file, values.format)
  const dryRun = values['dry-run'] === true
  const size = await readableSize(file)
  if (format === 'csv') await checkHeader(file)

  const store = await openCommandStore(settings, resources)
  const importer = store.openImport({ dryRun })
  const progress = new Progress(
    dryRun ? 'checking' : 'importing',
    size,
    (done, total) => `${formatBytes(done)} / ${formatBytes(total)}`,
  )
  const totals = { books: 0, present: 0, authors: 0, collections: 0 }
  let bad = 0
  let batch: NamedBook[] = []
  /** The lines of the first and the last book in `batch`, for a failure's report. */
  let firstLine = 0
  let lastLine = 0

  const badLine = (line: number, reason: string) => {
    bad++
    if (bad <= MAX_REPORTED_LINES) progress.note(`line ${line}: ${reason}`)
  }
  const take = (line: number, book: NamedBook | string) => {
    if (typeof book === 'string') return badLine(line, book)
    if (batch.length === 0) firstLine = line
    batch.push(book)
    lastLine = line
  }
  const flush = async () => {
    if (batch.length === 0) return
    const added = await importer.add(batch)
    for (const key of Object.keys(totals) as (keyof ImportCounts)[]) totals[key] += added[key]
    batch = []
  }

  const reader = new LineReader(Bun.file(file).stream())
  const csv = new CsvRecords()
  const readLine = (line: PhysicalLine) => {
    if (format === 'jsonl') {
      if (line.fault) return badLine(line.number, line.fault === 'too-long' ? TOO_LONG : 'not UTF-8 text')
      if (line.text.trim() === '') return
      return take(line.number, bookFromJson(line.text))
    }
    // The header, checked before.
    if (line.number === 1) return
    const record = csv.push(line)
    if (!record) return
    if ('error' in record) return badLine(record.line, record.error)
    take(record.line, bookFromCsv(record.fields))
  }

  let code = 0
  try {
    for await (const lines of reader.batches()) {
      for (const line of lines) {
        readLine(line)
        if (batch.length >= IMPORT_BATCH_SIZE) await flush()
      }
      progress.update(reader.bytesRead)
    }
    const last = csv.end()
    if (last && 'error' in last) badLine(last.line, last.error)
    await flush()
  } catch (error) {
    if (!(error instanceof StoreUnavailableError)) throw error
    progress.finish()
    const stored = dryRun
      ? 'nothing was stored'
      : `the batch of lines ${firstLine} to ${lastLine} was not stored, the ${count(totals.books, 'book')} before it were`
    say(
      `catalogue import: the database failed (${error.description}: ${error.message}); ${stored}. Run the same import again once it is fixed: it adds only what is missing`,
    )
    code = 1
  } finally {
    await importer.close()
    await store.close()
  }
  if (code !== 0) return code
  progress.finish()
  if (bad > MAX_REPORTED_LINES) say(`... and ${bad - MAX_REPORTED_LINES} more bad lines`)
  say(summary(dryRun, totals, bad, (performance.now() - started) / 1000))
  return bad > 0 ? 1 : 0
}

export const importCommand: Command = {
  name: 'import',
  summary: 'add books from a CSV or JSON Lines file (authors and collections by name)',
  help,
  run: runImport,
}
