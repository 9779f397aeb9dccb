/**
 * The compiled executable, built as `bun run build` builds it (package.json's `build` script, its
 * output moved to a temporary folder), for the parts that measure what an operator runs.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import packageJson from '../../package.json'

const repoRoot = new URL('../..', import.meta.url).pathname

let built: string | undefined

/** The executable's path, built on the first call (a few seconds) and removed when the bench exits. */
export function compiledExecutable(): string {
  if (built) return built
  const words = packageJson.scripts.build.split(/\s+/)
  const out = words.indexOf('--outfile')
  if (words[0] !== 'bun' || words[1] !== 'build' || out === -1) {
    throw new Error(`package.json's build script is not "bun build ... --outfile <path>": ${packageJson.scripts.build}`)
  }
  const dir = mkdtempSync(join(tmpdir(), 'catalogue-bench-build-'))
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'catalogue')
  const build = Bun.spawnSync(
    words.map((word, i) => (i === out + 1 ? path : word)),
    { cwd: repoRoot, stdout: 'ignore', stderr: 'pipe' },
  )
  if (build.exitCode !== 0) throw new Error(`bun run build failed:\n${build.stderr.toString()}`)
  built = path
  return path
}
