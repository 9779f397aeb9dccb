import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'

/*
 * Helpers for tests that run the service as a child process (`bun src/cli.ts`, the compiled
 * executable): one place for the child's environment, its temporary folders, how long it may take,
 * and reading its JSON log lines, so that every such test starts and watches a child the same way.
 */

/** How long a process gets to start, answer or stop before a test gives up on it. */
export const WAIT_MS = 10_000

/** Settles as `promise` does, or fails with "timed out after `ms` ms: `what`". */
export async function withTimeout<T>(promise: Promise<T>, what: string, ms = WAIT_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Environment for a child: only PATH, HOME and TMPDIR from ours, plus `env`, so that a setting in the
 * test runner's environment (a DATABASE_URL, a PORT) cannot leak into the process under test; and
 * CATALOGUE_WITHOUT, so that `CATALOGUE_WITHOUT=<piece> bun test` checks every answer without that
 * piece of machinery (src/store/sqlite/commits/switches.ts), in the service's processes too.
 */
export function childEnv(env: Record<string, string>): Record<string, string> {
  const base: Record<string, string> = {}
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'CATALOGUE_WITHOUT']) {
    const value = process.env[name]
    if (value !== undefined) base[name] = value
  }
  return { ...base, ...env }
}

/**
 * The command as a child runs it: a `bun` child reads no .env file, since Bun loads one from the
 * working folder (a developer's, in the repository) behind childEnv's back; unless `dotenv`, for
 * the test of that loading itself.
 */
export function childCommand(command: readonly string[], dotenv = false): string[] {
  return command[0] === 'bun' && !dotenv ? ['bun', '--no-env-file', ...command.slice(1)] : [...command]
}

const tempDirs: string[] = []

/** A new empty folder under the system's temporary folder; `removeTempDirs` deletes it. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  tempDirs.push(dir)
  return dir
}

/** Deletes every folder `tempDir` made: for an `afterAll`. */
export function removeTempDirs(): void {
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true })
}

export type LogLine = { readonly msg: string; readonly level: string } & Readonly<Record<string, unknown>>

/** A running child: its stdout read line by line as JSON log lines, its stderr kept as text. */
export class ChildProcess {
  /** The stdout lines that are JSON objects, in order. */
  readonly logs: LogLine[] = []
  stdout = ''
  stderr = ''
  private ended = false
  private wake: () => void = () => {}
  readonly drained: Promise<void>

  constructor(readonly proc: Subprocess<'ignore', 'pipe', 'pipe'>) {
    this.drained = Promise.all([this.readStdout(), this.readStderr()]).then(() => {
      this.ended = true
      this.wake()
    })
  }

  private async readStdout(): Promise<void> {
    const decoder = new TextDecoder()
    let pending = ''
    for await (const chunk of this.proc.stdout) {
      const text = decoder.decode(chunk, { stream: true })
      this.stdout += text
      pending += text
      let newline = pending.indexOf('\n')
      while (newline !== -1) {
        const line = pending.slice(0, newline)
        pending = pending.slice(newline + 1)
        if (line.startsWith('{')) {
          try {
            this.logs.push(JSON.parse(line))
          } catch {
            // not a log line: kept in `stdout` only
          }
        }
        newline = pending.indexOf('\n')
      }
      this.wake()
    }
  }

  private async readStderr(): Promise<void> {
    this.stderr = await new Response(this.proc.stderr).text()
  }

  private output(): string {
    return `stdout:\n${this.stdout}\nstderr:\n${this.stderr}`
  }

  /** The first log line that matches, waiting for it up to `timeoutMs`. */
  async waitForLog(predicate: (line: LogLine) => boolean, timeoutMs = WAIT_MS): Promise<LogLine> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const found = this.logs.find(predicate)
      if (found) return found
      if (this.ended) throw new Error(`the process ended without that log line.\n${this.output()}`)
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`timed out waiting for a log line.\n${this.output()}`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
  }

  /** The exit code, once the process has ended and its output has been read; fails after `timeoutMs`. */
  async exitCode(timeoutMs = WAIT_MS): Promise<number> {
    const code = await withTimeout(this.proc.exited, 'the process to exit', timeoutMs).catch((error: Error) => {
      throw new Error(`${error.message}\n${this.output()}`)
    })
    await this.drained
    return code
  }
}

const running: ChildProcess[] = []

/**
 * Starts `command` (see childCommand) with `childEnv(env)` in `cwd`; `stopChildren` kills it if it
 * is still running.
 */
export function spawnChild(
  command: string[],
  cwd: string,
  env: Record<string, string>,
  options: { readonly dotenv?: boolean } = {},
): ChildProcess {
  const proc = Bun.spawn(childCommand(command, options.dotenv), {
    cwd,
    env: childEnv(env),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const child = new ChildProcess(proc)
  running.push(child)
  return child
}

/** Kills every child `spawnChild` started that has not exited yet, and waits for it: for an `afterEach`. */
export async function stopChildren(): Promise<void> {
  for (const { proc } of running.splice(0)) {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL')
    await Promise.race([proc.exited, Bun.sleep(5_000)])
  }
}

/** Whether a process with this id is alive (signal 0 tests it and sends nothing). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
