import * as bunTest from 'bun:test'
import { existsSync } from 'node:fs'

/*
 * For the tests that drive a page in a browser (the docs page, the app) (Debian's Chromium, at CHROMIUM_PATH or
 * /usr/bin/chromium): bun:test's describe, it and hooks, which register only where Chromium is
 * installed, as postgres-tests.ts does for PostgreSQL. Elsewhere nothing registers and one line
 * says the tests were skipped and how to run them; under CI=true the file fails instead (.ci/run
 * installs Chromium). A file imports from here what it would import from bun:test.
 */

/** The browser the tests drive. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
/** Whether the browser tests run in this run. */
export const chromiumAvailable = existsSync(CHROMIUM)

if (!chromiumAvailable) {
  if (process.env.CI === 'true') {
    throw new Error(`Chromium is needed under CI=true: there is none at ${CHROMIUM} (docs/testing.md, "Chromium")`)
  }
  process.stderr.write(
    `Browser tests (the docs page, the app) skipped: there is no Chromium at ${CHROMIUM}. To run them, install it (apt-get install chromium) or set CHROMIUM_PATH (docs/testing.md, "Chromium")\n`,
  )
}

function whenAvailable<F>(register: F): F {
  return chromiumAvailable ? register : ((() => {}) as F)
}

export const describe = whenAvailable(bunTest.describe)
export const it = whenAvailable(bunTest.it)
export const beforeAll = whenAvailable(bunTest.beforeAll)
export const afterAll = whenAvailable(bunTest.afterAll)
