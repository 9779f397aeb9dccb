import type { ImportCounts, NamedBook } from '../model/imports'
import { StoreUnavailableError } from '../store/faults'
import type { Store } from '../store/store'
import { bookFromCsv, bookFromJson } from './formats/book-lines'
import type { CsvLayout } from './formats/csv-header'
import { CsvRecords } from './formats/csv-records'
import { type Encoding, LineReader, NOT_UTF8, type PhysicalLine, TOO_LONG } from './formats/line-reader'
import { count, formatBytes, Progress, say } from './progress'

export { IMPORT_BATCH_SIZE, MAX_IMPORT_BATCH_SIZE } from '../store/import-batches'

/** The exit status of an import stopped by a signal: 128 and the signal's number, as a shell reports it. */
const EXIT_ON = { SIGINT: 130, SIGTERM: 143 } as const

/** Bad lines reported one by one; past these, only their number. */
export const MAX_REPORTED_LINES = 100

/** A file of books named by their title, author and collection: CSV (with its header's layout) or JSON Lines. */
export interface BookFile {
  readonly path: string
  readonly size: number
  readonly encoding: Encoding
  /** Null: JSON Lines. */
  readonly csv: CsvLayout | null
}

function summary(dryRun: boolean, totals: ImportCounts, bad: number, seconds: number): string {
  const created = `${count(totals.authors, 'author')}, ${count(totals.collections, 'collection')}`
  const rest = `${totals.present} already present, ${count(bad, 'bad line')} in ${seconds.toFixed(1)} s`
  return dryRun
    ? `dry run: would import ${count(totals.books, 'book')} (${created} to create), ${rest}; nothing was stored`
    : `imported ${count(totals.books, 'book')} (${created} created), ${rest}`
}

/**
 * Adds the books of the file through the store's import, a batch at a time, and reports: bad lines
 * on stderr, then one summary line. Resolves to the exit code (0, or 1 for bad lines or a failure,
 * or 130 / 143 when SIGINT / SIGTERM stopped it).
 */
export async function importBooks(store: Store, file: BookFile, dryRun: boolean, started: number): Promise<number> {
  const importer = store.openImport({ dryRun })
  const progress = new Progress(
    dryRun ? 'checking' : 'importing',
    file.size,
    (done, total) => `${formatBytes(done)} / ${formatBytes(total)}`,
  )
  const totals = { books: 0, present: 0, authors: 0, collections: 0 }
  let bad = 0
  let notUtf8 = 0
  let batch: NamedBook[] = []
  /** The lines of the first and the last book in `batch`, for a failure's report. */
  let firstLine = 0
  let lastLine = 0

  const badLine = (line: number, reason: string) => {
    bad++
    if (reason === NOT_UTF8) notUtf8++
    if (bad <= MAX_REPORTED_LINES) progress.note(`line ${line}: ${reason}`)
  }
  const take = (line: number, book: NamedBook | string) => {
    if (typeof book === 'string') return badLine(line, book)
    if (batch.length === 0) firstLine = line
    batch.push(book)
    lastLine = line
  }
  /** The last line of the last batch added. */
  let addedThrough = 0
  const flush = async () => {
    if (batch.length === 0) return
    const added = await importer.add(batch)
    for (const key of Object.keys(totals) as (keyof ImportCounts)[]) totals[key] += added[key]
    batch = []
    addedThrough = lastLine
  }

  const reader = new LineReader(Bun.file(file.path).stream(), file.encoding)
  const layout = file.csv
  const csv = new CsvRecords(layout?.delimiter)
  const readLine = (line: PhysicalLine) => {
    if (!layout) {
      if (line.fault) return badLine(line.number, line.fault === 'too-long' ? TOO_LONG : NOT_UTF8)
      if (line.text.trim() === '') return
      return take(line.number, bookFromJson(line.text))
    }
    // The header, read before.
    if (line.number === 1) return
    const record = csv.push(line)
    if (!record) return
    if ('error' in record) return badLine(record.line, record.error)
    take(record.line, bookFromCsv(record.fields, layout.columns, layout.names))
  }

  // Ctrl-C, or a service manager's stop: the batch under way ends, then the import closes as at its
  // end (its words, and the indexes it left to its end, written); a second signal exits at once.
  let stoppedBy: 'SIGINT' | 'SIGTERM' | null = null
  const stop = (signal: 'SIGINT' | 'SIGTERM') => {
    if (stoppedBy) process.exit(EXIT_ON[signal])
    stoppedBy = signal
  }
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)

  let code = 0
  try {
    reading: for await (const lines of reader.batches()) {
      for (const line of lines) {
        readLine(line)
        if (batch.length >= importer.batchSize) await flush()
        if (stoppedBy) break reading
      }
      progress.update(reader.bytesRead)
    }
    if (!stoppedBy) {
      const last = csv.end()
      if (last && 'error' in last) badLine(last.line, last.error)
      await flush()
    }
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
    process.off('SIGINT', stop)
    process.off('SIGTERM', stop)
  }
  if (code !== 0) return code
  progress.finish()
  if (stoppedBy) {
    const done = dryRun ? 'nothing was stored' : `${count(totals.books, 'book')} added`
    say(
      `catalogue import: stopped by ${stoppedBy} after line ${addedThrough}; ${done}. Run the same import again to go on: it adds only what is missing`,
    )
    return EXIT_ON[stoppedBy]
  }
  if (bad > MAX_REPORTED_LINES) say(`... and ${bad - MAX_REPORTED_LINES} more bad lines`)
  // A spreadsheet's CSV on Windows is often Windows-1252: say which option reads it.
  if (notUtf8 > 0 && file.encoding === 'utf-8') {
    say(
      `note: ${count(notUtf8, 'line')} ${notUtf8 === 1 ? 'is' : 'are'} not UTF-8: if the file is Latin-1 (Windows-1252), import it with --encoding latin1`,
    )
  }
  say(summary(dryRun, totals, bad, (performance.now() - started) / 1000))
  return bad > 0 ? 1 : 0
}
