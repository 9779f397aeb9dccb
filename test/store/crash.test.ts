import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { type CrashRound, CrashRun, type Killed } from '../support/crash'
import type { KnownRecord } from '../support/crash-ledger'
import { removeTempDirs, stopChildren } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/*
 * The real service (`bun src/cli.ts`) SIGKILLed at random moments under concurrent writers, and
 * started again on the same file each time. bench/parts/crash.ts runs the same harness for many more
 * rounds (`bun run bench -- crash`).
 */

const KILLS = 3
const WRITERS = 8
/** Longer than the rounds need (about 3 s each here), shorter than a hung service would take. */
const RUN_TIMEOUT_MS = 90_000

afterAll(async () => {
  await stopChildren()
  removeTempDirs()
})

// At DURABILITY=normal (synchronous=NORMAL in WAL) a commit is answered once it is in the WAL file,
// not yet on disk. A SIGKILL ends the process, not the machine: the operating system still writes
// what the file holds, so nothing acknowledged may be lost at either setting.
describe.each([
  ['', {}],
  [' (DURABILITY=normal)', { DURABILITY: 'normal' }],
])('the service SIGKILLed under concurrent writers, then restarted on the same file%s', (_, env) => {
  const rounds: CrashRound[] = []
  const run = new CrashRun({ writers: WRITERS, writeMs: [1_000, 1_500], env })

  beforeAll(async () => {
    await run.start()
    for (let i = 0; i < KILLS; i++) rounds.push(await run.round())
    await run.stop()
  }, RUN_TIMEOUT_MS)

  it('acknowledges writes in every round and answers none of them with an error', () => {
    expect(rounds.map((r) => r.unexpected)).toEqual(rounds.map(() => []))
    for (const round of rounds) expect(round.acknowledged).toBeGreaterThan(0)
  })

  it('keeps every acknowledged create, rename and delete', () => {
    expect(rounds.flatMap((r) => r.check.lost)).toEqual([])
  })

  it('stores an atomic batch whole or not at all, acknowledged or in flight at the kill', () => {
    expect(rounds.flatMap((r) => r.check.halfApplied)).toEqual([])
  })

  it('stores nothing but what the writers sent', () => {
    expect(rounds.flatMap((r) => r.check.unaccounted)).toEqual([])
  })

  it('leaves a file that passes PRAGMA integrity_check and foreign_key_check', () => {
    expect(rounds.map((r) => [r.check.integrity, r.check.foreignKeyViolations])).toEqual(rounds.map(() => ['ok', 0]))
  })

  it('finds records by the words of their current names only, and counts as the lists do', () => {
    expect(rounds.flatMap((r) => r.check.searchMisses)).toEqual([])
    expect(rounds.flatMap((r) => r.check.totalMismatches)).toEqual([])
    for (const round of rounds) expect(round.check.searched).toBeGreaterThanOrEqual(50)
  })
})

/** Runs SQL on the killed service's file, as a fault the harness must notice. */
function tamper(path: string, change: (db: Database) => void): void {
  const db = new Database(path)
  try {
    change(db)
  } finally {
    db.close()
  }
}

/** A record an acknowledged write made that no write in flight at the kill touches. */
function settledRecord(run: CrashRun, killed: Killed, pick: (record: KnownRecord) => boolean): KnownRecord {
  const touched = new Set(killed.pending.flatMap((write) => ('record' in write ? [write.record] : [])))
  const found = run.ledger.live().find((record) => !touched.has(record) && pick(record))
  if (!found) throw new Error('the writers made no such record')
  return found
}

describe('the crash check', () => {
  it(
    'reports a lost record, an undone rename, a record nobody sent and a batch left in part',
    async () => {
      const run = new CrashRun({ writers: 4, writeMs: [500, 500] })
      await run.start()
      const killed = await run.writeAndKill()
      const author = settledRecord(run, killed, (r) => r.type === 'authors' && r.batch === null)
      const batchBook = settledRecord(run, killed, (r) => r.type === 'books' && r.batch !== null)
      // The check brings the ledger in line with what it finds: keep the acknowledged names.
      const [authorName, bookName] = [author.name, batchBook.name]
      tamper(run.dbPath, (db) => {
        db.run('UPDATE authors SET name = ? WHERE id = ?', ['Author tampered', author.id])
        db.run('DELETE FROM books WHERE id = ?', [batchBook.id])
        db.run("INSERT INTO authors (name) VALUES ('Author stray')")
      })
      const check = await run.restartAndCheck(killed)
      await run.stop()
      expect(check.lost).toContainEqual(
        expect.stringContaining(`authors ${author.id} "${authorName}" is named "Author tampered"`),
      )
      expect(check.lost).toContainEqual(expect.stringContaining(`books ${batchBook.id} "${bookName}" is missing`))
      expect(check.unaccounted).toContainEqual(expect.stringMatching(/^authors \d+ "Author stray" was never sent$/))
      expect(check.halfApplied).toContainEqual(
        expect.stringContaining(`atomic batch ${batchBook.batch}: 1 of its records lost`),
      )
    },
    RUN_TIMEOUT_MS,
  )

  it(
    'reports a rename the search index did not take',
    async () => {
      const run = new CrashRun({ writers: 4, writeMs: [500, 500] })
      await run.start()
      const killed = await run.writeAndKill()
      const book = settledRecord(run, killed, (r) => r.type === 'books')
      const formerName = book.name
      const name = run.ledger.newName('books')
      // Rename the row with the books table's triggers out of the way, so the index keeps the old title.
      tamper(run.dbPath, (db) => {
        const triggers = db
          .query<{ name: string; sql: string }, []>(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'books'",
          )
          .all()
        for (const trigger of triggers) db.run(`DROP TRIGGER "${trigger.name}"`)
        db.run('UPDATE books SET name = ? WHERE id = ?', [name, book.id])
        for (const trigger of triggers) db.run(trigger.sql)
      })
      run.ledger.renamed(book, name, killed.at, 'renamed by the test')
      const check = await run.restartAndCheck(killed, [book])
      await run.stop()
      expect(check.lost).toEqual([])
      expect(check.searchMisses).toContainEqual(expect.stringContaining(`books ${book.id} "${name}" is not found by`))
      expect(check.searchMisses).toContainEqual(
        expect.stringContaining(`books ${book.id} "${name}" is found by "${formerName.split(' ')[1]}" (a former name)`),
      )
    },
    RUN_TIMEOUT_MS,
  )
})
