import { Database } from 'bun:sqlite'

export interface BackupWorkerData {
  readonly source: string
  readonly target: string
  readonly busyTimeoutMs: number
}

export type BackupMessage =
  /** The copy has begun; it will be about this large (the pages in use). */
  | { readonly kind: 'started'; readonly expectedBytes: number }
  | { readonly kind: 'done' }
  | { readonly kind: 'failed'; readonly message: string }

/**
 * Copies `source` to `target` with VACUUM INTO and checks the copy, telling `post` how it goes. One
 * long synchronous call: the backup thread runs it (sqlite-backup-worker.ts), so that the command's
 * main thread can draw the progress meanwhile.
 */
export function copySqlite(
  { source, target, busyTimeoutMs }: BackupWorkerData,
  post: (message: BackupMessage) => void,
): void {
  try {
    // Read-only: a backup never migrates, and never creates the database it was asked to copy.
    const db = new Database(source, { readonly: true, strict: true })
    try {
      db.run(`PRAGMA busy_timeout = ${Math.trunc(busyTimeoutMs)}`)
      const size = db
        .query<{ bytes: number }, []>(
          'SELECT (page_count - freelist_count) * page_size AS bytes FROM pragma_page_count, pragma_freelist_count, pragma_page_size',
        )
        .get()
      post({ kind: 'started', expectedBytes: size?.bytes ?? 0 })
      // One read transaction: the copy is the database as it was when the copy began, and in WAL
      // mode the service's writers go on meanwhile (a reader never blocks them).
      db.query('VACUUM INTO ?').run(target)
    } finally {
      db.close()
    }
    // VACUUM INTO does not check what it wrote: read it back before calling it a backup.
    const copy = new Database(target, { readonly: true, strict: true })
    let check: string
    try {
      check = copy
        .query<{ quick_check: string }, []>('PRAGMA quick_check')
        .all()
        .map((row) => row.quick_check)
        .join('; ')
    } finally {
      copy.close()
    }
    post(check === 'ok' ? { kind: 'done' } : { kind: 'failed', message: `the copy is damaged: ${check}` })
  } catch (error) {
    const code = (error as { code?: unknown }).code
    post({ kind: 'failed', message: `${(error as Error).message}${typeof code === 'string' ? ` (${code})` : ''}` })
  }
}
