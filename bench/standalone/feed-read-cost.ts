/**
 * What a read of the PostgreSQL change feed costs, this tree beside another (the build before a
 * change to the feed, checked out elsewhere with its node_modules): for each tree, a database of
 * its own with 200 authors created through its store, then 5 rounds of 1,000 reads of a follower
 * that is caught up (the newest position: what a live stream's hub and a polling client send) and
 * 200 reads of the first page of 100 changes. Runs the trees in turn, `RUNS` times (3 by default).
 *
 *   bun bench/standalone/feed-read-cost.ts ../before [RUNS]
 *
 * Prints µs a read for each round and page; the database server is POSTGRES_TEST_URL, else
 * postgres://postgres@127.0.0.1:5432/test (its user makes and drops the databases).
 */
import { resolve } from 'node:path'
import { SQL } from 'bun'

const other = Bun.argv[2]
if (!other) throw new Error('usage: bun bench/standalone/feed-read-cost.ts <other tree> [runs]')
const runs = Number(Bun.argv[3] ?? 3)
const server = process.env.POSTGRES_TEST_URL || 'postgres://postgres@127.0.0.1:5432/test'

async function measure(root: string): Promise<string> {
  const { resources } = await import(`${root}/src/resources/registry`)
  const { PostgresStore } = await import(`${root}/src/store/postgres/postgres-store`)
  const admin = new SQL(server, { max: 1 })
  const name = `feed_read_cost_${process.pid}_${Date.now()}`
  await admin.unsafe(`CREATE DATABASE ${name}`)
  const url = new URL(server)
  url.pathname = `/${name}`
  const store = await PostgresStore.open(url.toString(), resources, { poolSize: 2, listenUrl: null })
  try {
    const authors = resources.get('authors')
    for (let i = 0; i < 200; i++) await store.create(authors, { attributes: { name: `Author ${i}` }, toOne: {} })
    const latest = await store.changes.latest()
    const rounds: number[] = []
    for (let round = 0; round < 5; round++) {
      const started = performance.now()
      for (let i = 0; i < 1000; i++) await store.changes.read({ after: latest, types: null, size: 100 })
      rounds.push(Math.round(performance.now() - started))
    }
    const started = performance.now()
    for (let i = 0; i < 200; i++) await store.changes.read({ after: null, types: null, size: 100 })
    const page = Math.round(((performance.now() - started) / 200) * 1000)
    return `caught-up read µs: ${rounds.join(' ')}; page of 100 µs: ${page}`
  } finally {
    await store.close()
    await admin.unsafe(`DROP DATABASE ${name} WITH (FORCE)`)
    await admin.close()
  }
}

const trees = [resolve(import.meta.dir, '..', '..'), resolve(other)]
for (let run = 0; run < runs; run++) {
  for (const tree of trees) console.log(`${tree}: ${await measure(tree)}`)
}
