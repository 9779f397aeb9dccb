import { storeSettingsHelp } from '../config'
import { authors } from '../resources/authors'
import { bookCollections } from '../resources/book-collections'
import { books } from '../resources/books'
import { resources } from '../resources/registry'
import { StoreUnavailableError } from '../store/faults'
import type { Id, SearchOrder, Store, StoredRecord } from '../store/store'
import { parseCommandArguments } from './arguments'
import type { Command } from './command'
import { openCommandStore } from './open-store'
import { OutputFile } from './output-file'
import { count, Progress, say } from './progress'

/** Books read, looked up and written at a time: what the export holds in memory. */
export const EXPORT_BATCH_SIZE = 1000

const help = `catalogue export: write the whole catalogue as JSON Lines

Usage: catalogue export [options] [FILE]

Writes one line per book, in id order, to FILE or (without FILE) to standard output:
  {"title":"...","author":"...","collection":"..."}
with "collection":null for a book in none. catalogue import reads this back: into an empty
database it gives the same catalogue. While the service writes, the export is not one snapshot
(a book changed meanwhile shows as it was when its batch was read): for an exact copy, use
catalogue backup.

Options:
  --force                             replace FILE if it exists
${storeSettingsHelp}
  --help                              print this text and exit

Exit status: 0 written, 1 the database or the output failed part-way, 2 bad arguments.
`

const ID_ORDER: SearchOrder = { filters: [], sort: [{ field: 'id', descending: false }] }

/** The names of the records with these ids, read at once. */
async function namesOf(store: Store, resource: typeof authors | typeof bookCollections, ids: Iterable<Id>) {
  const found = await store.findMany(resource, [...new Set(ids)])
  return new Map(found.map((record) => [record.id, record.attributes.name as string]))
}

/** The JSON Lines of a batch of books, or none for a book whose author is gone (deleted meanwhile, with it). */
async function linesOf(store: Store, batch: readonly StoredRecord[]): Promise<{ text: string; count: number }> {
  const authorNames = await namesOf(
    store,
    authors,
    batch.map((book) => book.toOne.author as Id),
  )
  const collectionNames = await namesOf(
    store,
    bookCollections,
    batch.flatMap((book) => (book.toOne.book_collection == null ? [] : [book.toOne.book_collection])),
  )
  let text = ''
  let count = 0
  for (const book of batch) {
    const author = authorNames.get(book.toOne.author as Id)
    if (author === undefined) continue
    const collectionId = book.toOne.book_collection
    const collection = collectionId == null ? null : (collectionNames.get(collectionId) ?? null)
    text += `${JSON.stringify({ title: book.attributes.name, author, collection })}\n`
    count++
  }
  return { text, count }
}

async function runExport(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<number> {
  const started = performance.now()
  const {
    values,
    positionals,
    store: settings,
  } = parseCommandArguments('export', argv, env, { force: { type: 'boolean' } }, 1)
  const file = positionals[0]
  const output = file === undefined ? OutputFile.stdout() : OutputFile.create(file, values.force === true)
  let store: Store
  try {
    store = await openCommandStore(settings, resources, { existing: true })
  } catch (error) {
    await output.discard()
    throw error
  }
  let written = 0
  let read = 0
  try {
    const { total } = await store.page(books, { ...ID_ORDER, limit: 1 })
    const progress = new Progress('exporting', total, (done, all) => `${done} / ${all} books`)
    for await (const batch of store.stream(books, ID_ORDER, EXPORT_BATCH_SIZE)) {
      const { text, count } = await linesOf(store, batch)
      await output.write(text)
      written += count
      read += batch.length
      // Books added meanwhile make the list longer than it was counted.
      progress.update(read, Math.max(total, read))
    }
    await output.close()
    progress.finish()
  } catch (error) {
    // The database failed (StoreUnavailableError) or the output did (a full disk, a closed pipe).
    if (!(error instanceof StoreUnavailableError) && typeof (error as { code?: unknown }).code !== 'string') throw error
    await output.discard()
    say(`catalogue export: ${(error as Error).message}; the export is not complete`)
    return 1
  } finally {
    await store.close()
  }
  const where = file === undefined ? '' : ` to ${file}`
  say(`exported ${count(written, 'book')}${where} in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  return 0
}

export const exportCommand: Command = {
  name: 'export',
  summary: 'write the whole catalogue as JSON Lines, which import reads back',
  help,
  run: runExport,
}
