/**
 * The Express baseline runs on Node with better-sqlite3 (bench/references/express.mjs), whose native
 * addon `bun install` does not build: package.json's trustedDependencies leaves better-sqlite3's
 * install script out, since under Bun it cannot find Node's headers (Bun does not hand npm's
 * `nodedir` setting to node-gyp) and would fail the install. npm can, so the bench builds it the
 * first time it needs it, with `npm rebuild better-sqlite3` (about a minute on one core; kept in
 * node_modules after that).
 */

const repoRoot = new URL('../..', import.meta.url).pathname

/** The command that starts the Express baseline. */
export const EXPRESS_COMMAND: readonly string[] = ['node', 'bench/references/express.mjs']

const LOADS = "new (require('better-sqlite3'))(':memory:').prepare('SELECT sqlite_version()').get()"

function loadsUnderNode(): { ok: boolean; error: string } {
  try {
    const out = Bun.spawnSync(['node', '-e', LOADS], { cwd: repoRoot, stdout: 'ignore', stderr: 'pipe' })
    return { ok: out.exitCode === 0, error: out.stderr.toString().trim() }
  } catch (error) {
    return { ok: false, error: String(error) }
  }
}

let ready = false

/**
 * Makes sure better-sqlite3 loads under Node, building it with npm if it does not yet; throws,
 * with npm's or Node's error, when it cannot.
 */
export function ensureBetterSqlite(): void {
  if (ready) return
  if (!loadsUnderNode().ok) {
    process.stderr.write('bench: building better-sqlite3 for Node (npm rebuild better-sqlite3), once\n')
    const build = Bun.spawnSync(['nice', 'npm', 'rebuild', 'better-sqlite3'], {
      cwd: repoRoot,
      stdout: 'ignore',
      stderr: 'pipe',
    })
    const after = loadsUnderNode()
    if (build.exitCode !== 0 || !after.ok) {
      throw new Error(
        `better-sqlite3 does not load under Node (needed by the Express baseline):\n${after.error}\n` +
          `npm rebuild better-sqlite3 exited with ${build.exitCode}:\n${build.stderr.toString().slice(-2000)}`,
      )
    }
  }
  ready = true
}
