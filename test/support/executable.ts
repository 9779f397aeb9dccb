import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import packageJson from '../../package.json'
import { childEnv, withTimeout } from './process'

/*
 * The compiled executable, built once per test run (`bun test` runs every file in one process) for
 * every test that runs it: the build is the slow part of those tests.
 */

const REPO = join(import.meta.dir, '..', '..')
/** How long `bun build --compile` may take on a loaded machine. */
export const BUILD_TIMEOUT_MS = 120_000

export interface BuiltExecutable {
  /** The build's own folder, which holds the executable and nothing else. */
  readonly dir: string
  readonly path: string
  readonly buildMs: number
}

let building: Promise<BuiltExecutable> | undefined

/**
 * package.json's `build` script with its output moved to `outfile`: the tests run the executable
 * `bun run build` makes, with the same entries and flags (no .env or bunfig.toml read at run time).
 */
export function buildCommand(outfile: string): string[] {
  const script: string = packageJson.scripts.build
  const words = script.split(/\s+/)
  const out = words.indexOf('--outfile')
  if (words[0] !== 'bun' || words[1] !== 'build' || out === -1 || out + 1 >= words.length) {
    throw new Error(`package.json's build script is not "bun build ... --outfile <path>": ${script}`)
  }
  return words.map((word, i) => (i === out + 1 ? outfile : word))
}

async function build(): Promise<BuiltExecutable> {
  // Not a tempDir(): removeTempDirs() in one file's afterAll must not take it from the next file.
  const dir = mkdtempSync(join(tmpdir(), 'catalogue-build-'))
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'catalogue')
  const started = performance.now()
  const proc = Bun.spawn(buildCommand(path), {
    cwd: REPO,
    env: childEnv({}),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const code = await withTimeout(proc.exited, 'bun build --compile', BUILD_TIMEOUT_MS).catch((error: Error) => {
    proc.kill('SIGKILL')
    throw error
  })
  if (code !== 0) throw new Error(`bun build --compile failed (${code}):\n${await new Response(proc.stderr).text()}`)
  return { dir, path, buildMs: Math.round(performance.now() - started) }
}

/** The executable built from the working tree, built on the first call; a failed build fails every caller. */
export function compiledExecutable(): Promise<BuiltExecutable> {
  building ??= build()
  return building
}
