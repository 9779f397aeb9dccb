import { describe, expect, it } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import packageJson from '../../package.json'

/*
 * A newcomer's `bun install` is silent: Bun runs the install script of a trusted package only, and
 * for any other says "Blocked N postinstall". What the service needs has no script to block;
 * better-sqlite3, which only the bench's Express baseline uses, is installed by the bench itself
 * (bench/references/node/, bench/references/express-on-node.ts).
 */

const REPO = join(import.meta.dir, '..', '..')

/** The packages of bun.lock that have an install script: one line each, `"name": ["name@version", ...]`. */
function withInstallScripts(): string[] {
  const lock = readFileSync(join(REPO, 'bun.lock'), 'utf8')
  return [...lock.matchAll(/^ {4}"([^"]+)": \["[^"]+", .*"hasInstallScript": true/gm)].map((m) => m[1] as string)
}

describe('bun install', () => {
  it('has no install script to block: every locked package with one is trusted', () => {
    const trusted = new Set<string>(packageJson.trustedDependencies)
    const scripted = withInstallScripts()
    expect(scripted.length).toBeGreaterThan(0)
    expect(scripted.filter((name) => !trusted.has(name))).toEqual([])
  })

  it('installs no better-sqlite3: the bench installs it for the Express baseline, with npm, when it runs', () => {
    expect(Object.keys({ ...packageJson.dependencies, ...packageJson.devDependencies })).not.toContain('better-sqlite3')
    const bench = JSON.parse(readFileSync(join(REPO, 'bench', 'references', 'node', 'package.json'), 'utf8'))
    expect(Object.keys(bench.dependencies)).toEqual(['better-sqlite3'])
  })
})
