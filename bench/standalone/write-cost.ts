/**
 * What SQLite itself spends on the bench's writes, with no server: a rename and a DELETE of a book
 * as the service runs them (prepared bun:sqlite statements, in batches that share one IMMEDIATE
 * transaction, each write in a savepoint, synchronous=NORMAL in WAL, a RESTART checkpoint every
 * CHECKPOINT_EVERY batches as the service's checkpoint thread makes about every 100 ms under load),
 * on a copy of the write runs' file, then on copies with parts of the schema dropped to see what
 * each costs: the books' full-text index (its triggers), the three name indexes that sorted lists
 * use, the triggers that count changes for the ETags. Every server of the comparison pays the first
 * row's cost on the same file; the rows below it are not the service's schema, only a measure.
 *
 *   bun bench/standalone/write-cost.ts [BATCH]     (BATCH: writes a transaction, 19 by default: the service's
 *                                        average under the comparison's 32 connections)
 *
 * Prints, for each schema and write, WAL frames and CPU µs (user + system, this thread) a write,
 * the checkpoints' share apart. Takes about a minute, most of it seeding.
 */
import { Database } from 'bun:sqlite'
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SEED, seed } from '../data/seed'
import { WRITE_SET } from '../parts/comparison/scenarios'

const BATCH = Number(Bun.argv[2] ?? 19)
const BATCHES = 300
/** About 1,700 writes between checkpoints: what 100 ms holds at the service's write rate. */
const CHECKPOINT_EVERY = 90

const variants: Record<string, readonly string[]> = {
  'as served': [],
  'without the full-text index': ['DROP TRIGGER books_search_update', 'DROP TRIGGER books_search_delete'],
  'without the name indexes': [
    'DROP INDEX books_name',
    'DROP INDEX books_author_name',
    'DROP INDEX books_book_collection_name',
  ],
  'without the change counters': ['DROP TRIGGER books_count_update', 'DROP TRIGGER books_count_delete'],
}

interface Cost {
  readonly frames: number
  readonly cpuUs: number
  readonly checkpointUs: number
}

function measure(path: string, drops: readonly string[], write: 'rename' | 'delete'): Cost {
  const db = new Database(path, { strict: true })
  try {
    db.run('PRAGMA journal_mode = WAL')
    db.run('PRAGMA synchronous = NORMAL')
    db.run('PRAGMA foreign_keys = ON')
    db.run('PRAGMA wal_autocheckpoint = 0')
    for (const sql of drops) db.run(sql)
    db.run('PRAGMA wal_checkpoint(TRUNCATE)')
    const rename = db.prepare(
      'UPDATE books SET name = ? WHERE id = ? RETURNING id, name, author_id, book_collection_id',
    )
    const remove = db.prepare('DELETE FROM books WHERE id = ?')
    const begin = db.prepare('BEGIN IMMEDIATE')
    const commit = db.prepare('COMMIT')
    const open = db.prepare('SAVEPOINT one_write')
    const release = db.prepare('RELEASE one_write')
    const checkpoint = db.prepare<{ log: number }, []>('PRAGMA wal_checkpoint(RESTART)')
    let frames = 0
    let checkpointUs = 0
    let next = SEED.books + 1
    const started = process.cpuUsage()
    for (let b = 1; b <= BATCHES; b++) {
      begin.run()
      for (let i = 0; i < BATCH; i++) {
        open.run()
        if (write === 'rename') rename.get(`Renamed book ${b}-${i}`, 1 + Math.floor(Math.random() * SEED.books))
        else remove.run(next++)
        release.run()
      }
      commit.run()
      if (b % CHECKPOINT_EVERY === 0) {
        const before = process.cpuUsage()
        frames += checkpoint.get()?.log ?? 0
        const spent = process.cpuUsage(before)
        checkpointUs += spent.user + spent.system
      }
    }
    const spent = process.cpuUsage(started)
    frames += db.prepare<{ log: number }, []>('PRAGMA wal_checkpoint(PASSIVE)').get()?.log ?? 0
    const writes = BATCH * BATCHES
    return {
      frames: frames / writes,
      cpuUs: (spent.user + spent.system - checkpointUs) / writes,
      checkpointUs: checkpointUs / writes,
    }
  } finally {
    db.close()
  }
}

const dir = mkdtempSync(join(tmpdir(), 'write-cost-'))
try {
  const pristine = join(dir, 'pristine.db')
  process.stderr.write(`seeding ${WRITE_SET.books.toLocaleString('en-US')} books...\n`)
  await seed(pristine, WRITE_SET)
  console.log(
    `SQLite alone, ${BATCH} writes a transaction, ${BATCHES} transactions, a checkpoint every ${CHECKPOINT_EVERY}:\n`,
  )
  console.log('| schema | write | WAL frames a write | CPU µs a write | checkpoint CPU µs a write |')
  console.log('| --- | --- | --: | --: | --: |')
  for (const [name, drops] of Object.entries(variants)) {
    for (const write of ['rename', 'delete'] as const) {
      const path = join(dir, 'copy.db')
      for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true })
      copyFileSync(pristine, path)
      const cost = measure(path, drops, write)
      console.log(
        `| ${name} | ${write} | ${cost.frames.toFixed(1)} | ${cost.cpuUs.toFixed(1)} | ${cost.checkpointUs.toFixed(1)} |`,
      )
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
