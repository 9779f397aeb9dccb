import { rmSync, statSync } from 'node:fs'
import { SQLITE_FILE_SETTINGS, storeSettingsHelp } from '../config'
import { planBackup } from '../store/backup'
import { parseCommandArguments } from './arguments'
import { type Command, UsageError } from './command'
import { commitFile, partialFileFor } from './output-file'
import { formatBytes, Progress, say } from './progress'

const help = `catalogue backup: copy the database while the service runs

Usage: catalogue backup [options] FILE

Writes a consistent copy of the database that DATABASE_URL names to FILE: the database as it was
at one moment, every write committed before the backup began included. The service need not
stop: its reads and writes go on while the copy is made. The copy is a compact SQLite file,
checked (PRAGMA quick_check) before it gets its name; it is not FILE until it is whole and on
disk. To restore, stop the service and put the copy in the database's place (and remove the old
file's -wal and -shm files), or point DATABASE_URL at it.

Only sqlite:// databases: for PostgreSQL, use catalogue export (catalogue import restores it on
either backend) or pg_dump.

Options:
  --force                             replace FILE if it exists
${storeSettingsHelp(SQLITE_FILE_SETTINGS)}
  --help                              print this text and exit

Exit status: 0 copied, 1 the copy failed (nothing was left at FILE), 2 bad arguments.
`

async function runBackup(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<number> {
  const started = performance.now()
  const {
    values,
    positionals,
    store: settings,
  } = parseCommandArguments('backup', argv, env, { force: { type: 'boolean' } }, 1, SQLITE_FILE_SETTINGS)
  const file = positionals[0]
  if (file === undefined) throw new UsageError('needs the FILE to write the copy to (see catalogue backup --help)')
  const { databaseUrl } = settings
  const plan = planBackup(settings.database, databaseUrl, file)
  if ('refused' in plan) throw new UsageError(plan.refused)
  const partial = partialFileFor(file, values.force === true)

  const progress = new Progress('backing up', 0, (done, total) => `${formatBytes(done)} / ${formatBytes(total)}`)
  try {
    await plan.copy(partial, {
      busyTimeoutMs: settings.busyTimeoutMs,
      progress: (written, expected) => progress.update(written, expected),
    })
    commitFile(partial, file)
  } catch (error) {
    rmSync(partial, { force: true })
    progress.finish()
    say(`catalogue backup: cannot copy ${databaseUrl}: ${(error as Error).message}`)
    return 1
  }
  progress.finish()
  const bytes = statSync(file).size
  const seconds = ((performance.now() - started) / 1000).toFixed(1)
  say(`backed up ${databaseUrl} to ${file} (${formatBytes(bytes)}) in ${seconds} s`)
  return 0
}

export const backupCommand: Command = {
  name: 'backup',
  summary: 'copy the database to a file while the service runs',
  help,
  run: runBackup,
}
