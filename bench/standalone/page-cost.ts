/**
 * What a page of 20 and its meta.total cost, one request at a time (docs/pagination.md, "What a
 * page and its meta.total cost"): `bun bench/standalone/page-cost.ts DATABASE_URL [REQUESTS]` starts the
 * service of the current checkout (src/cli.ts, so run it from another checkout to measure that
 * build) over the database, then times each request alone, REQUESTS times (41 unless given) after
 * five to warm up, and prints the median, the quartiles and the answer's meta.total. `PATHS`
 * (paths separated by spaces) replaces the requests below. The database is migrated by the service
 * as it starts: measure a copy (`cp`, or `CREATE DATABASE mine TEMPLATE ...`).
 */
import { freePort } from '../harness/servers'

const [url, requests = '41'] = Bun.argv.slice(2)
if (!url) {
  console.error('usage: bun bench/standalone/page-cost.ts DATABASE_URL [REQUESTS]')
  process.exit(2)
}
const runs = Number(requests)

const paths = process.env.PATHS?.split(' ') ?? [
  '/api/v1/books/1',
  '/api/v1/books?page[size]=20',
  '/api/v1/books?page[number]=3&page[size]=20&sort=-name',
  '/api/v1/authors?page[size]=20',
  '/api/v1/books?filter[author]=7&page[size]=20',
  '/api/v1/books?author_id=7&page[size]=20',
  '/api/v1/authors/7/books?page[size]=20',
  '/api/v1/books?filter[book_collection]=null&page[size]=20',
  '/api/v1/books?filter[book_collection]=3&page[size]=20',
  '/api/v1/books?filter[author]=7&filter[book_collection]=3&page[size]=20',
  '/api/v1/books?filter[book_collection]=1,2,null&page[size]=20',
]

const port = freePort()
const service = Bun.spawn(
  ['bun', '--no-env-file', 'src/cli.ts', '--port', String(port), '--host', '127.0.0.1', '--log-level', 'warn'],
  { env: { ...process.env, DATABASE_URL: url }, stdout: 'inherit', stderr: 'inherit' },
)
const base = `http://127.0.0.1:${port}`
try {
  for (let tries = 0; ; tries++) {
    const up = await fetch(`${base}/health`).then(
      (answer) => answer.ok,
      () => false,
    )
    if (up) break
    if (tries > 600) throw new Error('the service did not start within a minute')
    await Bun.sleep(100)
  }
  const at = (sorted: number[], share: number) => (sorted[Math.floor(sorted.length * share)] ?? 0).toFixed(2)
  for (const path of paths) {
    for (let i = 0; i < 5; i++) await (await fetch(base + path)).text()
    const times: number[] = []
    let total: unknown = '-'
    for (let i = 0; i < runs; i++) {
      const started = performance.now()
      const answer = await fetch(base + path)
      const body = await answer.text()
      times.push(performance.now() - started)
      if (i === 0)
        total = answer.ok ? ((JSON.parse(body) as { meta?: { total?: number } }).meta?.total ?? '-') : answer.status
    }
    times.sort((a, b) => a - b)
    console.log(
      `${at(times, 0.5).padStart(8)} ms  (quartiles ${at(times, 0.25)}-${at(times, 0.75)})  total ${total}  ${path}`,
    )
  }
} finally {
  service.kill()
  await service.exited
}
