import { describe, expect, it } from 'bun:test'
import type { StoreFilter } from '../../../src/model/query'
import type { Id } from '../../../src/model/record'
import type { AtomicOperation } from '../../../src/model/writes'
import { authorIs, authors, books, byId, type ContractContext, collections, fixtures } from './context'

const noCollection = { kind: 'relationship', relationship: 'book_collection', ids: [], orNone: true } as const

/**
 * The total a page gives (meta.total): an unfiltered list's comes from a count the backend keeps
 * as it writes, a filtered one's is counted in its filter's index. Either is the exact number of
 * records the page's own snapshot holds, whatever wrote them.
 */
export function describeTotalContract(t: ContractContext): void {
  const { author, collection, book, listed } = fixtures(t)

  /** The total of a page of `resource`, a page of one record. */
  const total = async (resource: typeof books, filters: readonly StoreFilter[] = []) =>
    (await t.store().page(resource, { filters, sort: byId, limit: 1 })).total
  /** The records counted one by one (countUpTo steps through them), to hold the kept count against. */
  const counted = (resource: typeof books) => t.store().countUpTo(resource, [], 1_000_000)
  const totals = async () => ({
    authors: await total(authors),
    collections: await total(collections),
    books: await total(books),
  })

  describe('page totals', () => {
    it('gives 0 for an empty catalogue, and follows every create and delete', async () => {
      expect(await totals()).toEqual({ authors: 0, collections: 0, books: 0 })
      const a = await author('A')
      const c = await collection('C')
      const one = await book('One', a.id, c.id)
      await book('Two', a.id)
      expect(await totals()).toEqual({ authors: 1, collections: 1, books: 2 })
      expect((await t.store().delete(books, one.id)).status).toBe('deleted')
      expect(await t.store().delete(books, one.id)).toMatchObject({ status: 'not-found' })
      expect(await totals()).toEqual({ authors: 1, collections: 1, books: 1 })
    })

    it('counts a deleted collection out and keeps its books, now in none', async () => {
      const a = await author('A')
      const c = await collection('C')
      for (let i = 0; i < 3; i++) await book(`In C ${i}`, a.id, c.id)
      await book('Loose', a.id)
      expect(await total(books, [noCollection])).toBe(1)
      expect((await t.store().delete(collections, c.id)).status).toBe('deleted')
      expect(await totals()).toEqual({ authors: 1, collections: 0, books: 4 })
      expect(await total(books, [noCollection])).toBe(4)
    })

    it("counts an author's books out as they are deleted, then the author", async () => {
      const a = await author('A')
      const b = await author('B')
      const theirs: Id[] = []
      for (let i = 0; i < 5; i++) theirs.push((await book(`A${i}`, a.id)).id)
      await book('B0', b.id)
      expect(await total(books, [authorIs(a.id)])).toBe(5)
      for (const id of theirs) expect((await t.store().delete(books, id)).status).toBe('deleted')
      expect(await total(books, [authorIs(a.id)])).toBe(0)
      expect((await t.store().delete(authors, a.id)).status).toBe('deleted')
      expect(await totals()).toEqual({ authors: 1, collections: 0, books: 1 })
    })

    it('is unchanged by an atomic batch that failed, and counts one that succeeded', async () => {
      const a = await author('A')
      await book('Kept', a.id)
      const creates: AtomicOperation[] = [
        { kind: 'create', resource: authors, lid: 'n', input: { attributes: { name: 'New' }, toOne: {} } },
        ...[1, 2, 3].map(
          (i): AtomicOperation => ({
            kind: 'create',
            resource: books,
            input: { attributes: { name: `New ${i}` }, toOne: { author: { lid: 'n' } } },
          }),
        ),
      ]
      const failing: AtomicOperation = { kind: 'delete', resource: books, target: { id: 999 } }
      expect(await t.store().atomic([...creates, failing])).toMatchObject({ ok: false, index: 4 })
      expect(await totals()).toEqual({ authors: 1, collections: 0, books: 1 })
      expect((await t.store().atomic(creates)).ok).toBe(true)
      expect(await totals()).toEqual({ authors: 2, collections: 0, books: 4 })
    })

    it('counts what an import added, and what a restore stored', async () => {
      await author('Known')
      const session = t.store().openImport({ dryRun: false })
      try {
        await session.add([
          { title: 'One', author: 'Known', collection: 'Shelf' },
          { title: 'Two', author: 'New', collection: null },
        ])
        await session.add([{ title: 'Three', author: 'New', collection: 'Shelf' }])
      } finally {
        await session.close()
      }
      expect(await totals()).toEqual({ authors: 2, collections: 1, books: 3 })
      const restore = t.store().openRestore()
      try {
        expect(await restore.begin(new Map([[authors, 50]]), false)).toBeNull()
        const restored = [40, 41].map((id) => ({ id, attributes: { name: `Restored ${id}` }, toOne: {} }))
        expect(await restore.add(authors, restored)).toMatchObject({ ok: true, added: 2 })
      } finally {
        await restore.close()
      }
      expect(await totals()).toEqual({ authors: 4, collections: 1, books: 3 })
    })

    it('counts a filtered list as it lists it: some ids or none, and several filters together', async () => {
      const [a, b] = [await author('A'), await author('B')]
      const [c, d] = [await collection('C'), await collection('D')]
      for (let i = 0; i < 12; i++) {
        const shelf = [c.id, d.id, undefined][i % 3]
        await book(i % 4 === 0 ? 'Same' : `Book ${i}`, i % 2 === 0 ? a.id : b.id, shelf)
      }
      const inC = { kind: 'relationship', relationship: 'book_collection', ids: [c.id], orNone: false } as const
      const named = { kind: 'attribute', attribute: 'name', value: 'Same' } as const
      const cases: StoreFilter[][] = [
        [{ ...inC, orNone: true }],
        [{ ...inC, ids: [c.id, d.id], orNone: true }],
        [noCollection, authorIs(a.id)],
        [authorIs(a.id), inC],
        [inC, authorIs(b.id)],
        [{ ...inC, orNone: true }, authorIs(a.id, b.id)],
        [named, authorIs(a.id)],
        [authorIs(a.id), named, noCollection],
        [authorIs(999), inC],
      ]
      for (const filters of cases) {
        const all = await listed(books, { filters })
        const page = await t.store().page(books, { filters, sort: byId, limit: 2 })
        expect(page).toEqual({ records: all.slice(0, 2), total: all.length })
        const byName = [{ field: 'name', descending: true }, ...byId]
        const inNameOrder = await t.store().page(books, { filters, sort: byName, limit: 2, offset: 1 })
        expect(inNameOrder).toEqual({
          records: (await listed(books, { filters, sort: byName })).slice(1, 3),
          total: all.length,
        })
      }
      // Not vacuous: an author's books in one collection.
      expect((await listed(books, { filters: [authorIs(a.id), inC] })).length).toBe(2)
    })

    it('agrees with the records counted one by one after many writes at once, some of them failing', async () => {
      const a = await author('A')
      const c = await collection('C')
      const gone = await collection('Gone')
      const first: Id[] = []
      for (let i = 0; i < 10; i++) first.push((await book(`First ${i}`, a.id, gone.id)).id)
      // Side by side: on PostgreSQL over several connections (each adding to its own slot), on
      // SQLite in shared transactions (group commit), each write in its own savepoint.
      await Promise.all([
        ...Array.from({ length: 30 }, (_, i) => book(`Book ${i}`, a.id, i % 2 === 0 ? c.id : undefined)),
        ...Array.from({ length: 5 }, (_, i) => author(`Author ${i}`)),
        ...first.map((id) => t.store().delete(books, id)),
        ...Array.from({ length: 5 }, () =>
          t.store().atomic([
            {
              kind: 'create',
              resource: books,
              input: { attributes: { name: 'Undone' }, toOne: { author: { id: a.id } } },
            },
            { kind: 'delete', resource: authors, target: { id: a.id } },
          ]),
        ),
        t.store().delete(collections, gone.id),
      ])
      expect(await totals()).toEqual({ authors: 6, collections: 1, books: 30 })
      for (const resource of [authors, collections, books]) {
        expect(await total(resource)).toBe(await counted(resource))
        expect(await total(resource)).toBe((await listed(resource, { limit: 1000 })).length)
      }
    })
  })
}
