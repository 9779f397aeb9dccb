import * as bunTest from 'bun:test'
import { postgresBinaries, postgresServer } from './postgres-server'

/*
 * For the PostgreSQL test files: the server they use, and bun:test's describe, it and hooks, which
 * register only when there is a server (postgres-server.ts finds one, or starts a throwaway cluster).
 * Where PostgreSQL is neither running nor installed, nothing registers, and one line (printed once a
 * run) says the PostgreSQL tests were skipped and how to run them; under CI=true the file fails
 * instead. A file imports from here what it would import from bun:test for its PostgreSQL tests.
 */

const server = await postgresServer()

if (server.kind === 'missing') {
  if (process.env.CI === 'true') {
    throw new Error(`PostgreSQL is needed under CI=true: ${server.reason} (docs/testing.md, "PostgreSQL")`)
  }
  process.stderr.write(
    `PostgreSQL tests skipped: ${server.reason}. To run them, install PostgreSQL (its initdb is enough) or set POSTGRES_TEST_URL to a server (docs/testing.md, "PostgreSQL")\n`,
  )
}

/** Whether the PostgreSQL tests run in this run. */
export const postgresAvailable = server.kind !== 'missing'
/** The server's URL; a database on it is the user's to create (and drop). Unused when none answers. */
export const POSTGRES_SERVER = server.url

function whenAvailable<F>(register: F): F {
  return postgresAvailable ? register : ((() => {}) as F)
}

export const describe = whenAvailable(bunTest.describe)
export const it = whenAvailable(bunTest.it)
export const test = whenAvailable(bunTest.test)
export const beforeAll = whenAvailable(bunTest.beforeAll)
export const afterAll = whenAvailable(bunTest.afterAll)
export const beforeEach = whenAvailable(bunTest.beforeEach)
export const afterEach = whenAvailable(bunTest.afterEach)

/** The folder of PostgreSQL's programs (initdb, pg_ctl), or null where PostgreSQL is not installed. */
export const POSTGRES_PROGRAMS = postgresBinaries()
let programsNoted = false

/**
 * describe for tests that run PostgreSQL's programs themselves (a cluster of their own): registered
 * where they are installed. Elsewhere one line says so, or, under CI=true, one test fails instead.
 */
export function describeWithPrograms(name: string, tests: () => void): void {
  if (POSTGRES_PROGRAMS !== null) {
    bunTest.describe(name, tests)
  } else if (process.env.CI === 'true') {
    bunTest.test(name, () => {
      throw new Error("PostgreSQL's programs (initdb, pg_ctl) are needed under CI=true, and none were found")
    })
  } else if (!programsNoted && postgresAvailable) {
    // Where no server answers either, the skip line above has said it all.
    programsNoted = true
    process.stderr.write(
      'PostgreSQL tests that start a cluster of their own skipped: initdb and pg_ctl were not found (install PostgreSQL, docs/testing.md)\n',
    )
  }
}
