import { describe, expect, it } from 'bun:test'
import type { StoredRecord } from '../../../src/model/record'
import { authors, books, type ContractContext, collections, fixtures } from './context'

/** The whole catalogue read at one moment (openSnapshot) and written back with its ids (openRestore). */
export function describeCopyContract(t: ContractContext): void {
  const { author, collection, book, listed } = fixtures(t)

  /** Every record of a type through a snapshot, batch by batch. */
  async function recordsOf(resource: typeof authors, size: number): Promise<StoredRecord[][]> {
    const snapshot = await t.store().openSnapshot()
    try {
      const batches: StoredRecord[][] = []
      for await (const batch of snapshot.records(resource, size)) batches.push([...batch])
      return batches
    } finally {
      await snapshot.close()
    }
  }

  describe('openSnapshot', () => {
    it('tallies each type (records, and the highest id ever handed out) and reads its records in id order, in batches', async () => {
      const a = await author('A')
      const gone = await author('Gone')
      const c = await collection('C')
      const one = await book('One', a.id, c.id)
      const two = await book('Two', a.id)
      await t.store().delete(authors, gone.id)
      const snapshot = await t.store().openSnapshot()
      try {
        expect(await snapshot.tally(authors)).toEqual({ records: 1, lastId: gone.id })
        expect(await snapshot.tally(collections)).toEqual({ records: 1, lastId: c.id })
        expect(await snapshot.tally(books)).toEqual({ records: 2, lastId: two.id })
      } finally {
        await snapshot.close()
      }
      expect(await recordsOf(books, 1)).toEqual([[one], [two]])
      expect(await recordsOf(authors, 10)).toEqual([[a]])
    })
  })

  describe('openRestore', () => {
    const record = (id: number, name: string, toOne: Record<string, number | null> = {}): StoredRecord => ({
      id,
      attributes: { name },
      toOne,
    })

    it('stores records with their ids and raises the counters: the next id comes after the last ids given', async () => {
      const restore = t.store().openRestore()
      try {
        const lastIds = new Map([
          [authors, 9],
          [collections, 4],
          [books, 20],
        ])
        expect(await restore.begin(lastIds, true)).toBeNull()
        expect(await restore.add(authors, [record(3, 'Three'), record(7, 'Seven')])).toEqual({
          ok: true,
          added: 2,
          present: 0,
        })
        expect(await restore.add(books, [record(12, 'Book', { author: 7, book_collection: null })])).toEqual({
          ok: true,
          added: 1,
          present: 0,
        })
      } finally {
        await restore.close()
      }
      expect(await listed(authors)).toEqual([record(3, 'Three'), record(7, 'Seven')])
      expect(await t.store().find(books, 12)).toEqual(record(12, 'Book', { author: 7, book_collection: null }))
      expect((await author('Next')).id).toBe(10)
      expect((await collection('Next')).id).toBe(5)
      expect((await book('Next', 3)).id).toBe(21)
    })

    it('refuses to begin on a catalogue that holds records when it must be empty, changing nothing', async () => {
      const a = await author('A')
      const restore = t.store().openRestore()
      try {
        const held = await restore.begin(new Map([[authors, 50]]), true)
        expect(held && [...held].map(([resource, n]) => [resource.type, n])).toEqual([
          ['authors', 1],
          ['book_collections', 0],
          ['books', 0],
        ])
      } finally {
        await restore.close()
      }
      expect((await author('Next')).id).toBe(a.id + 1)
    })

    it('counts a record stored the same as present, and stores nothing of a batch holding one stored otherwise', async () => {
      const a = await author('A')
      const b = await author('B')
      const restore = t.store().openRestore()
      try {
        expect(await restore.compare(authors, [a, record(b.id, 'Not B'), record(99, 'New')])).toEqual({
          present: 1,
          conflicts: [b.id],
        })
        expect(await restore.add(authors, [a, record(b.id, 'Not B'), record(99, 'New')])).toEqual({
          ok: false,
          conflicts: [b.id],
        })
        expect(await listed(authors)).toEqual([a, b])
        expect(await restore.add(authors, [a, record(99, 'New')])).toEqual({ ok: true, added: 1, present: 1 })
      } finally {
        await restore.close()
      }
      expect(await listed(authors)).toEqual([a, b, record(99, 'New')])
    })
  })
}
