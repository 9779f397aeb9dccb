import { STORE_SETTINGS, storeSettingsHelp } from '../config'
import { resources } from '../resources/registry'
import type { MigrationApplied } from '../store/migration-state'
import { migrationCount, shownDatabaseUrl } from '../store/open'
import { parseCommandArguments } from './arguments'
import type { Command } from './command'
import { openCommandStore } from './open-store'
import { count, say } from './progress'

const help = `catalogue migrate: bring the database's schema up to this build's

Usage: catalogue migrate [options]

Applies the migrations the database lacks, each once, under the database's lock (SQLite's write
lock, a PostgreSQL advisory lock), then checks the schema against the resource descriptions. The
service does the same at every start; this runs it alone, before the instances of a new version
start, say. Running it again changes nothing. A database from a newer build is refused.

Options:
${storeSettingsHelp(STORE_SETTINGS)}
  --help                              print this text and exit

Prints a line for each migration it applies, then one saying the schema's version and how many
were applied, or that it was up to date already.

Exit status: 0 up to date, 2 bad arguments or a database that cannot be opened or migrated.
`

async function migrate(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<number> {
  const { store: settings } = parseCommandArguments('migrate', argv, env, {}, 0, STORE_SETTINGS)
  const applied: MigrationApplied[] = []
  // Opening a store applies what is missing and checks the result: the one way a backend migrates.
  const store = await openCommandStore(settings, resources, {
    onMigration: (migration) => {
      applied.push(migration)
      say(`applied migration ${migration.version}: ${migration.name}`)
    },
    onIndexBuilt: (built) =>
      say(
        `built index ${built.name}, which an import stopped before its end had left out (${Math.round(built.durationMs)} ms)`,
      ),
  })
  await store.close()
  const where = shownDatabaseUrl(settings.databaseUrl)
  const version = migrationCount(settings.database)
  if (applied.length === 0) {
    say(`the schema of ${where} was up to date already (version ${version}): no migration applied`)
  } else {
    say(`the schema of ${where} is now at version ${version}: ${count(applied.length, 'migration')} applied`)
  }
  return 0
}

export const migrateCommand: Command = {
  name: 'migrate',
  summary: "apply the database's missing migrations, then exit",
  help,
  run: migrate,
}
