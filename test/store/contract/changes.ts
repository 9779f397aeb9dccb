import { describe, expect, it } from 'bun:test'
import type { Change, ChangeRead } from '../../../src/model/changes'
import { START_OF_FEED } from '../../../src/model/changes'
import type { ChangeLog } from '../../../src/store/change-log'
import { authors, books, type ContractContext, collections, fixtures } from './context'

/** A change as the tests compare it: what happened to which record, without its opaque position. */
function seen(changes: readonly Change[]): string[] {
  return changes.map((c) => `${c.op} ${c.type}/${c.recordId}`)
}

function page(read: ChangeRead): Extract<ChangeRead, { kind: 'page' }> {
  if (read.kind !== 'page') throw new Error('expected a page of changes, got gone')
  return read
}

/**
 * The log with reads that first wait until the newest change stays the newest for a moment: on
 * PostgreSQL a committed change is readable once every older transaction has ended (another
 * write's NOTIFY holds one for a millisecond or two), as a follower sees by asking again.
 */
function settling(changes: ChangeLog): ChangeLog {
  const settled = async () => {
    let last = await changes.latest()
    for (let i = 0; i < 100; i++) {
      await Bun.sleep(15)
      const now = await changes.latest()
      if (now === last) return
      last = now
    }
  }
  return {
    isPosition: (text) => changes.isPosition(text),
    read: async (window) => {
      await settled()
      return changes.read(window)
    },
    latest: async () => {
      await settled()
      return changes.latest()
    },
    prune: (seconds) => changes.prune(seconds),
    startOver: () => changes.startOver(),
    watch: (wake) => changes.watch(wake),
  }
}

/**
 * The change log (src/store/change-log.ts): every committed write's changes, in commit order, each
 * once; nothing of a write refused or rolled back; positions past which a read goes on; pruning
 * and the `gone` that follows it.
 */
export function describeChangeLogContract(t: ContractContext): void {
  const { author, collection, book } = fixtures(t)
  const log = () => settling(t.store().changes)
  /** Every change after `after`, walked `size` at a time as a follower walks the feed. */
  const walk = async (after: string | null = null, size = 100) => {
    const all: Change[] = []
    let position = after
    for (;;) {
      const read = page(await log().read({ after: position, types: null, size }))
      all.push(...read.changes)
      if (read.changes.length === 0) return { all, next: read.next }
      position = read.next
    }
  }

  describe('change log', () => {
    it('is empty at first: no latest, and the next position is the start', async () => {
      expect(await log().latest()).toBeNull()
      expect(page(await log().read({ after: null, types: null, size: 10 }))).toEqual({
        kind: 'page',
        changes: [],
        next: START_OF_FEED,
        rows: 0,
      })
      expect(log().isPosition(START_OF_FEED)).toBe(true)
      for (const bad of ['', 'x', '-1', '1e3', ' 1', '01', '1.2.3', '1.']) expect(log().isPosition(bad)).toBe(false)
      // Either backend's shape is a change id; the other backend's is gone here (a catalogue moved).
      for (const other of ['17', '1234.5']) {
        expect(log().isPosition(other)).toBe(true)
      }
    })

    it("records each write's changes once, in the order they were made", async () => {
      const a = await author('A')
      const b = await author('B')
      const c = await collection('C')
      const one = await book('One', a.id, c.id)
      await t.store().update(books, one.id, { attributes: {}, toOne: { author: b.id } })
      await t.store().changeToMany(authors, a.id, 'books', [one.id], 'add')
      expect((await t.store().delete(books, one.id)).status).toBe('deleted')
      const { all, next } = await walk()
      expect(seen(all)).toEqual([
        `create authors/${a.id}`,
        `create authors/${b.id}`,
        `create book_collections/${c.id}`,
        `create books/${one.id}`,
        `update books/${one.id}`,
        `update books/${one.id}`,
        `delete books/${one.id}`,
      ])
      expect(new Set(all.map((change) => change.id)).size).toBe(all.length)
      expect(next).toBe(all.at(-1)?.id as string)
      expect(await log().latest()).toBe(next)
      // Walked two at a time, the same changes.
      expect((await walk(null, 2)).all).toEqual(all)
      // After the newest: nothing, and the same position to ask again.
      expect(page(await log().read({ after: next, types: null, size: 10 }))).toEqual({
        kind: 'page',
        changes: [],
        next,
        rows: 0,
      })
    })

    it("records a collection's delete, then an update of each of its books", async () => {
      const a = await author('A')
      const c = await collection('C')
      const x = await book('X', a.id, c.id)
      const y = await book('Y', a.id, c.id)
      const before = await log().latest()
      expect((await t.store().delete(collections, c.id)).status).toBe('deleted')
      const { all } = await walk(before)
      expect(seen(all).slice(0, 1)).toEqual([`delete book_collections/${c.id}`])
      expect(seen(all).slice(1).sort()).toEqual([`update books/${x.id}`, `update books/${y.id}`].sort())
    })

    it('records nothing of a refused write or a failed atomic batch, all of a committed one', async () => {
      const a = await author('A')
      await book('Kept', a.id)
      const before = await log().latest()
      expect((await t.store().delete(authors, a.id)).status).toBe('restricted')
      const failed = await t.store().atomic([
        { kind: 'create', resource: authors, input: { attributes: { name: 'Gone' }, toOne: {} } },
        { kind: 'delete', resource: books, target: { id: 9999 } },
      ])
      expect(failed.ok).toBe(false)
      expect((await walk(before)).all).toEqual([])
      const done = await t.store().atomic([
        { kind: 'create', resource: authors, lid: 'n', input: { attributes: { name: 'New' }, toOne: {} } },
        {
          kind: 'create',
          resource: books,
          input: { attributes: { name: 'Its book' }, toOne: { author: { lid: 'n' } } },
        },
      ])
      if (!done.ok) throw new Error('the batch failed')
      const ids = done.results.map((r) => (r.kind === 'record' ? r.record.id : 0))
      expect(seen((await walk(before)).all)).toEqual([`create authors/${ids[0]}`, `create books/${ids[1]}`])
    })

    it('keeps the types asked for among the changes a window reads, and moves past them all', async () => {
      const a = await author('A')
      const x = await book('X', a.id)
      await author('B')
      const first = page(await log().read({ after: null, types: ['books'], size: 2 }))
      expect(seen(first.changes)).toEqual([`create books/${x.id}`])
      // The rows read count those of the other types too: what page[size] counts.
      expect(first.rows).toBe(2)
      const second = page(await log().read({ after: first.next, types: ['books'], size: 2 }))
      expect(second.changes).toEqual([])
      expect(second.rows).toBe(1)
      expect(second.next).toBe((await log().latest()) as string)
    })

    it('prunes the changes older than asked, and says gone to a read after a position before them', async () => {
      const a = await author('A')
      expect(await log().prune(3600)).toBe(0)
      await t.store().update(authors, a.id, { attributes: { name: 'A2' }, toOne: {} })
      const latest = (await log().latest()) as string
      // Changes are stamped in whole seconds: wait for the next one, then prune all.
      await Bun.sleep(1100)
      expect(await log().prune(0)).toBe(2)
      expect(await log().read({ after: START_OF_FEED, types: null, size: 10 })).toEqual({ kind: 'gone' })
      expect(page(await log().read({ after: null, types: null, size: 10 }))).toEqual({
        kind: 'page',
        changes: [],
        next: latest,
        rows: 0,
      })
      expect(await log().latest()).toBe(latest)
      const b = await author('B')
      expect(seen(page(await log().read({ after: latest, types: null, size: 10 })).changes)).toEqual([
        `create authors/${b.id}`,
      ])
    })

    it("says gone to the other backend's position, as a client of a catalogue moved between them has", async () => {
      await author('A')
      const latest = (await log().latest()) as string
      const other = latest.includes('.') ? '17' : '1234.5'
      expect(await log().read({ after: other, types: null, size: 10 })).toEqual({ kind: 'gone' })
    })

    it('says gone to a position ahead of every change, as a client of a database restored from an older backup has', async () => {
      await author('A')
      const latest = (await log().latest()) as string
      // Both backends' positions end in a sequence number: a larger one is ahead of every change.
      const ahead = latest.replace(/\d+$/, (n) => String(Number(n) + 1000))
      expect(log().isPosition(ahead)).toBe(true)
      expect(await log().read({ after: ahead, types: null, size: 10 })).toEqual({ kind: 'gone' })
      expect(page(await log().read({ after: latest, types: null, size: 10 })).changes).toEqual([])
    })

    it('starts over after a restore: every position before is gone, and the feed goes on from the newest', async () => {
      await author('A')
      const mid = (await log().latest()) as string
      await author('B')
      await log().startOver()
      for (const before of [START_OF_FEED, mid]) {
        expect(await log().read({ after: before, types: null, size: 10 })).toEqual({ kind: 'gone' })
      }
      const latest = (await log().latest()) as string
      expect(page(await log().read({ after: null, types: null, size: 10 }))).toEqual({
        kind: 'page',
        changes: [],
        next: latest,
        rows: 0,
      })
      const c = await author('C')
      expect(seen(page(await log().read({ after: latest, types: null, size: 10 })).changes)).toEqual([
        `create authors/${c.id}`,
      ])
    })

    it('wakes a watcher after a write this store commits', async () => {
      let woken = 0
      const stop = log().watch(() => woken++)
      await author('A')
      expect(woken).toBeGreaterThan(0)
      stop()
      const after = woken
      await author('B')
      expect(woken).toBe(after)
    })
  })
}
