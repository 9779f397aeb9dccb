import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { JSONAPISerializers, JSONAPISource } from '@orbit/jsonapi'
import { type InitializedRecord, RecordKeyMap, RecordSchema } from '@orbit/records'
import { removeTempDirs, stopChildren } from '../support/process'
import { type RunningService, startService } from '../support/service'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/*
 * Orbit (@orbit/jsonapi), a JSON:API client library, against the real service on a real port. Its
 * defaults are kept wherever the service can meet them (paging as page[offset]/page[limit], its
 * filter, sort and include parameters, its Accept and Content-Type); what is configured is what
 * any Orbit application configures for its server (docs/pagination.md, "Orbit"):
 * - the models are camelCase (`bookCollection`), and the server's names plural and underscored
 *   (`book_collections`, `book_collection`): the serializers' inflectors say so;
 * - the service assigns ids, so each model has a `remoteId` key and the source a key map.
 */

const schema = new RecordSchema({
  models: {
    author: {
      keys: { remoteId: {} },
      attributes: { name: { type: 'string' } },
      relationships: { books: { kind: 'hasMany', type: 'book', inverse: 'author' } },
    },
    bookCollection: {
      keys: { remoteId: {} },
      attributes: { name: { type: 'string' } },
      relationships: { books: { kind: 'hasMany', type: 'book', inverse: 'bookCollection' } },
    },
    book: {
      keys: { remoteId: {} },
      attributes: { name: { type: 'string' } },
      relationships: {
        author: { kind: 'hasOne', type: 'author', inverse: 'books' },
        bookCollection: { kind: 'hasOne', type: 'bookCollection', inverse: 'books' },
      },
    },
  },
})

const plural = { serializationOptions: { inflectors: ['pluralize', 'underscore'] } }
const underscored = { serializationOptions: { inflectors: ['underscore'] } }
/** The server's spelling: `bookCollection` <-> `book_collections` (types) and `book_collection` (fields). */
const serializerSettings: Record<string, unknown> = {
  [JSONAPISerializers.ResourceType]: plural,
  [JSONAPISerializers.ResourceTypePath]: plural,
  [JSONAPISerializers.ResourceTypeParam]: plural,
  [JSONAPISerializers.ResourceField]: underscored,
  [JSONAPISerializers.ResourceFieldParam]: underscored,
  [JSONAPISerializers.ResourceFieldPath]: underscored,
}

let service: RunningService
let keyMap: RecordKeyMap
let remote: JSONAPISource

/** What a plain client reads at `path`: the service's own answer, to check what Orbit did. */
async function read(path: string): Promise<{ status: number; json: Record<string, unknown> | null }> {
  const response = await fetch(`${service.origin}${path}`, { headers: { accept: 'application/vnd.api+json' } })
  const text = await response.text()
  return { status: response.status, json: text === '' ? null : JSON.parse(text) }
}

/** The service's id of a record Orbit knows by its own id. */
function remoteId(record: InitializedRecord): string {
  const id = keyMap.idToKey(record.type, 'remoteId', record.id)
  if (id === undefined) throw new Error(`no remote id for ${record.type} ${record.id}`)
  return id
}

function newRecord(type: string, name: string, relationships?: InitializedRecord['relationships']) {
  return { type, id: schema.generateId(type), attributes: { name }, ...(relationships ? { relationships } : {}) }
}

/** The names of records, as Orbit answered them. */
function names(records: unknown): string[] {
  return (records as InitializedRecord[]).map((record) => record.attributes?.name as string)
}

const titles = ['The Word for World is Forest', 'The Dispossessed', 'Rocannon’s World', 'The Left Hand of Darkness']
let author: InitializedRecord
let collection: InitializedRecord
const books: InitializedRecord[] = []

beforeAll(async () => {
  service = await startService()
  keyMap = new RecordKeyMap()
  remote = new JSONAPISource({
    schema,
    keyMap,
    host: service.origin,
    namespace: 'api/v1',
    serializerSettingsFor: (type) => serializerSettings[type ?? ''] as never,
  })
  author = newRecord('author', 'Ursula K. Le Guin')
  collection = newRecord('bookCollection', 'Hainish Cycle')
  await remote.update((t) => [t.addRecord(author), t.addRecord(collection)])
  for (const title of titles) {
    const book = newRecord('book', title, {
      author: { data: { type: 'author', id: author.id } },
      bookCollection: { data: { type: 'bookCollection', id: collection.id } },
    })
    await remote.update((t) => t.addRecord(book))
    books.push(book)
  }
}, 30_000)

afterAll(async () => {
  await stopChildren()
  removeTempDirs()
})

describe('Orbit (@orbit/jsonapi) against the service', () => {
  it('creates an author, a collection and books with their relationships, each given its id by the service', async () => {
    expect(remoteId(author)).toMatch(/^\d+$/)
    const stored = await read(`/api/v1/books/${remoteId(books[0] as InitializedRecord)}`)
    expect(stored.status).toBe(200)
    expect(stored.json?.data).toMatchObject({
      type: 'books',
      attributes: { name: titles[0] },
      relationships: {
        author: { data: { type: 'authors', id: remoteId(author) } },
        book_collection: { data: { type: 'book_collections', id: remoteId(collection) } },
      },
    })
  })

  it('pages through the books sorted by name with its default page[offset] and page[limit]', async () => {
    const seen: string[] = []
    for (let offset = 0; offset < titles.length; offset += 3) {
      const page = await remote.query((q) => q.findRecords('book').sort('name').page({ offset, limit: 3 }), {
        fullResponse: true,
      })
      seen.push(...names(page.data))
      const document = page.details?.[0]?.document as { meta: unknown; links: Record<string, string> }
      expect(document.meta).toEqual({ total: titles.length })
      const next = document.links.next
      if (offset + 3 < titles.length) expect(next).toBe(`/api/v1/books?sort=name&page%5Boffset%5D=3&page%5Blimit%5D=3`)
      else expect(next).toBeUndefined()
    }
    expect(seen).toEqual([...titles].sort())
  })

  it('filters by name and sorts descending', async () => {
    const found = await remote.query((q) =>
      q.findRecords('book').filter({ attribute: 'name', value: 'The Dispossessed' }),
    )
    expect(names(found)).toEqual(['The Dispossessed'])
    const descending = await remote.query((q) => q.findRecords('book').sort('-name').page({ offset: 0, limit: 2 }))
    expect(names(descending)).toEqual([...titles].sort().reverse().slice(0, 2))
  })

  it('includes related records, and Orbit links the books to them', async () => {
    const page = await remote.query((q) => q.findRecords('book').sort('name').page({ offset: 0, limit: 2 }), {
      include: ['author', 'bookCollection'],
      fullResponse: true,
    })
    for (const book of page.data as InitializedRecord[]) {
      expect(book.relationships?.author?.data).toEqual({ type: 'author', id: author.id })
      expect(book.relationships?.bookCollection?.data).toEqual({ type: 'bookCollection', id: collection.id })
    }
    const document = page.details?.[0]?.document as { included: { type: string }[] }
    expect(document.included.map((record) => record.type).sort()).toEqual(['authors', 'book_collections'])
  })

  it("reads an author's books through the related-resource endpoint, paged", async () => {
    const related = await remote.query((q) =>
      q.findRelatedRecords(author, 'books').sort('name').page({ offset: 1, limit: 2 }),
    )
    expect(names(related)).toEqual([...titles].sort().slice(1, 3))
  })

  it('reads one book with its default includes', async () => {
    const book = books[1] as InitializedRecord
    const found = (await remote.query((q) => q.findRecord(book))) as InitializedRecord
    expect(found.attributes?.name).toBe(titles[1])
    expect(found.relationships?.author?.data).toEqual({ type: 'author', id: author.id })
  })

  it('updates a name and clears a collection', async () => {
    const book = books[2] as InitializedRecord
    await remote.update((t) => t.replaceAttribute(book, 'name', 'Rocannon’s World (1966)'))
    await remote.update((t) => t.replaceRelatedRecord(book, 'bookCollection', null))
    const stored = await read(`/api/v1/books/${remoteId(book)}`)
    expect(stored.json?.data).toMatchObject({
      attributes: { name: 'Rocannon’s World (1966)' },
      relationships: { book_collection: { data: null } },
    })
  })

  it("is told why a write fails, in the service's words", async () => {
    const orphan = newRecord('book', 'Nobody’s book')
    const failure = await remote.update((t) => t.addRecord(orphan)).catch((error: unknown) => error)
    expect(failure).toMatchObject({
      response: { status: 422 },
      data: { errors: [{ detail: 'Author must exist', source: { parameter: 'author' } }] },
    })
    // Orbit holds its queue at a failed request until the application decides; this one gives up on it.
    await remote.requestQueue.skip()
  })

  it('deletes a book', async () => {
    const book = books[3] as InitializedRecord
    const id = remoteId(book)
    await remote.update((t) => t.removeRecord(book))
    expect((await read(`/api/v1/books/${id}`)).status).toBe(404)
  })
})
