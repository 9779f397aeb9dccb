/**
 * The kept data sets of the million-book bench (bench/parts/million/million.ts): 10,000, 100,000 and 1,000,000
 * books in bench/data/import-data.ts's shape (1000 authors, 40 named collections), each as a SQLite file
 * and a PostgreSQL database, made once through `catalogue import` and kept between runs outside
 * the repository: in BENCH_DATA_DIR (default ~/.cache/catalogue-bench) the CSVs, the SQLite files
 * and their markers; on the bench's PostgreSQL server the databases `catalogue_bench_10k`, `_100k`
 * and `_1m`, their marker in the database's comment. A marker is written once a set is complete,
 * and names what made it: the number of books, a hash of the generator, and a hash of each
 * migration of the build that made or last migrated it. A set whose marker is missing or differs
 * in books or generator, or whose migrations are not the start of this build's (another branch's
 * schema), is made again; one this build only adds migrations to is migrated by `catalogue
 * migrate`, as the service would on start, and made again if that fails.
 */

import { Database } from 'bun:sqlite'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { SQL } from 'bun'
import { postgresMigrations } from '../../../src/store/postgres/migrations'
import { sqliteMigrations } from '../../../src/store/sqlite/migrations'
import { writeBooksCsv } from '../../data/import-data'
import { createDatabase, databaseUrl, dropDatabase, onAdmin } from '../../data/postgres-databases'
import { pinning } from '../../harness/measure'

export type MillionBackend = 'sqlite' | 'postgres'

export interface MillionSize {
  readonly label: '10k' | '100k' | '1m'
  readonly books: number
}

export const MILLION_SIZES: readonly MillionSize[] = [
  { label: '10k', books: 10_000 },
  { label: '100k', books: 100_000 },
  { label: '1m', books: 1_000_000 },
]

export const BACKEND_NAMES: Record<MillionBackend, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' }

export const millionDataDir = resolve(process.env.BENCH_DATA_DIR || join(homedir(), '.cache', 'catalogue-bench'))

const repoRoot = new URL('../../..', import.meta.url).pathname
const hash = (text: string) => new Bun.CryptoHasher('sha256').update(text).digest('hex').slice(0, 12)

/** The generator's own source: a change to it (another shape of data) makes every set again. */
const generator = hash(readFileSync(join(import.meta.dir, '..', '..', 'data', 'import-data.ts'), 'utf8'))

/** Each migration of this build, as `<version>:<hash>`. */
function buildMigrations(backend: MillionBackend): string[] {
  if (backend === 'postgres') return postgresMigrations.map((m) => `${m.version}:${hash(m.name + m.sql)}`)
  return sqliteMigrations.map((m) => `${m.version}:${hash(m.name + m.sql + (m.rewrite?.toString() ?? ''))}`)
}

interface Marker {
  readonly books: number
  readonly generator: string
  readonly migrations: readonly string[]
  readonly madeAt: string
}

/** What `catalogue import` took: wall time from spawn to exit, and the command's peak RSS. */
export interface ImportRun {
  readonly seconds: number
  readonly peakRssBytes: number
}

export interface KeptSet {
  readonly backend: MillionBackend
  readonly size: MillionSize
  readonly databaseUrl: string
  /** Where the report names it. */
  readonly where: string
  /** The import that made it, when this run made it. */
  readonly made?: ImportRun
}

const say = (line: string) => process.stderr.write(`million: ${line}\n`)
const count = (n: number) => n.toLocaleString('en-US')
const keptDatabase = (size: MillionSize) => `catalogue_bench_${size.label}`
const sqlitePath = (size: MillionSize) => join(millionDataDir, `sqlite-${size.label}.db`)
const sqliteMarker = (size: MillionSize) => join(millionDataDir, `sqlite-${size.label}.json`)

/** The CSV of a size, written once per generator (its hash in the name; older ones removed). */
export async function csvOf(size: MillionSize): Promise<string> {
  mkdirSync(millionDataDir, { recursive: true })
  const name = `books-${size.label}-${generator}.csv`
  const path = join(millionDataDir, name)
  if (existsSync(path)) return path
  for (const old of readdirSync(millionDataDir)) {
    if (old.startsWith(`books-${size.label}-`) && old !== name) rmSync(join(millionDataDir, old), { force: true })
  }
  const started = performance.now()
  const partial = `${path}.partial`
  await writeBooksCsv(partial, size.books)
  // Renamed once whole, so that an interrupted run leaves no short CSV under the kept name.
  await Bun.write(path, Bun.file(partial))
  rmSync(partial, { force: true })
  say(`wrote ${name} (${count(size.books)} books) in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  return path
}

/** Runs `bun src/cli.ts <args>` from the repository on every core; throws with its stderr if it fails. */
export async function cli(args: readonly string[]): Promise<ImportRun> {
  const started = performance.now()
  const child = Bun.spawn([...pinning.spread, 'bun', 'src/cli.ts', ...args], {
    cwd: repoRoot,
    env: { ...process.env, LOG_LEVEL: 'warn' },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  const seconds = (performance.now() - started) / 1000
  if (code !== 0) throw new Error(`catalogue ${args[0]} exited with ${code}: ${stderr.trim().slice(-600)}`)
  return { seconds, peakRssBytes: child.resourceUsage()?.maxRSS ?? 0 }
}

/** The books in the database at `url`, counted after an import to know it did the whole work. */
async function booksIn(url: string): Promise<number> {
  if (url.startsWith('sqlite://')) {
    const db = new Database(url.slice('sqlite://'.length), { readonly: true })
    try {
      return db.query<{ n: number }, []>('SELECT count(*) AS n FROM books').get()?.n ?? 0
    } finally {
      db.close()
    }
  }
  const sql = new SQL(url, { max: 1 })
  try {
    const [row] = await sql`SELECT count(*)::int AS n FROM books`
    return Number(row?.n ?? 0)
  } finally {
    await sql.close()
  }
}

/** `catalogue import --create` of a size's CSV into the database at `url`, then a check that every book is there. */
export async function importInto(url: string, size: MillionSize): Promise<ImportRun> {
  const run = await cli(['import', '--create', '--database-url', url, await csvOf(size)])
  const books = await booksIn(url)
  if (books !== size.books) throw new Error(`catalogue import left ${books} books of ${size.books} in ${url}`)
  return run
}

const removeSqlite = (path: string) => {
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true })
}

async function readMarker(backend: MillionBackend, size: MillionSize): Promise<Marker | undefined> {
  try {
    if (backend === 'sqlite') {
      if (!existsSync(sqlitePath(size))) return undefined
      return JSON.parse(readFileSync(sqliteMarker(size), 'utf8')) as Marker
    }
    const name = keptDatabase(size)
    const [row] = await onAdmin(
      (admin) => admin`SELECT shobj_description(oid, 'pg_database') AS marker FROM pg_database WHERE datname = ${name}`,
    )
    return row?.marker ? (JSON.parse(row.marker) as Marker) : undefined
  } catch {
    return undefined
  }
}

async function writeMarker(backend: MillionBackend, size: MillionSize, marker: Marker): Promise<void> {
  const text = JSON.stringify(marker)
  if (backend === 'sqlite') writeFileSync(sqliteMarker(size), text)
  else
    await onAdmin((admin) =>
      admin.unsafe(`COMMENT ON DATABASE ${keptDatabase(size)} IS '${text.replaceAll("'", "''")}'`),
    )
}

const keptUrl = (backend: MillionBackend, size: MillionSize) =>
  backend === 'sqlite' ? `sqlite://${sqlitePath(size)}` : databaseUrl(keptDatabase(size))

const keptWhere = (backend: MillionBackend, size: MillionSize) =>
  backend === 'sqlite' ? sqlitePath(size) : `database ${keptDatabase(size)}`

/** Makes a set from nothing: removes what is there, imports the CSV, then writes the marker. */
export async function makeSet(backend: MillionBackend, size: MillionSize, why: string): Promise<KeptSet> {
  const url = keptUrl(backend, size)
  say(`making the ${count(size.books)}-book set on ${BACKEND_NAMES[backend]} (${keptWhere(backend, size)}): ${why}`)
  await csvOf(size)
  if (backend === 'sqlite') {
    rmSync(sqliteMarker(size), { force: true })
    removeSqlite(sqlitePath(size))
  } else {
    const name = keptDatabase(size)
    await onAdmin(async (admin) => {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await admin.unsafe(`CREATE DATABASE ${name}`)
    })
  }
  const made = await importInto(url, size)
  say(`  catalogue import of ${count(size.books)} books took ${made.seconds.toFixed(1)} s`)
  if (backend === 'postgres') {
    // What autovacuum does to a table soon after a bulk load: statistics and the visibility map,
    // so that no run measures a table it has not got to yet.
    const started = performance.now()
    const sql = new SQL(url, { max: 1 })
    try {
      await sql.unsafe('VACUUM ANALYZE')
    } finally {
      await sql.close()
    }
    say(`  VACUUM ANALYZE took ${((performance.now() - started) / 1000).toFixed(1)} s`)
  }
  await writeMarker(backend, size, {
    books: size.books,
    generator,
    migrations: buildMigrations(backend),
    madeAt: new Date().toISOString(),
  })
  return { backend, size, databaseUrl: url, where: keptWhere(backend, size), made }
}

/** Why a marker does not describe a set this build can use as it is or by migrating; undefined if it can. */
function staleness(marker: Marker | undefined, backend: MillionBackend, size: MillionSize): string | undefined {
  if (marker === undefined) return 'none kept (or not complete)'
  if (marker.books !== size.books) return `the kept one has ${count(marker.books)} books`
  if (marker.generator !== generator) return 'bench/data/import-data.ts changed'
  const build = buildMigrations(backend)
  if (marker.migrations.some((m, i) => build[i] !== m)) return "its schema is not this build's (other migrations)"
  return undefined
}

/**
 * The kept set of a size on a backend, made or migrated as its marker says; `catalogue migrate`
 * runs on it each time, which also checks its schema against the descriptions as the service does.
 */
export async function keptSet(backend: MillionBackend, size: MillionSize): Promise<KeptSet> {
  const marker = await readMarker(backend, size)
  const why = staleness(marker, backend, size)
  if (why !== undefined || marker === undefined) return makeSet(backend, size, why ?? 'no marker')
  const url = keptUrl(backend, size)
  const build = buildMigrations(backend)
  try {
    const migrated = await cli(['migrate', '--database-url', url])
    if (build.length > marker.migrations.length) {
      say(
        `migrated the ${count(size.books)}-book set on ${BACKEND_NAMES[backend]} by ${build.length - marker.migrations.length} migration(s) in ${migrated.seconds.toFixed(1)} s`,
      )
      await writeMarker(backend, size, { ...marker, migrations: build })
    }
  } catch (error) {
    return makeSet(backend, size, `catalogue migrate failed on it (${(error as Error).message})`)
  }
  say(`using the kept ${count(size.books)}-book set on ${BACKEND_NAMES[backend]} (${keptWhere(backend, size)})`)
  return { backend, size, databaseUrl: url, where: keptWhere(backend, size) }
}

/** `catalogue import` of a size into a fresh scratch database (a file in `dir`, or a database), removed after. */
export async function scratchImport(backend: MillionBackend, size: MillionSize, dir: string): Promise<ImportRun> {
  if (backend === 'sqlite') {
    const path = join(dir, `import-${size.label}.db`)
    removeSqlite(path)
    try {
      return await importInto(`sqlite://${path}`, size)
    } finally {
      removeSqlite(path)
    }
  }
  const scratch = await createDatabase()
  try {
    return await importInto(scratch.url, size)
  } finally {
    await dropDatabase(scratch.name)
  }
}
