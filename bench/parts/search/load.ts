/**
 * Loading the search bench's catalogue: its CSV (bench/parts/search/catalogue.ts), written once per
 * size and generator and kept in BENCH_DATA_DIR beside the million-book sets, then `catalogue
 * import --create` into a fresh SQLite file in the run's folder or a temporary PostgreSQL database
 * (dropped after, or by the run's clean-up on a failure or Ctrl-C), timed as
 * bench/parts/million/data.ts times its imports. On PostgreSQL, VACUUM ANALYZE follows, as
 * autovacuum would soon after a bulk load, timed apart.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { SQL } from 'bun'
import { createDatabase, dropDatabase } from '../../data/postgres-databases'
import { cli, type ImportRun, type MillionBackend, millionDataDir } from '../million/data'
import { CATALOGUE_SEED, writeCatalogueCsv } from './catalogue'

export type SearchBackend = MillionBackend

const say = (line: string) => process.stderr.write(`search: ${line}\n`)
const count = (n: number) => n.toLocaleString('en-US')

/** The generator's sources and seed: a change to either writes the CSVs again. */
const generator = (() => {
  const hasher = new Bun.CryptoHasher('sha256')
  for (const file of ['catalogue.ts', 'seeded-random.ts']) hasher.update(readFileSync(join(import.meta.dir, file)))
  return hasher.update(String(CATALOGUE_SEED)).digest('hex').slice(0, 12)
})()

/** The CSV of a catalogue of `books` books, written once per generator (older ones of that size removed). */
export async function catalogueCsv(books: number): Promise<string> {
  mkdirSync(millionDataDir, { recursive: true })
  const name = `search-${books}-${generator}.csv`
  const path = join(millionDataDir, name)
  if (existsSync(path)) return path
  for (const old of readdirSync(millionDataDir)) {
    if (old.startsWith(`search-${books}-`) && old !== name) rmSync(join(millionDataDir, old), { force: true })
  }
  const started = performance.now()
  const partial = `${path}.partial`
  await writeCatalogueCsv(partial, books)
  // Renamed once whole: an interrupted run leaves no short CSV under the kept name.
  await Bun.write(path, Bun.file(partial))
  rmSync(partial, { force: true })
  say(`wrote ${name} (${count(books)} books) in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  return path
}

export interface LoadedCatalogue {
  readonly backend: SearchBackend
  readonly books: number
  readonly url: string
  /** The SQLite file, where the backend is SQLite. */
  readonly file?: string
  readonly importRun: ImportRun
  /** PostgreSQL's VACUUM ANALYZE after the import, in seconds. */
  readonly vacuumSeconds?: number
  readonly remove: () => Promise<void>
}

const removeSqlite = (path: string) => {
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true })
}

/** A fresh database holding the catalogue of `books` books, imported by `catalogue import --create`. */
export async function loadCatalogue(backend: SearchBackend, books: number, dir: string): Promise<LoadedCatalogue> {
  const csv = await catalogueCsv(books)
  if (backend === 'sqlite') {
    const file = join(dir, `search-${books}.db`)
    removeSqlite(file)
    const url = `sqlite://${file}`
    say(`catalogue import of ${count(books)} books into ${file}`)
    const importRun = await cli(['import', '--create', '--database-url', url, csv])
    return { backend, books, url, file, importRun, remove: async () => removeSqlite(file) }
  }
  const database = await createDatabase()
  say(`catalogue import of ${count(books)} books into the temporary database ${database.name}`)
  try {
    const importRun = await cli(['import', '--create', '--database-url', database.url, csv])
    const started = performance.now()
    const sql = new SQL(database.url, { max: 1 })
    try {
      await sql.unsafe('VACUUM ANALYZE')
    } finally {
      await sql.close()
    }
    const vacuumSeconds = (performance.now() - started) / 1000
    return { backend, books, url: database.url, importRun, vacuumSeconds, remove: () => dropDatabase(database.name) }
  } catch (error) {
    await dropDatabase(database.name)
    throw error
  }
}
