/**
 * An operator command of the one executable (`catalogue <name> ...`). Each lives in its own file
 * under src/commands/ and is listed in src/cli.ts.
 */
export interface Command {
  readonly name: string
  /** One line for `catalogue --help`. */
  readonly summary: string
  /** The whole text of `catalogue <name> --help`. */
  readonly help: string
  /**
   * Runs the command and resolves to its exit code: 0 done, 1 done with failures (bad lines of an
   * import, say), 2 bad input (a usage error, printed as one line on stderr).
   */
  run(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<number>
}

/** Bad input to a command: reported as `catalogue <command>: <message>` with exit code 2. */
export class UsageError extends Error {}
