import { describe, expect, it } from 'bun:test'
import type { BookImport, ImportCounts, NamedBook } from '../../../src/store/store'
import { authors, books, type ContractContext, collections, fixtures } from './context'

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
  })
}
