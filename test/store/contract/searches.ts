import { describe, expect, it } from 'bun:test'
import type { NamedBook } from '../../../src/model/imports'
import type { ListQuery, SortKey } from '../../../src/model/query'
import type { Id } from '../../../src/model/record'
import { authors, books, byId, type ContractContext, fixtures } from './context'

const search = (text: string) => ({ kind: 'search', text }) as const
const COUNT = 12_000

/**
 * 12,000 books where words sit where a backend's shortcuts could miss them: `late` only in the
 * last 100 titles (none among the first rows a backend may try first), `writer` in the last 30 of
 * them and in the author of all but one book of 500, `quill` in that author (`Quill Keeper`) and in
 * the collection of six books of seven, `rare` in one title of 1,000; `volume` in every title.
 */
function catalogue(): NamedBook[] {
  return Array.from({ length: COUNT }, (_, n) => {
    const i = n + 1
    const late = i > COUNT - 30 ? `Late Volume Writer ${i}` : `Late Volume ${i}`
    return {
      title: i > COUNT - 100 ? late : i % 1000 === 0 ? `Rare Volume ${i}` : `Volume ${i}`,
      author: i % 500 === 0 ? 'Quill Keeper' : 'Plain Writer',
      collection: i % 7 === 0 ? null : 'Quill Shelf',
    }
  })
}

/** Searches whose matches are few, clustered or many, against what a scan of every book finds. */
export function describeSearchScanContract(t: ContractContext): void {
  const { listed } = fixtures(t)

  /** The catalogue stored, and every book as stored: id, title and author's name. */
  async function stored(): Promise<{ id: Id; title: string; author: string; shelved: boolean }[]> {
    const session = t.store().openImport({ dryRun: false })
    try {
      await session.add(catalogue())
    } finally {
      await session.close()
    }
    const names = new Map((await listed(authors)).map((a) => [a.id, a.attributes.name as string]))
    const all = await listed(books, { limit: COUNT })
    return all.map((b) => ({
      id: b.id,
      title: b.attributes.name as string,
      author: names.get(b.toOne.author as Id) as string,
      shelved: b.toOne.book_collection !== null,
    }))
  }

  const page = async (text: string, query: Partial<ListQuery>) => {
    const answer = await t.store().page(books, { filters: [search(text)], sort: byId, limit: 20, ...query })
    return { ids: answer.records.map((r) => r.id), total: answer.total }
  }

  describe('search over many books', () => {
    it('finds a word that only the last books hold, ranked, by offset and by cursor both ways', async () => {
      const late = (await stored()).filter((b) => b.title.startsWith('Late')).map((b) => b.id)
      expect(late.length).toBe(100)
      expect(await page('late', { ranked: true })).toEqual({ ids: late.slice(0, 20), total: 100 })
      expect(await page('late', { ranked: true, offset: 60 })).toEqual({ ids: late.slice(60, 80), total: 100 })
      expect(await page('late', { after: [late[49] as Id] })).toEqual({ ids: late.slice(50, 70), total: 100 })
      const down: SortKey[] = [{ field: 'id', descending: true }]
      const reversed = [...late].reverse()
      expect(await page('late', { sort: down })).toEqual({ ids: reversed.slice(0, 20), total: 100 })
      expect(await page('late', { sort: down, after: [reversed[19] as Id] })).toEqual({
        ids: reversed.slice(20, 40),
        total: 100,
      })
    })

    it('ranks past 10,000 matches by tiers: a tier found only in the last books, then the next', async () => {
      const all = await stored()
      const titled = all.filter((b) => b.title.includes('Writer')).map((b) => b.id)
      const byAuthor = all.filter((b) => b.author === 'Plain Writer' && !b.title.includes('Writer')).map((b) => b.id)
      // writer in the title (10) and volume (10), before writer as the author (2) and volume (10).
      const ranked = [...titled, ...byAuthor]
      expect(await page('volume writer', { ranked: true })).toEqual({ ids: ranked.slice(0, 20), total: 10_000 })
      expect(await page('volume writer', { ranked: true, offset: 20 })).toEqual({
        ids: ranked.slice(20, 40),
        total: 10_000,
      })
    })

    it('ranks a word in every title with a rare author before the same word with a common collection', async () => {
      const all = await stored()
      const quill = all.filter((b) => b.author === 'Quill Keeper').map((b) => b.id)
      const shelved = all.filter((b) => b.author !== 'Quill Keeper' && b.shelved).map((b) => b.id)
      expect(quill.length).toBe(COUNT / 500)
      // quill as the author (2) before quill as the collection (1), volume in every title (10).
      const ranked = [...quill, ...shelved]
      expect(await page('volume quill', { ranked: true })).toEqual({ ids: ranked.slice(0, 20), total: 10_000 })
      expect(await page('quill vol', { ranked: true, offset: 20 })).toEqual({
        ids: ranked.slice(20, 40),
        total: 10_000,
      })
    })

    it('counts a search up to 10,000, and sorts what it matches by name, more than 10,000 or fewer', async () => {
      const all = await stored()
      expect((await page('volume', { ranked: true })).total).toBe(10_000)
      expect((await page('late', { ranked: true })).total).toBe(100)
      const byNameDown = (a: { title: string; id: Id }, b: { title: string; id: Id }) =>
        a.title < b.title ? 1 : a.title > b.title ? -1 : a.id - b.id
      const sort: SortKey[] = [
        { field: 'name', descending: true },
        { field: 'id', descending: false },
      ]
      const rare = all.filter((b) => b.title.startsWith('Rare')).sort(byNameDown)
      expect(await page('rare', { sort })).toEqual({ ids: rare.map((b) => b.id), total: rare.length })
      const rareDown = rare.map((b) => b.id).sort((a, b) => b - a)
      expect(await page('rare', { sort: [{ field: 'id', descending: true }] })).toEqual({
        ids: rareDown,
        total: rare.length,
      })
      const volumes = [...all].sort(byNameDown).map((b) => b.id)
      expect(await page('volume', { sort, offset: 40 })).toEqual({ ids: volumes.slice(40, 60), total: 10_000 })
      expect(await page('nowhere', { ranked: true })).toEqual({ ids: [], total: 0 })
    })
  })
}
