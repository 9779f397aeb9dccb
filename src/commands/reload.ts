import { readTokenFile, TokenFileError, type TokenSet } from '../http/access/api-tokens'
import type { Logger } from '../logger'

/*
 * SIGHUP (`systemctl reload`, `kill -HUP`, logrotate's postrotate, a closed terminal) never stops
 * the service: it reloads what can be reloaded and logs one line saying what it did. The one thing
 * read from a file while the service runs is API_TOKENS_FILE. Every other setting comes from the
 * environment and the command line, which a running process cannot be given again: they take a
 * restart. The log goes to stdout and stderr, which the service never opens itself, so there is no
 * log file to reopen (docs/deployment.md, "Reload").
 */

export const NOTHING_TO_RELOAD = 'SIGHUP: nothing to reload (no API_TOKENS_FILE; other settings take a restart)'

/** Reads the token file again into `tokens`; a file that cannot be used leaves them as they were. */
export function reloadTokens(logger: Logger, tokens: TokenSet, path: string): void {
  try {
    tokens.replace(readTokenFile(path))
    logger.log('info', 'API tokens reloaded', { signal: 'SIGHUP', file: path, tokens: tokens.size })
  } catch (error) {
    if (!(error instanceof TokenFileError)) throw error
    logger.log('error', 'API tokens not reloaded: the previous ones stay in force', {
      signal: 'SIGHUP',
      file: path,
      error: error.message,
    })
  }
}

/**
 * What SIGHUP does in a process that serves: `tokens` read again from `path` when the service has a
 * token file, else one line saying there is nothing to reload. Installed as early as the tokens are
 * read, so that a SIGHUP during the start does not stop it either.
 */
export function reloadOnHangup(logger: Logger, tokens: TokenSet | null, path: string | null): void {
  process.on('SIGHUP', () => {
    if (tokens !== null && path !== null) reloadTokens(logger, tokens, path)
    else logger.log('info', NOTHING_TO_RELOAD, { signal: 'SIGHUP' })
  })
}
