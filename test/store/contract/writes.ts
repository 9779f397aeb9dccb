import { describe, expect, it } from 'bun:test'
import type { AtomicFailure, AtomicOperation } from '../../../src/model/writes'
import { authorIs, authors, books, type ContractContext, collections, fixtures } from './context'

/** Writes of many records at once: to-many changes and atomic batches. */
export function describeWriteContract(t: ContractContext): void {
  const { author, collection, book, listed } = fixtures(t)

  describe('changeToMany', () => {
    it('adds, removes and replaces members by writing their to-one, answering the members in id order', async () => {
      const a = await author('A')
      const shelf = await collection('Shelf')
      const [one, two, three] = [await book('One', a.id), await book('Two', a.id), await book('Three', a.id)]
      const change = (ids: number[], kind: 'add' | 'remove' | 'replace') =>
        t.store().changeToMany(collections, shelf.id, 'books', ids, kind)
      expect(await change([three.id, one.id], 'add')).toEqual({ status: 'changed', members: [one.id, three.id] })
      expect(await change([one.id, two.id], 'remove')).toEqual({ status: 'changed', members: [three.id] })
      expect(await change([two.id, one.id, one.id], 'replace')).toEqual({
        status: 'changed',
        members: [one.id, two.id],
      })
      expect((await t.store().find(books, three.id))?.toOne.book_collection).toBeNull()
      expect((await t.store().members(collections, 'books', [shelf.id])).get(shelf.id)).toEqual([one.id, two.id])
      expect(await change([], 'replace')).toEqual({ status: 'changed', members: [] })
    })

    it('moves a book from another owner when added, and changes nothing when a member is missing', async () => {
      const a = await author('A')
      const b = await author('B')
      const one = await book('One', a.id)
      expect(await t.store().changeToMany(authors, b.id, 'books', [one.id], 'add')).toEqual({
        status: 'changed',
        members: [one.id],
      })
      expect((await t.store().find(books, one.id))?.toOne.author).toBe(b.id)
      expect(await t.store().changeToMany(authors, a.id, 'books', [one.id, 998, 999], 'add')).toEqual({
        status: 'missing',
        ids: [998, 999],
      })
      expect((await t.store().find(books, one.id))?.toOne.author).toBe(b.id)
      expect(await t.store().changeToMany(authors, 999, 'books', [one.id], 'add')).toEqual({ status: 'not-found' })
    })
  })

  describe('atomic', () => {
    it('runs the operations in order, resolving lids to the ids the batch assigned', async () => {
      const existing = await author('Existing')
      const operations: AtomicOperation[] = [
        { kind: 'create', resource: authors, lid: 'new-author', input: { attributes: { name: 'New' }, toOne: {} } },
        {
          kind: 'create',
          resource: books,
          lid: 'new-book',
          input: { attributes: { name: 'Book' }, toOne: { author: { lid: 'new-author' } } },
        },
        {
          kind: 'update',
          resource: books,
          target: { lid: 'new-book' },
          input: { attributes: { name: 'Renamed' }, toOne: {} },
        },
        {
          kind: 'to-many',
          resource: authors,
          target: { id: existing.id },
          relationship: 'books',
          members: [{ lid: 'new-book' }],
          change: 'add',
        },
        { kind: 'delete', resource: authors, target: { lid: 'new-author' } },
      ]
      const outcome = await t.store().atomic(operations)
      if (!outcome.ok) throw new Error(`atomic failed: ${JSON.stringify(outcome)}`)
      const [newAuthor, newBook, renamed, members, deleted] = outcome.results
      expect(newAuthor).toMatchObject({ kind: 'record', record: { attributes: { name: 'New' } } })
      const bookId = newBook?.kind === 'record' ? newBook.record.id : -1
      expect(renamed).toEqual({
        kind: 'record',
        record: {
          id: bookId,
          attributes: { name: 'Renamed' },
          toOne: { author: newAuthor?.kind === 'record' ? newAuthor.record.id : -1, book_collection: null },
        },
      })
      expect(members).toEqual({ kind: 'members', members: [bookId] })
      expect(deleted).toEqual({ kind: 'none' })
      expect(await listed(authors)).toEqual([existing])
      expect(await listed(books)).toEqual([
        { id: bookId, attributes: { name: 'Renamed' }, toOne: { author: existing.id, book_collection: null } },
      ])
    })

    it('stores nothing when an operation fails, and names the first that failed and why', async () => {
      const a = await author('A')
      const kept = await book('Kept', a.id)
      const before = { authors: await listed(authors), books: await listed(books) }
      const create = {
        kind: 'create',
        resource: authors,
        lid: 'x',
        input: { attributes: { name: 'X' }, toOne: {} },
      } as const
      const cases: [AtomicOperation, AtomicFailure][] = [
        [{ kind: 'delete', resource: authors, target: { id: 999 } }, { kind: 'not-found' }],
        [
          { kind: 'update', resource: books, target: { lid: 'nowhere' }, input: { attributes: {}, toOne: {} } },
          { kind: 'unknown-lid', lid: 'nowhere' },
        ],
        [
          { kind: 'create', resource: books, input: { attributes: { name: 'B' }, toOne: { author: { id: 999 } } } },
          { kind: 'missing', relationships: ['author'] },
        ],
        [
          {
            kind: 'to-many',
            resource: authors,
            target: { lid: 'x' },
            relationship: 'books',
            members: [{ id: 998 }],
            change: 'add',
          },
          { kind: 'missing-members', ids: [998] },
        ],
        [
          { kind: 'delete', resource: authors, target: { id: a.id } },
          { kind: 'restricted', id: a.id, by: books, count: 1 },
        ],
      ]
      for (const [failing, failure] of cases) {
        const rename = {
          kind: 'update',
          resource: books,
          target: { id: kept.id },
          input: { attributes: { name: 'Changed' }, toOne: {} },
        } as const
        expect(await t.store().atomic([create, rename, failing])).toEqual({ ok: false, index: 2, failure })
        expect({ authors: await listed(authors), books: await listed(books) }).toEqual(before)
      }
      expect(await listed(books, { filters: [authorIs(a.id)] })).toEqual([kept])
    })

    it('does not take a lid for a record of another type', async () => {
      const outcome = await t.store().atomic([
        { kind: 'create', resource: collections, lid: 'c', input: { attributes: { name: 'C' }, toOne: {} } },
        { kind: 'delete', resource: authors, target: { lid: 'c' } },
      ])
      expect(outcome).toEqual({ ok: false, index: 1, failure: { kind: 'unknown-lid', lid: 'c' } })
      expect(await listed(collections)).toEqual([])
    })

    it('with expect, reads its targets as they were before the batch and runs only if it accepts them', async () => {
      const a = await author('A')
      const one = await book('One', a.id)
      const targets = [
        { kind: 'record', resource: books, id: one.id, removing: false },
        { kind: 'members', resource: authors, id: a.id, relationship: 'books' },
        { kind: 'record', resource: books, id: 999, removing: true },
      ] as const
      const rename = {
        kind: 'update',
        resource: books,
        target: { id: one.id },
        input: { attributes: { name: 'Renamed' }, toOne: {} },
      } as const
      const create = { kind: 'create', resource: authors, input: { attributes: { name: 'New' }, toOne: {} } } as const
      const seen: unknown[] = []
      const refusing = (states: readonly unknown[]) => {
        seen.push(...states)
        return false
      }
      expect(await t.store().atomic([create, rename], { targets, expect: refusing })).toBe('stale')
      expect(seen).toEqual([one, [one.id], null])
      expect(await listed(authors)).toEqual([a])
      expect(await listed(books)).toEqual([one])
      const outcome = await t.store().atomic([rename], { targets, expect: () => true })
      expect(outcome).toMatchObject({
        ok: true,
        results: [{ kind: 'record', record: { attributes: { name: 'Renamed' } } }],
      })
    })
  })
}
