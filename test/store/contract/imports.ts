import { describe, expect, it } from 'bun:test'
import type { ImportCounts, NamedBook } from '../../../src/model/imports'
import { IMPORT_BATCH_SIZE } from '../../../src/store/import-batches'
import type { BookImport } from '../../../src/store/store'
import { authors, books, byId, type ContractContext, collections, fixtures } from './context'

/** Books added by name (openImport), as `catalogue import` adds a file's batches. */
export function describeImportContract(t: ContractContext): void {
  const { author, listed } = fixtures(t)

  /** Each batch's counts, the import closed after the last. */
  async function imported(session: BookImport, batches: readonly (readonly NamedBook[])[]): Promise<ImportCounts[]> {
    try {
      const counts: ImportCounts[] = []
      for (const batch of batches) counts.push(await session.add(batch))
      return counts
    } finally {
      await session.close()
    }
  }

  const first: NamedBook[] = [
    { title: 'Tehanu', author: 'New', collection: 'Cycle' },
    { title: 'Kindred', author: 'Known', collection: null },
  ]
  const second: NamedBook[] = [
    { title: 'Tehanu', author: 'New', collection: 'Cycle' },
    { title: 'Tales', author: 'New', collection: 'Cycle' },
  ]

  describe('openImport', () => {
    it('in a dry run stores nothing, counts a name or a book met again in a later batch once, and forgets it all on close', async () => {
      const known = await author('Known')
      expect(await imported(t.store().openImport({ dryRun: true }), [first, second])).toEqual([
        { books: 2, present: 0, authors: 1, collections: 1 },
        { books: 1, present: 1, authors: 0, collections: 0 },
      ])
      expect(await listed(authors)).toEqual([known])
      expect(await listed(collections)).toEqual([])
      expect(await listed(books)).toEqual([])
      // A second dry run starts from nothing: the first left nothing behind.
      expect(await imported(t.store().openImport({ dryRun: true }), [second])).toEqual([
        { books: 2, present: 0, authors: 1, collections: 1 },
      ])
    })

    it('adds what the dry run counted, each batch committed before the next', async () => {
      await author('Known')
      expect(await imported(t.store().openImport({ dryRun: false }), [first, second])).toEqual([
        { books: 2, present: 0, authors: 1, collections: 1 },
        { books: 1, present: 1, authors: 0, collections: 0 },
      ])
      expect((await listed(books)).map((book) => book.attributes.name)).toEqual(['Tehanu', 'Kindred', 'Tales'])
      expect((await listed(authors)).map((record) => record.attributes.name)).toEqual(['Known', 'New'])
    })

    it('offers batches of at least 5000 books and at most a twentieth of those stored, and a search and the counts find every book imported', async () => {
      const session = t.store().openImport({ dryRun: false })
      let lastBatch = 0
      try {
        expect(session.batchSize).toBe(IMPORT_BATCH_SIZE)
        // One batch brings the table to 110,000 books: the next may hold a twentieth of them.
        const seed = Array.from({ length: 110_000 }, (_, i) => ({
          title: `Book ${i}`,
          author: `Author ${i % 100}`,
          collection: i % 5 === 0 ? null : `Shelf ${i % 7}`,
        }))
        expect(await session.add(seed)).toEqual({ books: 110_000, present: 0, authors: 100, collections: 7 })
        expect(session.batchSize).toBeGreaterThanOrEqual(IMPORT_BATCH_SIZE)
        expect(session.batchSize).toBeLessThanOrEqual(5500)
        const last = Array.from({ length: session.batchSize }, (_, i) => ({
          title: `Quillwort ${i}`,
          author: `Author ${i % 100}`,
          collection: null,
        }))
        expect(await session.add(last)).toEqual({ books: last.length, present: 0, authors: 0, collections: 0 })
        lastBatch = last.length
      } finally {
        await session.close()
      }
      const page = (resource: typeof books, query = {}) =>
        t.store().page(resource, { filters: [], sort: byId, limit: 1, ...query })
      expect((await page(books)).total).toBe(110_000 + lastBatch)
      expect((await page(authors)).total).toBe(100)
      const found = await page(books, { filters: [{ kind: 'search', text: 'quillwort' }], limit: 20 })
      expect(found.total).toBe(lastBatch)
      expect(found.records).toHaveLength(20)
      const one = await page(books, { filters: [{ kind: 'search', text: 'book 109999' }], ranked: true })
      expect(one.records.map((record) => record.attributes.name)).toEqual(['Book 109999'])
    }, 120_000)
  })
}
