import { describe, expect, it } from 'bun:test'
import { type SearchLane, SearchLanes } from '../../src/http/search-lanes'

// Which lane a search runs in follows what its runs cost (src/http/search-lanes.ts): the lanes
// themselves, with searches that report a chosen cost, as a read thread reports its CPU time.

/** Runs the search `key` as costing `spentMs`, and says in which lane it ran. */
async function runAt(lanes: SearchLanes, key: string, spentMs: number): Promise<SearchLane> {
  return (await lanes.run(key, undefined, async (lane) => ({ lane, spentMs }))).lane
}

describe('SearchLanes', () => {
  it('runs a search beside the others until one of its runs costs the bound, then in the heavy lane', async () => {
    const lanes = new SearchLanes(1, 50)
    expect(await runAt(lanes, 'books a', 49)).toBe('ordinary')
    expect(await runAt(lanes, 'books a', 50)).toBe('ordinary')
    expect(lanes.cost('books a')).toBe(50)
    expect(await runAt(lanes, 'books a', 40)).toBe('heavy')
  })

  it('keeps a heavy search heavy while it costs half the bound or more, so that one near it does not change lanes run by run', async () => {
    const lanes = new SearchLanes(1, 50)
    await runAt(lanes, 'books the a', 71)
    for (const spentMs of [45, 30, 25]) {
      expect(await runAt(lanes, 'books the a', spentMs)).toBe('heavy')
      expect(lanes.cost('books the a')).toBe(spentMs)
    }
    expect(await runAt(lanes, 'books the a', 24)).toBe('heavy')
    expect(lanes.cost('books the a')).toBeUndefined()
    expect(await runAt(lanes, 'books the a', 45)).toBe('ordinary')
    expect(await runAt(lanes, 'books the a', 10)).toBe('ordinary')
  })

  it('remembers each search apart', async () => {
    const lanes = new SearchLanes(1, 50)
    await runAt(lanes, 'books a e i o u', 120)
    expect(await runAt(lanes, 'authors a e i o u', 5)).toBe('ordinary')
    expect(await runAt(lanes, 'books a e i o u', 5)).toBe('heavy')
  })
})
