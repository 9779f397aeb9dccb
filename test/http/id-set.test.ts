import { describe, expect, it } from 'bun:test'
import { IdSet } from '../../src/http/streaming/id-set'

/** Where IdSet stops keeping bits and keeps a Set instead. */
const BITMAP_LIMIT = 2 ** 24

describe('IdSet', () => {
  it('is empty at first, for small ids, ids beyond its first size and ids past the bitmap', () => {
    const set = new IdSet()
    for (const id of [0, 1, 7, 8, 8191, 8192, 1_000_000, BITMAP_LIMIT - 1, BITMAP_LIMIT, 2 ** 40]) {
      expect(set.has(id)).toBe(false)
    }
  })

  it('has 0, 7 and 8 once added, and not their neighbours in the same or the next byte', () => {
    const set = new IdSet()
    for (const id of [0, 7, 8]) set.add(id)
    expect([0, 1, 6, 7, 8, 9, 15, 16].map((id) => set.has(id))).toEqual([
      true,
      false,
      false,
      true,
      true,
      false,
      false,
      false,
    ])
  })

  it('grows to hold large ids and keeps those added before', () => {
    const set = new IdSet()
    const ids = [3, 8191, 8192, 65_537, 1_000_003, BITMAP_LIMIT - 1]
    for (const id of ids) {
      set.add(id)
      for (const earlier of ids.slice(0, ids.indexOf(id) + 1)) expect(set.has(earlier)).toBe(true)
    }
    for (const id of [2, 4, 8190, 8193, 65_536, 1_000_002, BITMAP_LIMIT - 2]) expect(set.has(id)).toBe(false)
  })

  it('holds every id of a dense range and none past it', () => {
    const set = new IdSet()
    for (let id = 1; id <= 100_000; id++) set.add(id)
    let held = 0
    for (let id = 0; id <= 100_100; id++) if (set.has(id)) held++
    expect(held).toBe(100_000)
    expect(set.has(0)).toBe(false)
    expect(set.has(100_001)).toBe(false)
  })

  it('keeps ids at and beyond 2^24 apart from the bitmap', () => {
    const set = new IdSet()
    for (const id of [BITMAP_LIMIT, BITMAP_LIMIT + 1, 2 ** 32, 2 ** 32 + 8, Number.MAX_SAFE_INTEGER]) set.add(id)
    for (const id of [BITMAP_LIMIT, BITMAP_LIMIT + 1, 2 ** 32, 2 ** 32 + 8, Number.MAX_SAFE_INTEGER]) {
      expect(set.has(id)).toBe(true)
    }
    // 2^32 and 2^32 + 8 would share the bits of 0 and 8 if they were taken modulo 2^32.
    for (const id of [0, 8, 1, BITMAP_LIMIT - 1, BITMAP_LIMIT + 2, 2 ** 32 + 1]) expect(set.has(id)).toBe(false)
    set.add(0)
    expect(set.has(0)).toBe(true)
    expect(set.has(BITMAP_LIMIT)).toBe(true)
  })

  it('takes an id added twice as one: it stays held and nothing else is', () => {
    const set = new IdSet()
    for (const id of [5, 5, BITMAP_LIMIT + 5, BITMAP_LIMIT + 5]) set.add(id)
    expect(set.has(5)).toBe(true)
    expect(set.has(BITMAP_LIMIT + 5)).toBe(true)
    expect([4, 6, 13, BITMAP_LIMIT + 4, BITMAP_LIMIT + 6].some((id) => set.has(id))).toBe(false)
  })

  it('gives its ids in ascending order in batches, past the bitmap too, each once and none it skips', () => {
    const set = new IdSet()
    for (const id of [2 ** 40, 9, BITMAP_LIMIT + 1, 0, 8, 9, 4096, BITMAP_LIMIT - 1, BITMAP_LIMIT]) set.add(id)
    expect([...set.batches(3)]).toEqual([
      [0, 8, 9],
      [4096, BITMAP_LIMIT - 1, BITMAP_LIMIT],
      [BITMAP_LIMIT + 1, 2 ** 40],
    ])
    const skip = new IdSet()
    for (const id of [8, 4096, BITMAP_LIMIT + 1]) skip.add(id)
    expect([...set.batches(4, skip)]).toEqual([[0, 9, BITMAP_LIMIT - 1, BITMAP_LIMIT], [2 ** 40]])
    expect([...new IdSet().batches(3)]).toEqual([])
  })
})
