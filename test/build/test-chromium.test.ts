import { afterAll, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { REPO } from '../support/commands'
import { removeTempDirs, spawnChild, stopChildren } from '../support/process'

// Processes: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(60_000)

/*
 * `bun test` where Chromium is not installed (docs/testing.md, "Chromium"): run here as a child
 * `bun test` of the docs page's browser tests and a file without them, with CHROMIUM_PATH naming
 * nothing, as a newcomer's machine without a browser would be.
 */

const BROWSER_FILE = 'test/build/docs-browser.test.ts'
const OTHER_FILE = 'test/docs.test.ts'
const RUN_MS = 50_000

afterAll(async () => {
  await stopChildren()
  removeTempDirs()
})

/** Runs `bun test` on the two files in the repository with only `env` set; its exit code and output. */
async function bunTest(env: Record<string, string>) {
  const child = spawnChild(['bun', 'test', '--timeout', '30000', BROWSER_FILE, OTHER_FILE], REPO, {
    CHROMIUM_PATH: '/nonexistent/chromium',
    ...env,
  })
  const code = await child.exitCode(RUN_MS)
  const output = `${child.stdout}${child.stderr}`
  const count = (word: string) => Number(new RegExp(`^ *(\\d+) ${word}$`, 'm').exec(output)?.[1] ?? Number.NaN)
  return { code, output, passed: count('pass'), failed: count('fail') }
}

describe('bun test where Chromium is not installed', () => {
  it('runs the other tests, registers no browser test, says so in one line and exits 0', async () => {
    const run = await bunTest({})
    expect({ code: run.code, failed: run.failed }).toEqual({ code: 0, failed: 0 })
    expect(run.passed).toBeGreaterThan(0)
    expect(run.output).not.toContain('the docs page in Chromium')
    const lines = run.output
      .split('\n')
      .filter((line) => line.includes('Browser tests (the docs page, the app) skipped'))
    expect(lines).toEqual([
      'Browser tests (the docs page, the app) skipped: there is no Chromium at /nonexistent/chromium. To run them, install it (apt-get install chromium) or set CHROMIUM_PATH (docs/testing.md, "Chromium")',
    ])
  })

  it('fails under CI=true', async () => {
    const run = await bunTest({ CI: 'true' })
    expect(run.code).not.toBe(0)
    expect(run.output).toContain('Chromium is needed under CI=true')
    expect(run.output).not.toContain('Browser tests (the docs page, the app) skipped')
  })
})
