/**
 * The Express baseline runs on Node with better-sqlite3 (bench/references/express.mjs), a native
 * addon built at install time. The service never needs it, so it is not among the project's
 * dependencies (where `bun install` would block its build script and say so, or, trusted, compile
 * SQLite for a minute on every fresh install): it is the one dependency of bench/references/node/,
 * which the bench installs with npm the first time it needs it (`npm ci`: about a minute on one
 * core, building it from source against the machine's Node; kept in that folder's node_modules
 * after that).
 */

const repoRoot = new URL('../..', import.meta.url).pathname
/** The folder whose node_modules holds better-sqlite3. */
const nodeReference = new URL('./node/', import.meta.url).pathname

/** The command that starts the Express baseline. */
export const EXPRESS_COMMAND: readonly string[] = ['node', 'bench/references/express.mjs']

const LOADS = `new (require(${JSON.stringify(`${nodeReference}node_modules/better-sqlite3`)}))(':memory:').prepare('SELECT sqlite_version()').get()`

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
 * Makes sure better-sqlite3 loads under Node, installing it with npm if it does not yet; throws,
 * with npm's or Node's error, when it cannot.
 */
export function ensureBetterSqlite(): void {
  if (ready) return
  if (!loadsUnderNode().ok) {
    process.stderr.write('bench: installing better-sqlite3 for Node (npm ci in bench/references/node), once\n')
    const install = Bun.spawnSync(['nice', 'npm', 'ci', '--no-audit', '--no-fund'], {
      cwd: nodeReference,
      stdout: 'ignore',
      stderr: 'pipe',
    })
    const after = loadsUnderNode()
    if (install.exitCode !== 0 || !after.ok) {
      throw new Error(
        `better-sqlite3 does not load under Node (needed by the Express baseline):\n${after.error}\n` +
          `npm ci in bench/references/node exited with ${install.exitCode}:\n${install.stderr.toString().slice(-2000)}`,
      )
    }
  }
  ready = true
}
