import { describe, expect, it } from 'bun:test'
import type { Id, StoredRecord } from '../../../src/model/record'
import { authorIs, authors, books, type ContractContext, collections, created, fixtures } from './context'

const rename = (name: string) => ({ attributes: { name }, toOne: {} })

/** One record at a time: create, find, update, delete, conditional writes, version and ready. */
export function describeRecordContract(t: ContractContext): void {
  const { author, collection, book, listed } = fixtures(t)

  describe('create and find', () => {
    it('assigns increasing integer ids and returns the stored record', async () => {
      const first = await author('Octavia Butler')
      const second = await author('N. K. Jemisin')
      expect(first).toEqual({ id: 1, attributes: { name: 'Octavia Butler' }, toOne: {} })
      expect(second.id).toBe(2)
      expect(await t.store().find(authors, first.id)).toEqual(first)
    })

    it('stores a book with its author and collection, null collection when none is given', async () => {
      const a = await author('Author')
      const c = await collection('Shelf')
      const withCollection = await book('One', a.id, c.id)
      const without = await book('Two', a.id)
      expect(withCollection.toOne).toEqual({ author: a.id, book_collection: c.id })
      expect(without.toOne).toEqual({ author: a.id, book_collection: null })
      expect(await t.store().find(books, withCollection.id)).toEqual(withCollection)
    })

    it('finds nothing for an unknown id, and findMany leaves such ids out and keeps the order given', async () => {
      const a = await author('A')
      const b = await author('B')
      expect(await t.store().find(authors, 42)).toBeNull()
      expect((await t.store().findMany(authors, [b.id, 42, a.id])).map((r) => r.id)).toEqual([b.id, a.id])
      expect(await t.store().findMany(authors, [])).toEqual([])
    })

    it('keeps the text exactly, including quotes and non-ASCII', async () => {
      const name = `O'Brien "Flann" — Ｔｅｓｔ 📚`
      const a = await author(name)
      expect((await t.store().find(authors, a.id))?.attributes.name).toBe(name)
    })

    it('returns the missing author and stores nothing when the author does not exist', async () => {
      const result = await t.store().create(books, { attributes: { name: 'Lost' }, toOne: { author: 7 } })
      expect(result).toEqual({ ok: false, missing: ['author'] })
      expect(await listed(books)).toEqual([])
    })

    it('reports a required author given as null as missing, and both of two missing references', async () => {
      expect(await t.store().create(books, { attributes: { name: 'X' }, toOne: { author: null } })).toEqual({
        ok: false,
        missing: ['author'],
      })
      const both = await t
        .store()
        .create(books, { attributes: { name: 'X' }, toOne: { author: 5, book_collection: 6 } })
      expect(both).toEqual({ ok: false, missing: ['author', 'book_collection'] })
    })

    it('names the to-one references that point at nothing, without writing', async () => {
      const a = await author('A')
      const c = await collection('C')
      const store = t.store()
      expect(await store.missingReferences(books, { author: a.id, book_collection: c.id })).toEqual([])
      expect(await store.missingReferences(books, { author: 99 })).toEqual(['author'])
      expect(await store.missingReferences(books, { author: a.id, book_collection: 99 })).toEqual(['book_collection'])
      expect(await store.missingReferences(books, { author: null, book_collection: null })).toEqual(['author'])
      expect(await store.missingReferences(books, {})).toEqual([])
    })
  })

  describe('ids', () => {
    it('hands out a different id to each of many concurrent creates, and later ones higher', async () => {
      const ids = (await Promise.all(Array.from({ length: 20 }, (_, i) => author(`Author ${i}`)))).map((a) => a.id)
      expect(new Set(ids).size).toBe(20)
      const later = await author('Later')
      expect(later.id).toBeGreaterThan(Math.max(...ids))
      if (t.promises.gaplessIds) {
        expect(ids.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
        expect(later.id).toBe(21)
      }
    })

    const rolledBack = t.promises.gaplessIds
      ? 'gives back the ids of an atomic batch rolled back: the next create gets the next id, no gap'
      : 'hands out ids after an atomic batch rolled back higher than any before it (the batch may leave a gap)'
    it(rolledBack, async () => {
      const first = await author('First')
      const create = (name: string) =>
        ({ kind: 'create', resource: authors, input: { attributes: { name }, toOne: {} } }) as const
      expect(
        await t.store().atomic([create('X'), create('Y'), { kind: 'delete', resource: authors, target: { id: 999 } }]),
      ).toEqual({ ok: false, index: 2, failure: { kind: 'not-found' } })
      const next = await author('Next')
      if (t.promises.gaplessIds) expect(next.id).toBe(first.id + 1)
      else expect(next.id).toBeGreaterThan(first.id)
      expect((await listed(authors)).map((a) => a.attributes.name)).toEqual(['First', 'Next'])
    })
  })

  describe('update', () => {
    it('changes only the fields given', async () => {
      const a = await author('A')
      const b = await author('B')
      const c = await collection('C')
      const original = await book('Old title', a.id, c.id)
      const store = t.store()
      const renamed = created(await store.update(books, original.id, rename('New title')))
      expect(renamed).toEqual({ id: original.id, attributes: { name: 'New title' }, toOne: original.toOne })
      const moved = created(await store.update(books, original.id, { attributes: {}, toOne: { author: b.id } }))
      expect(moved).toEqual({
        id: original.id,
        attributes: { name: 'New title' },
        toOne: { author: b.id, book_collection: c.id },
      })
      const cleared = created(
        await store.update(books, original.id, { attributes: {}, toOne: { book_collection: null } }),
      )
      expect(cleared.toOne).toEqual({ author: b.id, book_collection: null })
      expect(await store.find(books, original.id)).toEqual(cleared)
    })

    it('returns the record unchanged when nothing is given, and null for an unknown id', async () => {
      const a = await author('A')
      expect(created(await t.store().update(authors, a.id, { attributes: {}, toOne: {} }))).toEqual(a)
      expect(await t.store().update(authors, 5, rename('X'))).toBeNull()
    })

    it('refuses a missing author and changes nothing', async () => {
      const a = await author('A')
      const b = await book('Title', a.id)
      const result = await t.store().update(books, b.id, { attributes: { name: 'Changed' }, toOne: { author: 404 } })
      expect(result).toEqual({ ok: false, missing: ['author'] })
      expect(await t.store().find(books, b.id)).toEqual(b)
    })
  })

  describe('delete', () => {
    it('deletes a record and then reports not-found', async () => {
      const a = await author('A')
      expect(await t.store().delete(authors, a.id)).toEqual({ status: 'deleted' })
      expect(await t.store().find(authors, a.id)).toBeNull()
      expect(await t.store().delete(authors, a.id)).toEqual({ status: 'not-found' })
    })

    it('refuses to delete an author who has books (restrict), with the count, and keeps everything', async () => {
      const a = await author('A')
      const one = await book('One', a.id)
      const two = await book('Two', a.id)
      const result = await t.store().delete(authors, a.id)
      expect(result.status).toBe('restricted')
      if (result.status !== 'restricted') return
      expect(result.by.type).toBe('books')
      expect(result.count).toBe(2)
      expect(await t.store().find(authors, a.id)).toEqual(a)
      expect(await listed(books, { filters: [authorIs(a.id)] })).toEqual([one, two])
      expect(await t.store().delete(books, one.id)).toEqual({ status: 'deleted' })
      expect(await t.store().delete(books, two.id)).toEqual({ status: 'deleted' })
      expect(await t.store().delete(authors, a.id)).toEqual({ status: 'deleted' })
    })

    it("deletes a collection and clears its books' collection (nullify), leaving other books as they were", async () => {
      const a = await author('A')
      const c = await collection('C')
      const keep = await collection('Keep')
      const one = await book('One', a.id, c.id)
      const two = await book('Two', a.id, keep.id)
      expect(await t.store().delete(collections, c.id)).toEqual({ status: 'deleted' })
      expect((await t.store().find(books, one.id))?.toOne).toEqual({ author: a.id, book_collection: null })
      expect((await t.store().find(books, two.id))?.toOne).toEqual({ author: a.id, book_collection: keep.id })
    })

    it('never hands out the id of a deleted record again, even the last one', async () => {
      await author('First')
      const last = await author('Last')
      expect(await t.store().delete(authors, last.id)).toEqual({ status: 'deleted' })
      expect((await author('Next')).id).toBe(last.id + 1)
    })
  })

  describe('conditional writes (Expectation)', () => {
    async function seeded() {
      const a = await author('Ann')
      const b = await book('Stone', a.id)
      return { authorId: a.id, bookId: b.id }
    }

    it('update: shows the expectation the record as it is, and writes when it agrees', async () => {
      const { authorId, bookId } = await seeded()
      const seen: StoredRecord[] = []
      const result = await t.store().update(books, bookId, rename('New'), {
        expect: (current) => {
          seen.push(current)
          return true
        },
      })
      expect(seen).toEqual([
        { id: bookId, attributes: { name: 'Stone' }, toOne: { author: authorId, book_collection: null } },
      ])
      expect(result).toMatchObject({ ok: true, record: { attributes: { name: 'New' } } })
    })

    it("update, delete and changeToMany: answer 'stale' and write nothing when it refuses", async () => {
      const { authorId, bookId } = await seeded()
      const store = t.store()
      expect(await store.update(books, bookId, rename('New'), { expect: () => false })).toBe('stale')
      expect(await store.delete(books, bookId, { expect: () => false })).toBe('stale')
      expect(await store.changeToMany(authors, authorId, 'books', [], 'replace', { expect: () => false })).toBe('stale')
      expect(await store.find(books, bookId)).toMatchObject({
        attributes: { name: 'Stone' },
        toOne: { author: authorId },
      })
    })

    it('changeToMany: shows the expectation the members in id order', async () => {
      const { authorId, bookId } = await seeded()
      const shelf = (await collection('Shelf')).id
      const second = await book('Second', authorId)
      await t.store().changeToMany(collections, shelf, 'books', [second.id, bookId], 'add')
      const seen: (readonly Id[])[] = []
      await t.store().changeToMany(collections, shelf, 'books', [bookId], 'remove', {
        expect: (members) => {
          seen.push([...members])
          return true
        },
      })
      expect(seen).toEqual([[bookId, second.id]])
    })

    it('reports a missing record as the write does, whatever the expectation', async () => {
      const store = t.store()
      expect(await store.update(books, 999, rename('X'), { expect: () => false })).toBeNull()
      expect(await store.delete(books, 999, { expect: () => false })).toEqual({ status: 'not-found' })
      expect(await store.changeToMany(authors, 999, 'books', [], 'replace', { expect: () => false })).toEqual({
        status: 'not-found',
      })
    })

    it('checks inside the write: of two concurrent writes expecting the same state, exactly one succeeds', async () => {
      const { bookId } = await seeded()
      const unchanged = (current: StoredRecord) => current.attributes.name === 'Stone'
      const results = await Promise.all([
        t.store().update(books, bookId, rename('First'), { expect: unchanged }),
        t.store().update(books, bookId, rename('Second'), { expect: unchanged }),
      ])
      const winners = results.filter((result) => result !== 'stale')
      expect(winners).toHaveLength(1)
      expect(results.filter((result) => result === 'stale')).toHaveLength(1)
      const winner = created(winners[0] ?? null)
      expect((await t.store().find(books, bookId))?.attributes.name).toBe(winner.attributes.name)
    })
  })

  describe('version and ready', () => {
    it('keeps the version while nothing is written, and changes it after every write', async () => {
      const store = t.store()
      const first = await store.version()
      expect(first).not.toBeNull()
      await store.find(authors, 1)
      expect(await store.version()).toBe(first)
      const a = await author('A')
      const second = await store.version()
      expect(second).not.toBe(first)
      await store.update(authors, a.id, rename('B'))
      const third = await store.version()
      expect(third).not.toBe(second)
      await store.delete(authors, a.id)
      expect(await store.version()).not.toBe(third)
    })

    it('is ready when open', async () => {
      expect(await t.store().ready()).toBeUndefined()
    })
  })
}
