import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { REPO } from '../support/commands'
import { describeWithPrograms, POSTGRES_PROGRAMS } from '../support/postgres-tests'
import { removeTempDirs, spawnChild, stopChildren } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(60_000)

/*
 * `bun test` where no PostgreSQL server answers (docs/testing.md, "PostgreSQL"): run here as a
 * child `bun test` of a small PostgreSQL test file, with POSTGRES_TEST_URL on a port where nothing
 * listens, as a newcomer's machine would be.
 */

/** A small file of PostgreSQL tests, and a file of SQLite tests with one PostgreSQL test in it. */
const POSTGRES_FILE = 'test/store/postgres-version.test.ts'
const MIXED_FILE = 'test/commands/migrate.test.ts'
/** How long the child run may take: initdb and a cluster's start on a busy machine. */
const RUN_MS = 50_000

afterAll(async () => {
  await stopChildren()
  removeTempDirs()
})

/** A port on 127.0.0.1 that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response(null) })
  const port = server.port as number
  await server.stop(true)
  return port
}

/** Runs `bun test` on `files` in the repository with only `env` set; its exit code and output. */
async function bunTest(files: string[], env: Record<string, string>) {
  const child = spawnChild(['bun', 'test', '--timeout', '30000', ...files], REPO, {
    POSTGRES_TEST_URL: `postgres://postgres@127.0.0.1:${await closedPort()}/test`,
    ...env,
  })
  const code = await child.exitCode(RUN_MS)
  const output = `${child.stdout}${child.stderr}`
  const count = (word: string) => Number(new RegExp(`^ *(\\d+) ${word}$`, 'm').exec(output)?.[1] ?? Number.NaN)
  return { code, output, passed: count('pass'), failed: count('fail') }
}

/** The processes whose command line names `text` (Linux: /proc/<pid>/cmdline). */
function processesNaming(text: string): string[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((pid) => {
      try {
        const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')
        return command.includes(text) ? [`${pid}: ${command}`] : []
      } catch {
        return [] // gone since the listing
      }
    })
}

describeWithPrograms('bun test where no server answers and PostgreSQL is installed', () => {
  it('runs the PostgreSQL tests on a throwaway cluster of its own, then leaves no cluster, process or folder', async () => {
    const run = await bunTest([POSTGRES_FILE], {})
    expect({ code: run.code, failed: run.failed }).toEqual({ code: 0, failed: 0 })
    expect(run.passed).toBeGreaterThan(0)
    const line =
      /^PostgreSQL: no server answers at .*: the tests use a throwaway cluster at (\S+) \((\S+), from (\S+)\)/m.exec(
        run.output,
      )
    expect(line?.[3]).toBe(POSTGRES_PROGRAMS as string)
    const folder = line?.[2] as string
    expect(folder).toStartWith('/')
    expect(existsSync(folder)).toBe(false)
    expect(processesNaming(folder)).toEqual([])
  })
})

describe('bun test where no server answers and PostgreSQL is not installed', () => {
  const nowhere = { TEST_POSTGRES_BIN_DIR: '/nonexistent/postgresql/bin' }

  it('runs the SQLite tests, registers no PostgreSQL test, says so in one line and exits 0', async () => {
    const run = await bunTest([POSTGRES_FILE, MIXED_FILE], nowhere)
    expect({ code: run.code, failed: run.failed }).toEqual({ code: 0, failed: 0 })
    // migrate.test.ts's SQLite tests ran; its PostgreSQL test and postgres-version's did not.
    expect(run.passed).toBeGreaterThan(0)
    expect(run.output).not.toContain('PostgreSQL database once')
    const lines = run.output.split('\n').filter((line) => line.includes('PostgreSQL tests skipped'))
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain('install PostgreSQL')
    expect(lines[0]).toContain('POSTGRES_TEST_URL')
  })

  it('fails under CI=true', async () => {
    const run = await bunTest([POSTGRES_FILE], { ...nowhere, CI: 'true' })
    expect(run.code).not.toBe(0)
    expect(run.output).toContain('PostgreSQL is needed under CI=true')
    expect(run.output).not.toContain('PostgreSQL tests skipped')
  })
})
