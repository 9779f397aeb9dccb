import { Database } from 'bun:sqlite'
import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { mkdirSync } from 'node:fs'
import { SQL } from 'bun'
import { migratePostgres } from '../../src/store/postgres/migrate'
import { postgresMigrations } from '../../src/store/postgres/migrations'
import { migrate } from '../../src/store/sqlite/migrate'
import { sqliteMigrations } from '../../src/store/sqlite/migrations'
import { startService, tempDatabase } from '../support/commands'
import {
  afterAll as afterAllOnPostgres,
  describe as describeOnPostgres,
  POSTGRES_SERVER,
} from '../support/postgres-tests'
import { type ChildProcess, type LogLine, removeTempDirs, stopChildren } from '../support/process'
import { scratchDatabases } from '../support/test-database'

// Processes and databases on a busy shared machine: Bun's 5 s default is short.
setDefaultTimeout(60_000)

/*
 * An upgrade's start: the service applies the migrations its database lacks and logs one `info`
 * line for each (its number, name and time), before `listening`, so that an operator sees in the
 * log what an upgrade changed and how long each step took (docs/upgrades.md).
 */

afterAll(async () => {
  await stopChildren()
  removeTempDirs()
})

interface Applied {
  readonly version: number
  readonly name: string
}

/** The `migration applied` lines of a start, as {version, name}, each checked for its level and time. */
function migrationLines(child: ChildProcess): Applied[] {
  const listening = child.logs.findIndex((line) => line.msg === 'listening')
  const lines = child.logs.filter((line) => line.msg === 'migration applied')
  for (const line of lines) {
    expect(line.level).toBe('info')
    expect(typeof line.duration_ms).toBe('number')
    expect(line.duration_ms as number).toBeGreaterThanOrEqual(0)
    // Logged as applied, before the service listens.
    expect(child.logs.indexOf(line)).toBeLessThan(listening)
  }
  return lines.map((line: LogLine) => ({ version: line.migration as number, name: line.name as string }))
}

const named = (migrations: readonly Applied[]): Applied[] => migrations.map(({ version, name }) => ({ version, name }))

describe('the service started on a SQLite database', () => {
  it('at an older schema version logs one info line per migration it applies, with its number, name and time', async () => {
    const { dir, path, url } = tempDatabase()
    mkdirSync(dir, { recursive: true })
    const db = new Database(path)
    migrate(db, sqliteMigrations.slice(0, -2))
    db.close()
    const { child } = await startService({ DATABASE_URL: url })
    expect(migrationLines(child)).toEqual(named(sqliteMigrations.slice(-2)))
  })

  it('new logs every migration once, in order; started again it logs none', async () => {
    const { url } = tempDatabase()
    const first = await startService({ DATABASE_URL: url })
    expect(migrationLines(first.child)).toEqual(named(sqliteMigrations))
    first.child.proc.kill('SIGTERM')
    expect(await first.child.exitCode()).toBe(0)
    const again = await startService({ DATABASE_URL: url })
    expect(migrationLines(again.child)).toEqual([])
  })

  it('with --workers 2 logs them once, from the supervisor that migrates before its workers start', async () => {
    const { dir, path, url } = tempDatabase()
    mkdirSync(dir, { recursive: true })
    const db = new Database(path)
    migrate(db, sqliteMigrations.slice(0, -1))
    db.close()
    const { child } = await startService({ DATABASE_URL: url, WORKERS: '2' })
    expect(migrationLines(child)).toEqual(named(sqliteMigrations.slice(-1)))
    const line = child.logs.find((logged) => logged.msg === 'migration applied')
    expect({ worker: line?.worker, pid: line?.pid }).toEqual({ worker: undefined, pid: child.proc.pid })
  })
})

const scratch = scratchDatabases(POSTGRES_SERVER)

afterAllOnPostgres(async () => {
  await stopChildren()
  await scratch.dropAll()
})

describeOnPostgres('the service started on a PostgreSQL database', () => {
  it('at an older schema version logs one info line per migration it applies, with its number, name and time', async () => {
    const url = await scratch.fresh()
    const sql = new SQL(url, { max: 1 })
    try {
      await migratePostgres(sql, postgresMigrations.slice(0, -2))
    } finally {
      await sql.close()
    }
    const { child } = await startService({ DATABASE_URL: url })
    expect(migrationLines(child)).toEqual(named(postgresMigrations.slice(-2)))
  })

  it('new logs every migration once, in order; started again it logs none', async () => {
    const url = await scratch.fresh()
    const first = await startService({ DATABASE_URL: url })
    expect(migrationLines(first.child)).toEqual(named(postgresMigrations))
    first.child.proc.kill('SIGTERM')
    expect(await first.child.exitCode()).toBe(0)
    const again = await startService({ DATABASE_URL: url })
    expect(migrationLines(again.child)).toEqual([])
  })
})
