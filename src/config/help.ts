import type { SettingName } from './service-config'
import type { Setting } from './setting'
import { settingNames, settings } from './table'

/** Every setting's environment variable, as --help lists them. */
export const settingVariables: readonly string[] = settingNames.map((name) => settings[name].env)

const all: readonly Setting<unknown>[] = settingNames.map((name) => settings[name])

// Column widths of the help table: the longest flag and variable, plus two spaces.
const flagColumn = Math.max(...all.map((s) => `${s.flag} <value>`.length)) + 2
const envColumn = Math.max(...all.map((s) => s.env.length)) + 2

export const helpText = `catalogue: the library catalogue JSON:API service

Usage: catalogue [options]

Each option can also be set by its environment variable; the command line wins.

${all
  .map(
    (s) =>
      `  ${`${s.flag} <value>`.padEnd(flagColumn)}${s.env.padEnd(envColumn)}${s.help} (default ${s.helpDefault ?? (s.fallback || 'none')})`,
  )
  .join('\n')}
  ${'--help'.padEnd(flagColumn)}${''.padEnd(envColumn)}print this text and exit
`

/**
 * A setting's line in an operator command's --help, its flag in the column of the command's own
 * options (a flag too long for it on a line of its own), then its variable, `help` (the command's
 * words for it, where they differ from the service's) and default.
 */
export function commandHelpLine(name: SettingName, help?: string): string {
  const s = settings[name]
  const flag = `${s.flag} <value>`
  const rest = `${s.env.padEnd(30)}${help ?? s.help} (default ${s.helpDefault ?? s.fallback})`
  return flag.length <= 34 ? `  ${flag.padEnd(36)}${rest}` : `  ${flag}\n  ${''.padEnd(36)}${rest}`
}
