/**
 * Writes of the same rows at once on PostgreSQL: two instances of a tree's service on a new
 * database, 20 books by one of two authors, and writer processes (test/support/contention-writers.ts,
 * this tree's) for 15 s. `moves`: 4 clients (2 processes × 2) moving the 20 books whole between the
 * two authors (POST /authors/{id}/relationships/books); `mixed`: 16 clients (4 × 4) doing that,
 * PATCHes of books' authors and collections, collections' members added, removed and replaced,
 * collections deleted, and atomic batches of these.
 *
 *   bun bench/standalone/write-contention.ts <moves|mixed> [TREE] [RUNS]
 *
 * TREE: the service's tree (this one by default; another checkout with its node_modules, for the
 * build before a change). Prints, for each run, the writes answered by status, the 5xx among them,
 * the deadlocks PostgreSQL detected in the database (pg_stat_database) and the answers' times. The
 * server is POSTGRES_TEST_URL, else postgres://postgres@127.0.0.1:5432/test.
 */
import { join, resolve } from 'node:path'
import { SQL } from 'bun'
import type { Answered, Plan } from '../../test/support/contention-writers'
import { type RunningServer, startServer, stopServer, waitUntilListening } from '../harness/servers'

const mix = Bun.argv[2]
if (mix !== 'moves' && mix !== 'mixed') throw new Error('usage: write-contention.ts <moves|mixed> [tree] [runs]')
const tree = resolve(Bun.argv[3] ?? join(import.meta.dir, '..', '..'))
const runs = Number(Bun.argv[4] ?? 1)
const server = process.env.POSTGRES_TEST_URL || 'postgres://postgres@127.0.0.1:5432/test'
const [processes, clients] = mix === 'moves' ? [2, 2] : [4, 4]
const LOAD_MS = 15_000
const JSON_API = 'application/vnd.api+json'

async function created(api: string, path: string, data: unknown): Promise<string> {
  const response = await fetch(`${api}${path}`, {
    method: 'POST',
    headers: { accept: JSON_API, 'content-type': JSON_API },
    body: JSON.stringify({ data }),
  })
  if (response.status !== 201) throw new Error(`${path}: ${response.status} ${await response.text()}`)
  return ((await response.json()) as { data: { id: string } }).data.id
}

async function writers(plan: Plan): Promise<Answered[]> {
  const script = join(import.meta.dir, '..', '..', 'test', 'support', 'contention-writers.ts')
  const child = Bun.spawn([process.execPath, script, JSON.stringify(plan)], { stdout: 'pipe', stderr: 'inherit' })
  const out = await new Response(child.stdout).text()
  if ((await child.exited) !== 0) throw new Error('a writer process failed')
  return JSON.parse(out) as Answered[]
}

async function run(index: number): Promise<string> {
  const admin = new SQL(server, { max: 1 })
  const name = `write_contention_${process.pid}_${index}`
  await admin.unsafe(`CREATE DATABASE ${name}`)
  const url = new URL(server)
  url.pathname = `/${name}`
  const instances: RunningServer[] = []
  try {
    for (const n of [1, 2]) {
      const instance = startServer(`instance ${n}`, join(tree, 'src', 'cli.ts'), {
        HOST: '127.0.0.1',
        DATABASE_URL: url.toString(),
      })
      instances.push(instance)
      await waitUntilListening(instance)
    }
    const apis = instances.map((instance) => `${instance.origin}/api/v1`)
    const api = apis[0] as string
    const authors = [
      await created(api, '/authors', { type: 'authors', attributes: { name: 'First' } }),
      await created(api, '/authors', { type: 'authors', attributes: { name: 'Second' } }),
    ]
    const books: string[] = []
    for (let n = 0; n < 20; n++) {
      books.push(
        await created(api, '/books', {
          type: 'books',
          attributes: { name: `Book ${n}`, author_id: Number(authors[0]) },
        }),
      )
    }
    const deadlocks = async () =>
      Number((await admin`SELECT deadlocks FROM pg_stat_database WHERE datname = ${name}`)[0]?.deadlocks ?? 0)
    const before = await deadlocks()
    const answered = (
      await Promise.all(
        Array.from({ length: processes }, (_, p) =>
          writers({
            apis,
            authors,
            books,
            clients,
            ms: LOAD_MS,
            seed: index * 100 + p + 1,
            movesOnly: mix === 'moves',
          }),
        ),
      )
    ).flat()
    // The instances stopped, their connections end and PostgreSQL's statistics of them are complete.
    for (const instance of instances.splice(0)) await stopServer(instance)
    for (let waited = 0; waited < 10_000; waited += 100) {
      const [others] = await admin`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ${name}`
      if (others.n === 0) break
      await Bun.sleep(100)
    }
    const detected = (await deadlocks()) - before
    const statuses = new Map<number, number>()
    for (const write of answered) statuses.set(write.status, (statuses.get(write.status) ?? 0) + 1)
    const times = answered.map((write) => write.answered - write.sent).sort((a, b) => a - b)
    const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]
    const byStatus = [...statuses].sort(([a], [b]) => a - b).map(([status, n]) => `${status}: ${n}`)
    const failed = answered.filter((write) => write.status >= 500).length
    return `run ${index}: ${answered.length} writes (${byStatus.join(', ')}), 5xx ${failed}, deadlocks ${detected}, ms p50 ${at(0.5)} p99 ${at(0.99)} max ${times.at(-1)}`
  } finally {
    for (const instance of instances) await stopServer(instance)
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.close()
  }
}

console.log(`${mix}: ${processes} writer processes × ${clients} clients, ${LOAD_MS / 1000} s, tree ${tree}`)
for (let index = 1; index <= runs; index++) console.log(await run(index))
