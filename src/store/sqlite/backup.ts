import { Database } from 'bun:sqlite'
import { statSync } from 'node:fs'

/*
 * The copy runs on the command's own thread. A thread of its own (until issue 25) only let the
 * command draw its progress while VACUUM INTO ran; measured beside it, the copy took 0.98-1.06 the
 * time and the service's reads meanwhile a p99 0.93-1.10 as long (docs/performance.md, "Machinery
 * with and without"): `catalogue backup` is a process apart from the service either way.
 */

function sizeOf(path: string): number {
  try {
    return statSync(path).size
  } catch {
    return 0
  }
}

/** The bytes of `db`'s pages in use: about what VACUUM INTO will write. */
function pagesInUse(db: Database): number {
  const size = db
    .query<{ bytes: number }, []>(
      'SELECT (page_count - freelist_count) * page_size AS bytes FROM pragma_page_count, pragma_freelist_count, pragma_page_size',
    )
    .get()
  return size?.bytes ?? 0
}

/** Reads the copy back: VACUUM INTO does not check what it wrote. */
function quickCheck(target: string): string {
  const copy = new Database(target, { readonly: true, strict: true })
  try {
    return copy
      .query<{ quick_check: string }, []>('PRAGMA quick_check')
      .all()
      .map((row) => row.quick_check)
      .join('; ')
  } finally {
    copy.close()
  }
}

/**
 * Copies the SQLite database at `source` to the new file `target` while other connections go on
 * reading and writing it: SQLite's VACUUM INTO, which writes a consistent snapshot (the database as
 * of one transaction) in a compact file of its own, checked with quick_check afterwards. `progress`
 * is told the bytes written and expected as the copy begins and once it is done.
 */
export async function backupSqlite(
  source: string,
  target: string,
  options: { readonly busyTimeoutMs: number; readonly progress: (written: number, expected: number) => void },
): Promise<void> {
  try {
    // Read-only: a backup never migrates, and never creates the database it was asked to copy.
    const db = new Database(source, { readonly: true, strict: true })
    try {
      db.run(`PRAGMA busy_timeout = ${Math.trunc(options.busyTimeoutMs)}`)
      options.progress(0, pagesInUse(db))
      // One read transaction: the copy is the database as it was when the copy began, and in WAL
      // mode the service's writers go on meanwhile (a reader never blocks them).
      db.query('VACUUM INTO ?').run(target)
    } finally {
      db.close()
    }
  } catch (error) {
    const code = (error as { code?: unknown }).code
    throw new Error(`${(error as Error).message}${typeof code === 'string' ? ` (${code})` : ''}`)
  }
  const check = quickCheck(target)
  if (check !== 'ok') throw new Error(`the copy is damaged: ${check}`)
  // The estimate counted pages the copy may not need: done is all of it.
  const written = sizeOf(target)
  options.progress(written, written)
}
