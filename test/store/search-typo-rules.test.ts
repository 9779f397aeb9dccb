import { expect, setDefaultTimeout, describe as sqliteDescribe, it as sqliteIt } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FilterDescription, ResourceDescription } from '../../src/model/description'
import type { Id } from '../../src/model/record'
import { authors } from '../../src/resources/authors'
import { bookCollections } from '../../src/resources/book-collections'
import { books } from '../../src/resources/books'
import { ResourceRegistry } from '../../src/resources/registry'
import { type DatabaseLocation, openStore } from '../../src/store/open'
import { afterAll, describe, it, POSTGRES_SERVER } from '../support/postgres-tests'
import { scratchDatabases } from '../support/test-database'

setDefaultTimeout(60_000)

// The typo rules come from the type's description: books here forgive one typo from 4 letters and
// two from 6, and none in the title, while the author's name keeps them.
const search = books.filters.search as Extract<FilterDescription, { kind: 'search' }>
const strictBooks: ResourceDescription = {
  ...books,
  filters: {
    ...books.filters,
    search: {
      ...search,
      typos: { oneFrom: 4, twoFrom: 6 },
      fields: [
        { attribute: 'name', weight: 10, typos: false },
        { relationship: 'author', weight: 2 },
        { relationship: 'book_collection', weight: 1 },
      ],
    },
  },
}
const registry = new ResourceRegistry([authors, bookCollections, strictBooks])

async function rulesHold(location: DatabaseLocation): Promise<void> {
  const store = await openStore(location, registry, { poolSize: 2 })
  try {
    const create = async (resource: ResourceDescription, name: string, toOne = {}) => {
      const result = await store.create(resource, { attributes: { name }, toOne })
      if (!result.ok) throw new Error('not created')
      return result.record.id
    }
    const mole = await create(authors, 'Mole Digger')
    const river = await create(strictBooks, 'River Song', { author: mole, book_collection: null })
    const found = async (text: string): Promise<Id[]> => {
      const page = await store.page(strictBooks, {
        filters: [{ kind: 'search', text }],
        sort: [],
        ranked: true,
        limit: 20,
        offset: 0,
      })
      return page.records.map((r) => r.id)
    }
    expect(await found('river')).toEqual([river])
    // The title forgives nothing: `rivre` (a swap) finds no title.
    expect(await found('rivre')).toEqual([])
    // The author's name forgives one typo from 4 letters (`mloe`), two from 6 (`digegr` ... `dgigre`).
    expect(await found('mloe')).toEqual([river])
    expect(await found('dgiegr')).toEqual([river])
    expect(await found('mle')).toEqual([])
  } finally {
    await store.close()
  }
}

sqliteDescribe('typo rules from the description, over SQLite', () => {
  sqliteIt(
    'forgive as the type says: none in a field that turns them off, from its own lengths elsewhere',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'catalogue-typo-rules-'))
      try {
        await rulesHold({ kind: 'sqlite', path: join(dir, 'catalogue.db') })
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    },
  )
})

const databases = scratchDatabases(POSTGRES_SERVER)
afterAll(() => databases.dropAll())

describe('typo rules from the description, over PostgreSQL', () => {
  it('forgive as the type says: none in a field that turns them off, from its own lengths elsewhere', async () => {
    await rulesHold({ kind: 'postgres', url: await databases.fresh() })
  })
})
