/**
 * The million-book bench (bench/parts/million/million.ts) run as `bun run bench -- million` is, on the smallest
 * size and SQLite only, in a data folder of its own: that it runs, keeps its data set for the next
 * run, and makes it again when its marker no longer fits. What it measures is not checked here.
 */
import { afterAll, describe, expect, it } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const REPO = join(import.meta.dir, '..', '..')
const dataDir = mkdtempSync(join(tmpdir(), 'catalogue-million-test-'))
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

async function bench(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = Bun.spawn(['bun', 'bench/run.ts', 'million', ...args], {
    cwd: REPO,
    env: { ...process.env, BENCH_DATA_DIR: dataDir },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  return { code, stdout, stderr }
}

/** Rewrites the marker of the kept 10,000-book SQLite set as `change` says; gives it as it was. */
function changeMarker<T extends Record<string, unknown>>(change: (marker: T) => T): T {
  const markerPath = join(dataDir, 'sqlite-10k.json')
  const marker = JSON.parse(readFileSync(markerPath, 'utf8')) as T
  writeFileSync(markerPath, JSON.stringify(change(marker)))
  return marker
}

describe('bun run bench -- million', () => {
  it('makes the 10,000-book set on SQLite once, reports its requests and import, and keeps it for the next run', async () => {
    const first = await bench('--sizes', '10k', '--backends', 'sqlite', '--quick')
    expect(first.code).toBe(0)
    expect(first.stderr).toContain('making the 10,000-book set on SQLite')
    expect(first.stdout).toContain('| SQLite: request, ms median (min-max)')
    expect(first.stdout).toMatch(/\| ranked `book` \(a word in every title\) +\| +[\d.]+ \([\d.]+-[\d.]+\) +\|/)
    expect(first.stdout).toContain('Books matched (meta.total) at 10k: `book` 9,889;')
    expect(first.stdout).toContain('targets (issue 24)')

    const second = await bench('--sizes', '10k', '--backends', 'sqlite', '--quick')
    expect(second.code).toBe(0)
    expect(second.stderr).toContain('using the kept 10,000-book set on SQLite')
    expect(second.stderr).toContain('catalogue import of 10,000 books into a scratch database')
  }, 60_000)

  it('makes the set again when bench/data/import-data.ts changed since it was made', async () => {
    changeMarker((marker) => ({ ...marker, generator: 'an older one' }))
    const run = await bench('--sizes', '10k', '--backends', 'sqlite', '--quick')
    expect(run.code).toBe(0)
    expect(run.stderr).toContain('making the 10,000-book set on SQLite')
    expect(run.stderr).toContain('bench/data/import-data.ts changed')
  }, 60_000)

  it('migrates the kept set by catalogue migrate when this build only adds migrations to those that made it', async () => {
    const marker = changeMarker<{ migrations: string[] }>((m) => ({ ...m, migrations: m.migrations.slice(0, -1) }))
    const run = await bench('--sizes', '10k', '--backends', 'sqlite', '--quick')
    expect(run.code).toBe(0)
    expect(run.stderr).toContain('migrated the 10,000-book set on SQLite by 1 migration(s)')
    expect(run.stderr).toContain('using the kept 10,000-book set on SQLite')
    expect(JSON.parse(readFileSync(join(dataDir, 'sqlite-10k.json'), 'utf8')).migrations).toEqual(marker.migrations)
  }, 60_000)

  it("makes the set again when a migration that made it is not this build's (another branch's schema)", async () => {
    changeMarker<{ migrations: string[] }>((m) => ({ ...m, migrations: [...m.migrations.slice(0, -1), '99:other'] }))
    const run = await bench('--sizes', '10k', '--backends', 'sqlite', '--quick')
    expect(run.code).toBe(0)
    expect(run.stderr).toContain('making the 10,000-book set on SQLite (')
    expect(run.stderr).toContain("its schema is not this build's")
  }, 60_000)

  it('makes the set again when the kept file no longer opens', async () => {
    for (const suffix of ['-wal', '-shm']) rmSync(join(dataDir, `sqlite-10k.db${suffix}`), { force: true })
    writeFileSync(join(dataDir, 'sqlite-10k.db'), 'not a database, whatever its marker says')
    const run = await bench('--sizes', '10k', '--backends', 'sqlite', '--quick')
    expect(run.code).toBe(0)
    expect(run.stderr).toContain('catalogue migrate failed on it')
    expect(run.stdout).toContain('Books matched (meta.total) at 10k: `book` 9,889;')
  }, 60_000)

  it('refuses a size it does not have, with exit 2', async () => {
    const run = await bench('--sizes', '5k')
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('--sizes takes 10k, 100k and 1m')
  })
})
