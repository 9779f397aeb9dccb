import { closeSync, existsSync, fsyncSync, openSync, renameSync, rmSync, statSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import type { FileSink } from 'bun'
import { UsageError } from './command'

/**
 * Where a command writes a file, checked before any work: it must not exist unless `force`, and
 * its folder must. The command writes a partial file beside it (never taken for a complete one)
 * and `commitFile` gives it the name once it is whole and on disk.
 */
export function partialFileFor(path: string, force: boolean): string {
  if (existsSync(path)) {
    if (statSync(path).isDirectory()) throw new UsageError(`${path} is a folder`)
    if (!force) throw new UsageError(`${path} already exists: give --force to replace it`)
  }
  const folder = dirname(path)
  if (!existsSync(folder) || !statSync(folder).isDirectory()) throw new UsageError(`there is no folder ${folder}`)
  return join(folder, `.${basename(path)}.partial-${process.pid}`)
}

/**
 * Makes a finished partial file the file `path`: its bytes reach the disk first, then the rename
 * (atomic: `path` is the old file or the new one, never half of one), then the folder's entry.
 */
export function commitFile(partial: string, path: string): void {
  const fd = openSync(partial, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(partial, path)
  const folder = openSync(dirname(path), 'r')
  try {
    fsyncSync(folder)
  } finally {
    closeSync(folder)
  }
}

/** Text written to standard output, or to a file that appears whole at the end. */
export class OutputFile {
  private constructor(
    /** Null: standard output. */
    private readonly sink: FileSink | null,
    private readonly partial?: { readonly path: string; readonly final: string },
  ) {}

  static stdout(): OutputFile {
    return new OutputFile(null)
  }

  static create(path: string, force: boolean): OutputFile {
    const partial = partialFileFor(path, force)
    return new OutputFile(Bun.file(partial).writer(), { path: partial, final: path })
  }

  /**
   * Writes and waits until the text is taken, so that a slow reader of a pipe holds the export
   * back rather than the text piling up in memory. On standard output Bun.write, whose promise
   * fails when the reader has gone (EPIPE); a FileSink on a pipe reported that only as an
   * unhandled rejection.
   */
  async write(text: string): Promise<void> {
    if (!this.sink) {
      await Bun.write(Bun.stdout, text)
      return
    }
    this.sink.write(text)
    await this.sink.flush()
  }

  async close(): Promise<void> {
    if (!this.sink || !this.partial) return
    await this.sink.end()
    commitFile(this.partial.path, this.partial.final)
  }

  /** Gives up: a partial file is removed. */
  async discard(): Promise<void> {
    if (!this.sink || !this.partial) return
    try {
      await this.sink.end()
    } catch {
      // The failure that led here is the one to report.
    }
    rmSync(this.partial.path, { force: true })
  }
}
