import { backupCommand } from './backup'
import type { Command } from './command'
import { exportCommand } from './export'
import { healthcheckCommand } from './healthcheck'
import { importCommand } from './import'
import { migrateCommand } from './migrate'
import { serveCommand } from './serve'
import { tokenCommand } from './token'

/** The commands of the one executable, in the order `catalogue --help` lists them; serve first, the default. */
export const commands: readonly Command[] = [
  serveCommand,
  tokenCommand,
  backupCommand,
  importCommand,
  exportCommand,
  migrateCommand,
  healthcheckCommand,
]
