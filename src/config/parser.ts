import type { Config, SettingName } from './service-config'
import { ConfigError } from './setting'
import { settingNames, settings } from './table'

/*
 * The one reader of settings: a flag's text, else its environment variable's (where Bun has put a
 * .env file's values too, when run from the source), else the default, each read by its kind.
 */

/** The text each setting was given, by its flag or else its variable; a setting not in it is unset. */
export type Given = ReadonlyMap<SettingName, string>

/** Every setting's value as its kind reads it, before the rules between settings (rules.ts). */
export type Values = { readonly [K in SettingName]: Config[K] }

const byFlag = new Map(settingNames.map((name) => [settings[name].flag as string, name]))

/** What the command line and the environment give each setting; `'help'` when --help (or -h) was asked. */
export function givenOnCommandLine(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): Given | 'help' {
  const fromFlags: Partial<Record<SettingName, string>> = {}
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string
    if (arg === '--help' || arg === '-h') return 'help'
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg]
    const name = byFlag.get(flag as string)
    if (name === undefined) throw new ConfigError(`unknown option "${arg}" (see --help)`)
    const value = inline ?? argv[++i]
    if (value === undefined) throw new ConfigError(`${flag} needs a value`)
    fromFlags[name] = value
  }
  return givenBy(fromFlags, env)
}

/**
 * What flags already taken apart (by setting) and the environment give each of `names` (every
 * setting unless told): the flag wins. No other setting's variable is read.
 */
export function givenBy(
  flags: Readonly<Partial<Record<SettingName, string>>>,
  env: Readonly<Record<string, string | undefined>>,
  names: readonly SettingName[] = settingNames,
): Given {
  const given = new Map<SettingName, string>()
  for (const name of names) {
    const text = flags[name] ?? env[settings[name].env]
    if (text !== undefined) given.set(name, text)
  }
  return given
}

/** One setting's value: the text it was given, else its default, read by its kind. */
export function settingValue<K extends SettingName>(name: K, given: Given): Config[K] {
  const setting = settings[name]
  return setting.kind.parse(given.get(name) ?? setting.fallback, setting.env)
}

/** Every setting's value, read in the table's order: a ConfigError names the first bad one. */
export function settingValues(given: Given): Values {
  return Object.fromEntries(settingNames.map((name) => [name, settingValue(name, given)])) as Values
}
