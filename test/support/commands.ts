import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { resources } from '../../src/resources/registry'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store'
import { type ChildProcess, childCommand, childEnv, spawnChild, tempDir, WAIT_MS, withTimeout } from './process'

/*
 * Helpers for the tests of the operator commands (test/commands/): each runs `bun src/cli.ts
 * <command>` as a child process on temporary files and reads the database file it left.
 */

export const REPO = join(import.meta.dir, '..', '..')
export const CLI = join(REPO, 'src', 'cli.ts')

export interface CommandRun {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
  /** The stderr lines, without the empty one after the last line feed. */
  readonly lines: string[]
}

/** Runs `catalogue <args>` to its end in `cwd` with only `env` set (see childEnv). */
export async function runCli(
  args: readonly string[],
  options: { env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {},
): Promise<CommandRun> {
  const child = spawnChild(['bun', CLI, ...args], options.cwd ?? REPO, options.env ?? {})
  const code = await child.exitCode(options.timeoutMs ?? WAIT_MS)
  return { code, stdout: child.stdout, stderr: child.stderr, lines: child.stderr.split('\n').filter((l) => l !== '') }
}

/**
 * Runs `catalogue <args>` in a pseudo-terminal, as an operator at a terminal would, and returns
 * everything it wrote there (stdout and stderr share the terminal).
 */
export async function runInTerminal(
  args: readonly string[],
  options: { env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {},
): Promise<{ code: number; output: string }> {
  let output = ''
  const decoder = new TextDecoder()
  const proc = Bun.spawn(childCommand(['bun', CLI, ...args]), {
    cwd: options.cwd ?? REPO,
    env: childEnv(options.env ?? {}),
    terminal: {
      cols: 120,
      rows: 24,
      data: (_terminal, data) => {
        output += decoder.decode(data, { stream: true })
      },
    },
  })
  try {
    const code = await withTimeout(proc.exited, `catalogue ${args.join(' ')}`, options.timeoutMs ?? WAIT_MS)
    // The last bytes may reach the terminal just after the exit.
    await Bun.sleep(100)
    return { code, output }
  } finally {
    if (proc.exitCode === null) proc.kill('SIGKILL')
    proc.terminal?.close()
  }
}

/** A database location in a new temporary folder (the file is not created) and its URL. */
export function tempDatabase(prefix = 'catalogue-cmd-'): { dir: string; path: string; url: string } {
  const dir = tempDir(prefix)
  const path = join(dir, 'catalogue.db')
  return { dir, path, url: `sqlite://${path}` }
}

/** Creates the database at `path` with the service's schema and runs `fill` on its store. */
export async function withStore(path: string, fill: (store: SqliteStore) => Promise<void> = async () => {}) {
  const store = SqliteStore.open(path, resources)
  try {
    await fill(store)
  } finally {
    await store.close()
  }
}

export interface BookRow {
  readonly title: string
  readonly author: string
  readonly collection: string | null
}

/** Reads a database file straight, without a store: what a command left there. */
export function readDatabase<T>(path: string, read: (db: Database) => T): T {
  const db = new Database(path, { readonly: true })
  try {
    return read(db)
  } finally {
    db.close()
  }
}

/** Every book of the database file with its author's and collection's names, in id order. */
export function booksIn(path: string): BookRow[] {
  return readDatabase(path, (db) =>
    db
      .query<BookRow, []>(
        `SELECT b.name AS title, a.name AS author, c.name AS collection FROM books AS b
          JOIN authors AS a ON a.id = b.author_id LEFT JOIN book_collections AS c ON c.id = b.book_collection_id
          ORDER BY b.id`,
      )
      .all(),
  )
}

/** How many rows each table of the catalogue holds. */
export function countsIn(path: string): { authors: number; collections: number; books: number } {
  return readDatabase(path, (db) => {
    const count = (table: string) => (db.query(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n
    return { authors: count('authors'), collections: count('book_collections'), books: count('books') }
  })
}

/** A CSV field as the RFC writes it: quoted when it holds a comma, a quote or a line break. */
export function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value
}

/** A CSV file's text: the header, then one line per book. */
export function csvOf(rows: readonly (readonly string[])[]): string {
  return `title,author,collection\n${rows.map((row) => row.map(csvField).join(',')).join('\n')}\n`
}

export interface Service {
  readonly child: ChildProcess
  /** `http://127.0.0.1:<port>/api/v1` */
  readonly api: string
}

/** Starts the service (`bun src/cli.ts`) on a free port with `env` and waits until it listens. */
export async function startService(env: Record<string, string>): Promise<Service> {
  const child = spawnChild(['bun', CLI], REPO, { PORT: '0', HOST: '127.0.0.1', ...env })
  const listening = await child.waitForLog((line) => line.msg === 'listening')
  return { child, api: `http://127.0.0.1:${new URL(String(listening.url)).port}/api/v1` }
}
