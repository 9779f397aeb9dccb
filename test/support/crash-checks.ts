import { Database } from 'bun:sqlite'
import {
  CRASH_TYPES,
  type CrashType,
  distinctWord,
  type KnownRecord,
  type Ledger,
  type Listed,
  type ListedRecord,
  MARKER,
} from './crash-ledger'
import { WAIT_MS } from './process'

/*
 * The crash harness's checks after a restart, all but the PRAGMAs through the HTTP API: the lists of
 * every type, the totals, and searches for the words of records' names. The search indexes are
 * judged by what the API finds, not by their columns, so that their layout may change.
 */

const JSON_API = 'application/vnd.api+json'
/** Requests the checks keep in flight at once. */
const PARALLEL = 8

interface Linkage {
  readonly data?: { readonly id: string } | null
}
interface Resource {
  readonly id: string
  readonly attributes: { readonly name: string }
  readonly relationships?: Readonly<Record<string, Linkage>>
}
interface ListDocument {
  readonly data: readonly Resource[]
  readonly meta?: { readonly total?: number }
}

async function getList(base: string, path: string): Promise<ListDocument> {
  const response = await fetch(base + path, { headers: { accept: JSON_API }, signal: AbortSignal.timeout(WAIT_MS) })
  const text = await response.text()
  if (response.status !== 200) throw new Error(`GET ${path} answered ${response.status}: ${text.slice(0, 300)}`)
  return JSON.parse(text) as ListDocument
}

const linked = (resource: Resource, relationship: string) => resource.relationships?.[relationship]?.data?.id ?? null

/** Every record of every type, as the unpaginated lists return them (books with their linkage). */
export async function listAll(base: string): Promise<Listed> {
  const read = async (type: CrashType, query: string) => {
    const records = new Map<string, ListedRecord>()
    for (const resource of (await getList(base, `/api/v1/${type}${query}`)).data) {
      const { id } = resource
      const { name } = resource.attributes
      records.set(id, { id, name, author: linked(resource, 'author'), collection: linked(resource, 'book_collection') })
    }
    return records
  }
  const [authors, book_collections, books] = await Promise.all([
    read('authors', ''),
    read('book_collections', ''),
    read('books', '?include=author,book_collection'),
  ])
  return { authors, book_collections, books }
}

/** Runs `tasks` with at most PARALLEL of them at a time. */
async function inParallel(tasks: readonly (() => Promise<void>)[]): Promise<void> {
  let next = 0
  const lane = async () => {
    while (next < tasks.length) await (tasks[next++] as () => Promise<void>)()
  }
  await Promise.all(Array.from({ length: PARALLEL }, lane))
}

/** Where the totals disagree with the lists: `page[size]=1` and a search for the word every name starts with. */
export async function checkTotals(base: string, listed: Listed): Promise<string[]> {
  const mismatches: string[] = []
  await Promise.all(
    CRASH_TYPES.map(async (type) => {
      const rows = listed[type].size
      for (const query of ['page[size]=1', `filter[search]=${MARKER[type]}&page[size]=1`]) {
        const total = (await getList(base, `/api/v1/${type}?${query}`)).meta?.total
        if (total !== rows) mismatches.push(`GET /api/v1/${type}?${query}: meta.total ${total}, the list has ${rows}`)
      }
    }),
  )
  return mismatches
}

async function searchIds(base: string, type: CrashType, word: string, filters: Record<string, string>) {
  const query = new URLSearchParams({ 'filter[search]': word, 'page[size]': '100' })
  for (const [name, value] of Object.entries(filters)) query.set(`filter[${name}]`, value)
  const { data } = await getList(base, `/api/v1/${type}?${query}`)
  return new Set(data.map((resource) => resource.id))
}

/**
 * Searches for each record by a word of its current name (a book also by its author's and its
 * collection's), which must find it, and by the words of its former names, which must not.
 */
export async function checkSearch(base: string, ledger: Ledger, sample: readonly KnownRecord[]): Promise<string[]> {
  const misses: string[] = []
  const tasks: (() => Promise<void>)[] = []
  const expect = (record: KnownRecord, word: string, filters: Record<string, string>, found: boolean, what: string) =>
    tasks.push(async () => {
      const ids = await searchIds(base, record.type, word, filters)
      if (ids.has(record.id) !== found) {
        misses.push(
          `${record.type} ${record.id} "${record.name}" is ${found ? 'not ' : ''}found by "${word}" (${what})`,
        )
      }
    })
  for (const record of sample) {
    const exact = { name: record.name }
    expect(record, distinctWord(record.name), exact, true, 'its name')
    for (const former of record.formerNames.slice(-2)) expect(record, distinctWord(former), {}, false, 'a former name')
    if (record.type !== 'books') continue
    const author = record.author === null ? undefined : ledger.get('authors', record.author)
    if (author) {
      const byAuthor = { ...exact, author: author.id }
      expect(record, distinctWord(author.name), byAuthor, true, `its author ${author.id}'s name`)
      for (const former of author.formerNames.slice(-2)) {
        expect(record, distinctWord(former), byAuthor, false, `its author ${author.id}'s former name`)
      }
    }
    const collection = record.collection === null ? undefined : ledger.get('book_collections', record.collection)
    if (collection) {
      const byCollection = { ...exact, book_collection: collection.id }
      expect(record, distinctWord(collection.name), byCollection, true, `its collection ${collection.id}'s name`)
    }
  }
  await inParallel(tasks)
  return misses
}

/** `PRAGMA integrity_check` ("ok" when sound) and how many rows `PRAGMA foreign_key_check` lists. */
export function checkFile(path: string): { integrity: string; foreignKeyViolations: number } {
  const db = new Database(path, { readonly: true })
  try {
    const integrity = db
      .query<{ integrity_check: string }, []>('PRAGMA integrity_check')
      .all()
      .map((row) => row.integrity_check)
      .join('; ')
    const foreignKeyViolations = db.query('PRAGMA foreign_key_check').all().length
    return { integrity, foreignKeyViolations }
  } finally {
    db.close()
  }
}
