/*
 * Writes the settings table of docs/configuration.md from the table of settings (src/config/), and
 * prints the README's. `--check` writes nothing: it exits 1, naming the file, when the table there
 * is not the one the settings make (test/docs.test.ts checks docs/configuration.md the same way).
 *
 *   bun scripts/write-settings-tables.ts            # rewrite docs/configuration.md's table
 *   bun scripts/write-settings-tables.ts --readme   # print the README's table ("Settings in brief")
 *   bun scripts/write-settings-tables.ts --check    # docs/configuration.md and README.md up to date?
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { configurationTable, readmeTable, settingsTableIn, withSettingsTable } from '../src/config/markdown'

const REPO = join(import.meta.dir, '..')
const files = [
  { path: join(REPO, 'docs', 'configuration.md'), table: configurationTable() },
  { path: join(REPO, 'README.md'), table: readmeTable() },
]
const [configuration, readme] = files as [(typeof files)[0], (typeof files)[0]]

if (process.argv.includes('--readme')) {
  console.log(readme.table)
} else if (process.argv.includes('--check')) {
  const stale = files.filter(({ path, table }) => settingsTableIn(readFileSync(path, 'utf8')) !== table)
  for (const { path } of stale) console.error(`${path}: its settings table is not the one src/config/ writes`)
  process.exit(stale.length === 0 ? 0 : 1)
} else {
  writeFileSync(configuration.path, withSettingsTable(readFileSync(configuration.path, 'utf8'), configuration.table))
  console.log(`wrote the settings table of ${configuration.path}`)
}
