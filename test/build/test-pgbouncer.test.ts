import { afterAll, expect, setDefaultTimeout } from 'bun:test'
import { REPO } from '../support/commands'
import { describe, it, POSTGRES_SERVER } from '../support/postgres-tests'
import { removeTempDirs, spawnChild, stopChildren } from '../support/process'

// Processes: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(60_000)

/*
 * `bun test` where pgbouncer is not installed (docs/testing.md, "PgBouncer"): run here as a child
 * `bun test` of a file with tests through PgBouncer beside others, with PGBOUNCER_PATH naming
 * nothing, as a machine with PostgreSQL but no pgbouncer would be.
 */

const FILE = 'test/store/postgres-client.test.ts'
const RUN_MS = 50_000

afterAll(async () => {
  await stopChildren()
  removeTempDirs()
})

/** Runs `bun test` on the file in the repository with only `env` set; its exit code and output. */
async function bunTest(env: Record<string, string>) {
  const child = spawnChild(['bun', 'test', '--timeout', '30000', FILE], REPO, {
    PGBOUNCER_PATH: '/nonexistent/pgbouncer',
    POSTGRES_TEST_URL: POSTGRES_SERVER,
    ...env,
  })
  const code = await child.exitCode(RUN_MS)
  const output = `${child.stdout}${child.stderr}`
  const count = (word: string) => Number(new RegExp(`^ *(\\d+) ${word}$`, 'm').exec(output)?.[1] ?? Number.NaN)
  return { code, output, passed: count('pass'), failed: count('fail') }
}

describe('bun test where pgbouncer is not installed', () => {
  it('runs the other PostgreSQL tests, registers none through PgBouncer, says so in one line and exits 0', async () => {
    const run = await bunTest({})
    expect({ code: run.code, failed: run.failed }).toEqual({ code: 0, failed: 0 })
    expect(run.passed).toBeGreaterThan(0)
    expect(run.output).not.toContain('through PgBouncer')
    const lines = run.output.split('\n').filter((line) => line.includes('PgBouncer tests skipped'))
    expect(lines).toEqual([
      'PgBouncer tests skipped: pgbouncer was not found at PGBOUNCER_PATH, /usr/sbin/pgbouncer or on PATH. To run them, install it (apt-get install pgbouncer, docs/testing.md)',
    ])
  })

  it('fails under CI=true', async () => {
    const run = await bunTest({ CI: 'true' })
    expect(run.code).not.toBe(0)
    expect(run.output).toContain('pgbouncer is needed under CI=true')
    expect(run.output).not.toContain('PgBouncer tests skipped')
  })
})
