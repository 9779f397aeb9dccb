import { describe, expect, it } from 'bun:test'
import type { IncludePlan, SearchOrder } from '../../../src/model/query'
import type { Id, StoredRecord } from '../../../src/model/record'
import { authorIs, authors, books, byId, type ContractContext, collections, fixtures } from './context'

const noPlan: IncludePlan = new Map()
const byNameDown = [
  { field: 'name', descending: true },
  { field: 'id', descending: false },
] as const
const search = (text: string) => ({ kind: 'search', text }) as const

/** Reading lists: orders, filters, windows, totals, search, streams, related records and members. */
export function describeListContract(t: ContractContext): void {
  const { author, collection, book, listed } = fixtures(t)

  /** The ids of the books a search finds: most relevant first when `ranked`, else in id order. */
  const found = async (text: string, ranked = false): Promise<Id[]> =>
    (await listed(books, { filters: [search(text)], ranked, limit: 1000 })).map((r) => r.id)

  describe('list and page', () => {
    it('reads records in id order a window at a time, by keyset (after) or by offset', async () => {
      const all: StoredRecord[] = []
      for (let i = 1; i <= 7; i++) all.push(await author(`Author ${i}`))
      const after = (id: Id) => listed(authors, { limit: 3, after: [id] })
      expect(await listed(authors, { limit: 3 })).toEqual(all.slice(0, 3))
      expect(await after(all[2]?.id as Id)).toEqual(all.slice(3, 6))
      expect(await after(all[5]?.id as Id)).toEqual(all.slice(6))
      expect(await after(all[6]?.id as Id)).toEqual([])
      expect(await listed(authors, { limit: 3, offset: 5 })).toEqual(all.slice(5))
    })

    it('sorts by several keys in their own directions, ties broken by id, and continues after a keyset', async () => {
      const b1 = await author('B')
      const a1 = await author('A')
      const b2 = await author('B')
      const a2 = await author('A')
      const sort = byNameDown
      expect(await listed(authors, { sort })).toEqual([b1, b2, a1, a2])
      expect(await listed(authors, { sort, after: ['B', b2.id] })).toEqual([a1, a2])
      expect(await listed(authors, { sort, limit: 2, offset: 1 })).toEqual([b2, a1])
      const idDown = [{ field: 'id', descending: true }]
      expect(await listed(authors, { sort: idDown })).toEqual([a2, b2, a1, b1])
    })

    it('filters by relationship (any of several ids), and page counts the whole list', async () => {
      const a = await author('A')
      const b = await author('B')
      const c = await author('C')
      const a1 = await book('A1', a.id)
      const b1 = await book('B1', b.id)
      const a2 = await book('A2', a.id)
      await book('C1', c.id)
      expect(await listed(books, { filters: [authorIs(a.id)] })).toEqual([a1, a2])
      expect(await listed(books, { filters: [authorIs(a.id, b.id)] })).toEqual([a1, b1, a2])
      expect(await listed(books, { filters: [authorIs(999)] })).toEqual([])
      const page = await t.store().page(books, { filters: [authorIs(a.id, b.id)], sort: byId, limit: 2 })
      expect(page).toEqual({ records: [a1, b1], total: 3 })
      expect((await t.store().page(books, { filters: [], sort: byId, limit: 1, offset: 10 })).total).toBe(4)
    })

    it('filters by an exact attribute value and by no collection, together with other filters', async () => {
      const a = await author('A')
      const c = await collection('C')
      const loose = await book('Same', a.id)
      const inside = await book('Same', a.id, c.id)
      await book('same', a.id)
      const none = { kind: 'relationship', relationship: 'book_collection', ids: [], orNone: true } as const
      const inC = { kind: 'relationship', relationship: 'book_collection', ids: [c.id], orNone: false } as const
      const inCOrNone = { ...inC, orNone: true } as const
      const named = { kind: 'attribute', attribute: 'name', value: 'Same' } as const
      expect(await listed(books, { filters: [named] })).toEqual([loose, inside])
      expect(await listed(books, { filters: [named, none] })).toEqual([loose])
      expect(await listed(books, { filters: [authorIs(a.id), inC] })).toEqual([inside])
      expect((await listed(books, { filters: [inCOrNone] })).length).toBe(3)
    })

    it('counts a list up to a bound: the whole count below it, the bound at or above it', async () => {
      const a = await author('A')
      const b = await author('B')
      for (let i = 0; i < 4; i++) await book(`A${i}`, a.id)
      await book('B0', b.id)
      const count = (ids: Id[], cap: number) => t.store().countUpTo(books, [authorIs(...ids)], cap)
      expect(await count([a.id], 10)).toBe(4)
      expect(await count([a.id], 4)).toBe(4)
      expect(await count([a.id], 3)).toBe(3)
      expect(await count([a.id, b.id], 10)).toBe(5)
      expect(await count([999], 10)).toBe(0)
      expect(await t.store().countUpTo(books, [], 2)).toBe(2)
      expect(await t.store().countUpTo(books, [], 100)).toBe(5)
    })

    it('reads a page and its total from one snapshot, while writes go on', async () => {
      const a = await author('A')
      for (let i = 0; i < 5; i++) await book(`B${i}`, a.id)
      const writes = Array.from({ length: 20 }, (_, i) => book(`W${i}`, a.id))
      const pages = Array.from({ length: 20 }, () => t.store().page(books, { filters: [], sort: byId, limit: 1000 }))
      await Promise.all(writes)
      for (const { records, total } of await Promise.all(pages)) expect(records.length).toBe(total)
    })
  })

  describe('search', () => {
    it('matches the last word as a prefix and the words before it whole, in the title, author or collection, repeats ignored', async () => {
      const ofelia = await author('Ofelia Strand')
      const plain = await author('Jane Doe')
      const days = await collection('Book of Days')
      const title = await book('The Left Hand of Darkness', plain.id)
      const prefix = await book('Office Hours', plain.id)
      await book('Roof Garden', plain.id)
      const byAuthor = await book('Tides', ofelia.id)
      const inCollection = await book('Almanac', plain.id, days.id)
      await book('Nothing Here', plain.id)
      expect(await found('of')).toEqual([title.id, prefix.id, byAuthor.id, inCollection.id])
      // A word before the last is a whole word: "of", not Office or Ofelia.
      const whole = [title.id, inCollection.id]
      expect(await found('of of of of')).toEqual(whole)
      expect(await found('OF Of of')).toEqual(whole)
      expect(await found('of of of of', true)).toEqual(await found('of of', true))
      expect(await found('office of')).toEqual([prefix.id])
      expect(await found('of office')).toEqual([])
      expect(await found('nowhere')).toEqual([])
    })

    it('ranks a search of a table with no rows, fresh or emptied by deletes, as an empty list and page', async () => {
      const rankedEmpty = async () => {
        for (const resource of [authors, collections, books]) {
          const query = { filters: [search('tolkien')], sort: byId, ranked: true, limit: 10 }
          expect(await listed(resource, query)).toEqual([])
          expect(await t.store().page(resource, query)).toEqual({ records: [], total: 0 })
        }
      }
      await rankedEmpty()
      const tolkien = await author('Tolkien')
      const shelf = await collection('Tolkien Shelf')
      const reader = await book('Tolkien Reader', tolkien.id, shelf.id)
      expect((await found('tolkien', true)).length).toBe(1)
      for (const [resource, id] of [
        [books, reader.id],
        [collections, shelf.id],
        [authors, tolkien.id],
      ] as const) {
        expect(await t.store().delete(resource, id)).toEqual({ status: 'deleted' })
      }
      await rankedEmpty()
    })

    it('folds case and accents both ways', async () => {
      const zola = await author('Émile Zola')
      const germinal = await book('Germinal', zola.id)
      const cafe = await book('Café Society', zola.id)
      expect(await found('emile')).toEqual([germinal.id, cafe.id])
      expect(await found('ÉMILE germ')).toEqual([germinal.id])
      expect(await found('cafe')).toEqual([cafe.id])
      expect(await found('CAFÉ')).toEqual([cafe.id])
      expect((await listed(authors, { filters: [search('zola')] })).map((r) => r.id)).toEqual([zola.id])
    })

    it('ranks a title match above an author-name match above a collection-name match', async () => {
      const jane = await author('Jane Doe')
      const mary = await author('Mary Quill')
      const series = await collection('Quill Series')
      const other = await collection('Other Shelf')
      // Created lowest relevance first, so that the id order is the reverse of the ranking.
      const inCollection = await book('Gamma', jane.id, series.id)
      const byAuthor = await book('Beta', mary.id, other.id)
      const titled = await book('Quill Pens', jane.id, other.id)
      for (let i = 0; i < 6; i++) await book(`Filler ${i}`, jane.id, other.id)
      expect(await found('quill', true)).toEqual([titled.id, byAuthor.id, inCollection.id])
      expect(await found('quill')).toEqual([inCollection.id, byAuthor.id, titled.id])
    })

    it('follows a renamed author or collection', async () => {
      const renamed = await author('Oldname Person')
      const shelf = await collection('Oldshelf')
      const mine = await book('Mine', renamed.id, shelf.id)
      await t.store().update(authors, renamed.id, { attributes: { name: 'Newname Person' }, toOne: {} })
      await t.store().update(collections, shelf.id, { attributes: { name: 'Newshelf' }, toOne: {} })
      expect(await found('oldname')).toEqual([])
      expect(await found('oldshelf')).toEqual([])
      expect(await found('newname')).toEqual([mine.id])
      expect(await found('newshelf')).toEqual([mine.id])
    })
  })

  describe('stream and matchingIds', () => {
    /** 60 books by 3 authors, titles out of id order; `sizes` tried per order. */
    async function seeded(): Promise<StoredRecord[]> {
      const ids = [(await author('Ada')).id, (await author('Bram')).id, (await author('Cora')).id]
      const all: StoredRecord[] = []
      for (let i = 0; i < 60; i++) {
        const word = i % 4 === 0 ? 'Winter' : 'River'
        all.push(await book(`${word} ${(i * 7) % 20}`, ids[i % 3] as Id))
      }
      return all
    }

    async function streamed(query: SearchOrder, size: number): Promise<StoredRecord[][]> {
      const batches: StoredRecord[][] = []
      for await (const batch of t.store().stream(books, query, size)) batches.push([...batch])
      return batches
    }

    it('gives every record of a list once, in the order of the list read at once, in batches of the size', async () => {
      await seeded()
      const queries: SearchOrder[] = [
        { filters: [], sort: byId },
        { filters: [], sort: byNameDown },
        { filters: [authorIs(2)], sort: byNameDown },
        { filters: [authorIs(1, 3)], sort: byNameDown },
        { filters: [search('winter')], sort: byId },
        { filters: [search('winter bram')], sort: byId, ranked: true },
      ]
      for (const query of queries) {
        const whole = await t.store().list(books, { ...query, limit: 1000 })
        expect(whole.length).toBeGreaterThan(0)
        for (const size of [1, 7, 1000]) {
          const batches = await streamed(query, size)
          expect(batches.length).toBe(Math.ceil(whole.length / size))
          for (const batch of batches.slice(0, -1)) expect(batch).toHaveLength(size)
          expect(batches.flat()).toEqual(whole)
        }
        expect(await t.store().matchingIds(books, query)).toEqual(whole.map((r) => r.id))
      }
    })

    it('yields no batch for an empty list', async () => {
      await seeded()
      for (const filters of [[authorIs(4000)], [search('nowhere')], [authorIs(4000, 4001)]]) {
        expect(await streamed({ filters, sort: byNameDown }, 10)).toEqual([])
      }
    })

    it('leaves out a record deleted while the list streams', async () => {
      const all = await seeded()
      const last = all.at(-1) as StoredRecord
      const got: StoredRecord[] = []
      for await (const batch of t.store().stream(books, { filters: [], sort: byId }, 10)) {
        if (got.length === 0) expect(await t.store().delete(books, last.id)).toEqual({ status: 'deleted' })
        got.push(...batch)
      }
      expect(got).toEqual(all.slice(0, -1))
    })
  })

  describe('findWithRelated and members', () => {
    it("reads an author's and a collection's books along the plan, with their linkage", async () => {
      const a = await author('A')
      const other = await author('Other')
      const c = await collection('C')
      const one = await book('One', a.id, c.id)
      const two = await book('Two', a.id)
      const three = await book('Three', other.id, c.id)
      const plan = new Map([['books', { include: true, children: noPlan }]])
      const byAuthor = await t.store().findWithRelated(authors, a.id, plan)
      expect(byAuthor?.record).toEqual(a)
      expect(byAuthor?.graph.included.map((r) => r.record)).toEqual([one, two])
      expect(byAuthor?.graph.linkage('authors', a.id, 'books')).toEqual([one.id, two.id])
      const byCollection = await t.store().findWithRelated(collections, c.id, plan)
      expect(byCollection?.graph.included.map((r) => r.record)).toEqual([one, three])
      expect(await t.store().findWithRelated(authors, 999, plan)).toBeNull()
    })

    it('follows nested paths, includes each record once, and reads linkage alone where not included', async () => {
      const a = await author('A')
      const c = await collection('C')
      const one = await book('One', a.id, c.id)
      const two = await book('Two', a.id, c.id)
      const plan: IncludePlan = new Map([
        ['books', { include: true, children: new Map([['book_collection', { include: true, children: noPlan }]]) }],
      ])
      const found = await t.store().findWithRelated(authors, a.id, plan)
      expect(found?.graph.included.map((r) => `${r.resource.type}:${r.record.id}`)).toEqual([
        `books:${one.id}`,
        `books:${two.id}`,
        `book_collections:${c.id}`,
      ])
      expect(found?.graph.linkage('books', two.id, 'book_collection')).toBe(c.id)
      expect(found?.graph.linkage('books', two.id, 'author')).toBeUndefined()
      const linkOnly = await t
        .store()
        .findWithRelated(books, one.id, new Map([['author', { include: false, children: noPlan }]]))
      expect(linkOnly?.graph.linkage('books', one.id, 'author')).toBe(a.id)
      expect(linkOnly?.graph.included).toEqual([])
    })

    it('reads a book with its author and collection, a null collection as null linkage and nothing included', async () => {
      const a = await author('A')
      const c = await collection('C')
      const inCollection = await book('In', a.id, c.id)
      const alone = await book('Alone', a.id)
      const plan: IncludePlan = new Map([
        ['author', { include: true, children: noPlan }],
        ['book_collection', { include: true, children: noPlan }],
      ])
      const both = await t.store().findWithRelated(books, inCollection.id, plan)
      expect(both?.record).toEqual(inCollection)
      expect(both?.graph.included.map((r) => r.record)).toEqual([a, c])
      expect(both?.graph.linkage('books', inCollection.id, 'book_collection')).toBe(c.id)
      const one = await t.store().findWithRelated(books, alone.id, plan)
      expect(one?.record).toEqual(alone)
      expect(one?.graph.included.map((r) => `${r.resource.type}:${r.record.id}`)).toEqual([`authors:${a.id}`])
      expect(one?.graph.linkage('books', alone.id, 'book_collection')).toBeNull()
      expect(await t.store().findWithRelated(books, 999, plan)).toBeNull()
    })

    it('gives the members of a to-many relationship for many owners, in id order, owners with none absent', async () => {
      const a = await author('A')
      const b = await author('B')
      const empty = await author('Empty')
      const a1 = await book('A1', a.id)
      const b1 = await book('B1', b.id)
      const a2 = await book('A2', a.id)
      const members = await t.store().members(authors, 'books', [a.id, b.id, empty.id, 999])
      expect(members).toEqual(
        new Map([
          [a.id, [a1.id, a2.id]],
          [b.id, [b1.id]],
        ]),
      )
      expect(await t.store().members(authors, 'books', [])).toEqual(new Map())
    })
  })
}
