import { describe, expect, it } from 'bun:test'
import { HEAVY_SEARCH_MS, SearchLanes } from '../../src/http/search-lanes'

// The heavy lane's rules (src/http/search-lanes.ts) on work whose cost is told, not run: which
// lane a search takes, in what order the heavy ones wait, and what a client that leaves does.

/** Work that says its cost, and finishes when `finish` is called. */
function work(spentMs: number) {
  let finish!: () => void
  const done = new Promise<void>((resolve) => {
    finish = resolve
  })
  const lanes: string[] = []
  const run = async (lane: string) => {
    lanes.push(lane)
    await done
    return { spentMs }
  }
  return { run, finish, lanes }
}

describe('SearchLanes', () => {
  it('runs a search at once the first time, and in the heavy lane once it has cost HEAVY_SEARCH_MS', async () => {
    const lanes = new SearchLanes()
    const first = work(HEAVY_SEARCH_MS)
    const running = lanes.run('a e i', undefined, first.run)
    first.finish()
    await running
    expect(first.lanes).toEqual(['ordinary'])
    expect(lanes.cost('a e i')).toBe(HEAVY_SEARCH_MS)

    const light = work(HEAVY_SEARCH_MS / 2 - 1)
    const again = lanes.run('a e i', undefined, light.run)
    light.finish()
    await again
    expect(light.lanes).toEqual(['heavy'])
    // Measured under half the bound this time: back with the others.
    expect(lanes.cost('a e i')).toBeUndefined()
  })

  it('keeps a heavy search heavy while it costs half the bound or more, so that one near it does not change lanes run by run', async () => {
    const lanes = new SearchLanes(1, 50)
    const runAt = async (spentMs: number) => {
      const w = work(spentMs)
      const run = lanes.run('the a', undefined, w.run)
      w.finish()
      await run
      return w.lanes[0]
    }
    expect(await runAt(49)).toBe('ordinary')
    expect(lanes.cost('the a')).toBeUndefined()
    expect(await runAt(71)).toBe('ordinary')
    for (const spentMs of [45, 30, 25]) {
      expect(await runAt(spentMs)).toBe('heavy')
      expect(lanes.cost('the a')).toBe(spentMs)
    }
    expect(await runAt(24)).toBe('heavy')
    expect(lanes.cost('the a')).toBeUndefined()
    expect(await runAt(45)).toBe('ordinary')
    expect(await runAt(10)).toBe('ordinary')
  })

  it('runs one heavy search at a time, a cheaper one before a costlier one that came first', async () => {
    const lanes = new SearchLanes()
    const learn = async (key: string, ms: number) => {
      const learned = work(ms)
      const run = lanes.run(key, undefined, learned.run)
      learned.finish()
      await run
    }
    await learn('running', 500)
    await learn('costly', 2000)
    await learn('cheap', 60)
    const order: string[] = []
    const asked = new Map<string, ReturnType<typeof work>>()
    const ask = (key: string, ms: number) => {
      const w = work(ms)
      asked.set(key, w)
      return lanes.run(key, undefined, (lane) => {
        order.push(key)
        return w.run(lane)
      })
    }
    const runs = [ask('running', 500), ask('costly', 2000), ask('cheap', 60)]
    await Bun.sleep(1)
    expect(order).toEqual(['running'])
    expect(lanes.queued).toBe(2)
    asked.get('running')?.finish()
    await runs[0]
    await Bun.sleep(1)
    expect(order).toEqual(['running', 'cheap'])
    asked.get('cheap')?.finish()
    asked.get('costly')?.finish()
    await Promise.all(runs)
    expect(order).toEqual(['running', 'cheap', 'costly'])
  })

  it('never runs a heavy search whose client went away while it waited', async () => {
    const lanes = new SearchLanes()
    const learned = work(300)
    const learning = lanes.run('heavy', undefined, learned.run)
    learned.finish()
    await learning
    const first = work(300)
    const running = lanes.run('heavy', undefined, first.run)
    const client = new AbortController()
    const left = work(300)
    const waiting = lanes.run('heavy', client.signal, left.run)
    client.abort()
    await expect(waiting).rejects.toMatchObject({ status: 499 })
    expect(lanes.queued).toBe(0)
    first.finish()
    await running
    expect(left.lanes).toEqual([])
  })
})
