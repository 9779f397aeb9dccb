import { existsSync, realpathSync, statSync } from 'node:fs'
import { resolve } from 'node:path'
import type { DatabaseLocation } from './open'
import { backupSqlite } from './sqlite/backup'

export interface BackupOptions {
  /** How long the copy waits for a lock another connection (the service) holds. */
  readonly busyTimeoutMs: number
  /** Told the bytes written so far and the bytes expected. */
  readonly progress: (written: number, expected: number) => void
}

/** How a copy of the database is made, or why this store cannot make one (a sentence for the operator). */
export type BackupPlan =
  | { readonly refused: string }
  | { readonly copy: (target: string, options: BackupOptions) => Promise<void> }

/** The same file, through whatever links: a backup over its own database would destroy it. */
function sameFile(a: string, b: string): boolean {
  if (!existsSync(a) || !existsSync(b)) return resolve(a) === resolve(b)
  return realpathSync(a) === realpathSync(b)
}

/**
 * How to copy the database at `location` (named `url` in messages) to `file` while the service
 * runs: a SQLite file is copied as one snapshot (sqlite/backup.ts). A database in memory has no
 * file, and PostgreSQL has its own tools (pg_dump).
 */
export function planBackup(location: DatabaseLocation, url: string, file: string): BackupPlan {
  if (location.kind !== 'sqlite') {
    return {
      refused: `backup supports sqlite:// databases only (DATABASE_URL is ${location.kind}://...): use catalogue export, the portable backup that catalogue import restores, or the database's own tools (pg_dump)`,
    }
  }
  const source = location.path
  if (source === ':memory:')
    return { refused: 'sqlite://:memory: lives inside one process only: there is no file to back up' }
  if (!existsSync(source) || !statSync(source).isFile()) return { refused: `there is no database at ${url}` }
  if (sameFile(file, source)) return { refused: `${file} is the database itself` }
  return { copy: (target, options) => backupSqlite(source, target, options) }
}
