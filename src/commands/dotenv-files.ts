import { existsSync } from 'node:fs'
import type { Logger } from '../logger'

/*
 * Bun reads .env files from the working folder into the environment before any code runs. The
 * compiled executable is built without that (`--no-compile-autoload-dotenv` in package.json's
 * build, with `--no-compile-autoload-bunfig`): in production the settings are what the environment
 * and the command line say, never a file that happens to lie in the working folder. Run from the
 * source (`bun start`, `bun run dev`), Bun's loading stays, as developers expect, and the service
 * says which files were there (docs/deployment.md, ".env files").
 */

/** Whether this is the compiled executable (its modules live in Bun's embedded file system). */
export function isCompiledExecutable(): boolean {
  return Bun.main.includes('$bunfs') || Bun.main.includes('~BUN')
}

/**
 * The .env files Bun loads from the working folder for this NODE_ENV, those that exist, in Bun's
 * order: none for the executable, nor under `bun --no-env-file`.
 */
export function dotenvFilesLoaded(env: Readonly<Record<string, string | undefined>>): string[] {
  if (isCompiledExecutable() || process.execArgv.includes('--no-env-file')) return []
  const mode = env.NODE_ENV || 'development'
  const candidates = [`.env.${mode}.local`, ...(mode === 'test' ? [] : ['.env.local']), `.env.${mode}`, '.env']
  return candidates.filter((name) => existsSync(name))
}

/** Logs one line naming the .env files Bun has read, when there are any. */
export function noteDotenvFiles(logger: Logger, env: Readonly<Record<string, string | undefined>>): void {
  const files = dotenvFilesLoaded(env)
  if (files.length === 0) return
  logger.log(
    'info',
    'settings may come from .env files: Bun loads them when run from the source (not the executable)',
    {
      files: files.join(', '),
    },
  )
}
