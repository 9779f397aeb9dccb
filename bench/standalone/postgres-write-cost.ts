/**
 * What PostgreSQL spends on a book's write in the service's schema against a plain table (issue
 * 34, point 7): raw Bun.SQL clients, no service, write books with the service's own statements
 * (src/store/postgres/write-statements.ts: an INSERT … SELECT … WHERE the author exists, an UPDATE
 * of the name, a DELETE, each … RETURNING and its own transaction) into
 *
 * - a plain table `books(id, name, author_id, book_collection_id)` with its foreign keys and a GIN
 *   index on to_tsvector('simple', name) (the reference of the ratios);
 * - the service's schema as its migrations make it: before issue 34 (PostgreSQL's migration 11),
 *   with the search vocabularies (12), with the cheaper writes (13), with a write's triggers merged
 *   (14, all of them), and the last with parts taken away (the vocabulary's triggers, the feed's,
 *   all triggers);
 * - with --detail, the released schema with one part taken away or done another way at a time
 *   (the feed's trigger, the search_totals triggers, the data_version trigger, the stored search
 *   words, the sort indexes, ...).
 *
 * Each schema is a copy of a template database seeded with BOOKS books; the schemas take turns,
 * in a new order each round, each writing for SECONDS per kind of write after a CHECKPOINT.
 * Prints, per schema, the medians over the rounds of creates, renames and deletes a second, their
 * mean, its ratio to the plain table's, and WAL bytes a write. The server is BENCH_POSTGRES_URL,
 * else POSTGRES_TEST_URL, else postgres://postgres@127.0.0.1:5432/test.
 *
 *   bun bench/standalone/postgres-write-cost.ts [--rounds 3] [--seconds 3] [--clients 8]
 *     [--books 100000] [--only <substring>,…] [--detail] [--async-commit]
 *
 * With --clients 1 --async-commit, the CPU a write costs the database is measured alone, with no
 * wait for the disk and no other writer: the steadiest figure on a machine shared with other work.
 */
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { SQL } from 'bun'
import { migratePostgres } from '../../src/store/postgres/migrate'
import { postgresMigrations } from '../../src/store/postgres/migrations'
import { createDatabase, dropDatabases } from '../data/postgres-databases'
import { LARGE } from '../data/seed'
import { median } from '../harness/statistics'
import { type Base, plainSchemaSql, seedBooks, type Variant, variants } from '../parts/postgres-write-cost/schemas'

const { values: options } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '3' },
    clients: { type: 'string', default: '8' },
    books: { type: 'string', default: '100000' },
    only: { type: 'string' },
    'async-commit': { type: 'boolean', default: false },
    detail: { type: 'boolean', default: false },
  },
})
const ROUNDS = Number(options.rounds)
const MEASURE_MS = Number(options.seconds) * 1000
const CLIENTS = Number(options.clients)
const BOOKS = Number(options.books)
/** Renames pick one of the first fifth of the books; deletes take the rest in order. */
const RENAMED = Math.floor(BOOKS / 5)
const WARMUP_MS = 300
/** --async-commit: synchronous_commit off, so that a write's CPU is measured without waiting for the disk. */
const connection: Record<string, string> = options['async-commit'] ? { synchronous_commit: 'off' } : {}

const OPS = ['create', 'rename', 'delete'] as const
type Op = (typeof OPS)[number]

const statements: Record<Op, string> = {
  create: `INSERT INTO "books" ("name", "author_id") SELECT $1::text, $2::bigint
    WHERE EXISTS (SELECT 1 FROM "authors" WHERE "id" = $3::bigint)
    RETURNING "id", "name", "author_id", "book_collection_id"`,
  rename: `UPDATE "books" SET "name" = $1::text WHERE "id" = $2::bigint
    RETURNING "id", "name", "author_id", "book_collection_id"`,
  delete: 'DELETE FROM "books" WHERE "id" = $1::bigint RETURNING "id"',
}

const random = (max: number) => 1 + Math.floor(Math.random() * max)
/** A title of the large set's words (a search finds it as it finds the seeded ones). */
const title = () => LARGE.bookName(random(1_000_000))

interface Copy {
  readonly variant: Variant
  readonly url: string
  /**
   * The books deletes may take, the last first: the seeded ones past the renamed, those the creates
   * made, and those added between turns when fewer than STOCK were left.
   */
  readonly stock: number[]
}

/** Books a delete turn may take: more than the fastest schema deletes in a turn. */
const STOCK = 100_000

interface Turn {
  readonly perSecond: Record<Op, number>
  readonly walPerWrite: number
  /** CPU time (user + system) of the database's backends serving the clients, µs a write. */
  readonly cpuPerWrite: Record<Op, number>
}

const TICKS_PER_SECOND = 100

/** CPU seconds (user + system) a process has spent, from /proc (the server runs on this machine). */
function cpuSecondsOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND
  } catch {
    return 0
  }
}

/** The backends of the clients' connections to the copy (the pool's, opened by the warm-up). */
async function backends(sql: SQL): Promise<number[]> {
  const rows = await sql.unsafe(
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
  )
  return (rows as { pid: number }[]).map((r) => Number(r.pid))
}

const cpuOf = (pids: readonly number[]) => pids.reduce((sum, pid) => sum + cpuSecondsOf(pid), 0)

const selected = options.only
  ? variants.filter((v, i) => i === 0 || options.only?.split(',').some((part) => v.name.includes(part)))
  : variants.filter((v) => options.detail || !v.detail)

async function template(base: Base): Promise<string> {
  const database = await createDatabase()
  const sql = new SQL(database.url, { max: 1 })
  try {
    if (base.kind === 'plain') {
      for (const statement of plainSchemaSql) await sql.unsafe(statement)
    } else {
      const migrations = postgresMigrations.filter((m) => base.version === undefined || m.version <= base.version)
      await migratePostgres(sql, migrations)
    }
    await seedBooks(sql, BOOKS)
  } finally {
    await sql.close()
  }
  return database.name
}

async function copyOf(variant: Variant, templates: Map<string, string>): Promise<Copy> {
  const key = JSON.stringify(variant.base)
  let name = templates.get(key)
  if (!name) {
    name = await template(variant.base)
    templates.set(key, name)
  }
  const database = await createDatabase(name)
  const sql = new SQL(database.url, { max: 1 })
  try {
    for (const statement of variant.sql) await sql.unsafe(statement)
    await sql.unsafe('VACUUM ANALYZE')
  } finally {
    await sql.close()
  }
  const stock = Array.from({ length: BOOKS - RENAMED }, (_, i) => BOOKS - i)
  return { variant, url: database.url, stock }
}

/** CLIENTS loops, each one write at a time, for `ms`; the writes done. */
async function drive(sql: SQL, op: Op, copy: Copy, ms: number): Promise<number> {
  const end = performance.now() + ms
  let writes = 0
  const client = async () => {
    while (performance.now() < end) {
      let rows: { id: string }[]
      if (op === 'create') {
        const author = random(LARGE.authors)
        rows = await sql.unsafe(statements.create, [title(), author, author])
        if (rows[0]) copy.stock.push(Number(rows[0].id))
      } else if (op === 'rename') {
        rows = await sql.unsafe(statements.rename, [title(), random(RENAMED)])
      } else {
        rows = await sql.unsafe(statements.delete, [copy.stock.pop()])
      }
      if (rows.length !== 1) throw new Error(`${copy.variant.name}: a ${op} wrote no row (books used up?)`)
      writes++
    }
  }
  await Promise.all(Array.from({ length: CLIENTS }, client))
  return writes
}

/** Books added (not measured) until deletes have STOCK to take. */
async function restock(admin: SQL, copy: Copy): Promise<void> {
  const wanted = STOCK - copy.stock.length
  if (wanted <= 0) return
  const rows = await admin.unsafe(
    `INSERT INTO books (name, author_id) SELECT 'Stock ' || n, 1 + n % ${LARGE.authors}
      FROM generate_series(1, $1::int) AS n RETURNING id`,
    [wanted],
  )
  for (const row of rows as { id: string }[]) copy.stock.unshift(Number(row.id))
}

async function turn(copy: Copy): Promise<Turn> {
  const sql = new SQL(copy.url, { max: CLIENTS, connection })
  const admin = new SQL(copy.url, { max: 1 })
  try {
    const perSecond = {} as Record<Op, number>
    const cpuPerWrite = {} as Record<Op, number>
    let writes = 0
    let wal = 0
    await restock(admin, copy)
    for (const op of OPS) {
      await drive(sql, op, copy, WARMUP_MS)
      await admin.unsafe('CHECKPOINT')
      const [before] = await admin.unsafe('SELECT pg_current_wal_lsn() AS lsn')
      const pids = await backends(admin)
      const cpuBefore = cpuOf(pids)
      const started = performance.now()
      const done = await drive(sql, op, copy, MEASURE_MS)
      perSecond[op] = done / ((performance.now() - started) / 1000)
      cpuPerWrite[op] = ((cpuOf(pids) - cpuBefore) * 1e6) / done
      const [after] = await admin.unsafe('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::float8 AS bytes', [
        before.lsn,
      ])
      wal += Number(after.bytes)
      writes += done
    }
    return { perSecond, walPerWrite: wal / writes, cpuPerWrite }
  } finally {
    await Promise.all([sql.close(), admin.close()])
  }
}

const mean = (t: Turn) => OPS.reduce((sum, op) => sum + t.perSecond[op], 0) / OPS.length

async function main(): Promise<void> {
  const templates = new Map<string, string>()
  const copies: Copy[] = []
  for (const variant of selected) {
    copies.push(await copyOf(variant, templates))
    process.stderr.write(`ready: ${variant.name}\n`)
  }
  const turns = new Map<Copy, Turn[]>(copies.map((c) => [c, []]))
  for (let round = 1; round <= ROUNDS; round++) {
    // A new order each round: a slow spell of the machine falls on other schemas each time.
    const order = copies.map((_, i) => copies[(i + round - 1) % copies.length] as Copy)
    if (round % 2 === 0) order.reverse()
    for (const copy of order) {
      const t = await turn(copy)
      turns.get(copy)?.push(t)
      const figures = OPS.map((op) => `${op} ${Math.round(t.perSecond[op])}/s ${Math.round(t.cpuPerWrite[op])} µs`)
      process.stderr.write(`round ${round}: ${copy.variant.name}: ${figures.join(', ')}\n`)
    }
  }
  const plainTurns = turns.get(copies[0] as Copy) ?? []
  const cpuMean = (t: Turn) => OPS.reduce((sum, op) => sum + t.cpuPerWrite[op], 0) / OPS.length
  const plainCpu = median(plainTurns.map(cpuMean))
  const lines = [
    `${BOOKS.toLocaleString('en-US')} books, ${CLIENTS} clients, ${ROUNDS} rounds of ${MEASURE_MS / 1000} s a write; medians over the rounds.`,
    "ratio: the mean of the three rates over the plain table's in the same round (median, min-max);",
    "CPU: the backends' CPU time a write; CPU ratio: the plain table's mean CPU a write over this schema's.",
    '',
    '| schema | create/s | rename/s | delete/s | ratio to plain | CPU µs create / rename / delete | CPU ratio | WAL B/write |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const copy of copies) {
    const all = turns.get(copy) ?? []
    const rate = (op: Op) => Math.round(median(all.map((t) => t.perSecond[op])))
    const cpu = (op: Op) => Math.round(median(all.map((t) => t.cpuPerWrite[op])))
    const ratios = all.map((t, round) => mean(t) / mean(plainTurns[round] as Turn))
    const spread = `${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}`
    const wal = Math.round(median(all.map((t) => t.walPerWrite)))
    const cpuRatio = plainCpu / median(all.map(cpuMean))
    lines.push(
      `| ${copy.variant.name} | ${rate('create')} | ${rate('rename')} | ${rate('delete')} | ${median(ratios).toFixed(2)} (${spread}) | ${cpu('create')} / ${cpu('rename')} / ${cpu('delete')} | ${cpuRatio.toFixed(2)} | ${wal} |`,
    )
  }
  console.log(lines.join('\n'))
}

process.on('SIGINT', () => {
  void dropDatabases().finally(() => process.exit(130))
})
try {
  await main()
} finally {
  await dropDatabases()
}
