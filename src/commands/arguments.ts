import { parseArgs } from 'node:util'
import {
  type CommandStoreSettings,
  ConfigError,
  parseStoreSettings,
  type StoreSettingName,
  settingFlag,
} from '../config'
import { UsageError } from './command'

type Flags = Readonly<Record<string, { readonly type: 'string' | 'boolean' }>>

type Values<F extends Flags> = {
  readonly [K in keyof F]?: F[K]['type'] extends 'string' ? string : boolean
}

export interface CommandArguments<F extends Flags, N extends StoreSettingName> {
  readonly values: Values<F>
  readonly positionals: readonly string[]
  readonly store: CommandStoreSettings<N>
}

/**
 * Reads a command's arguments with node:util's parseArgs: `flags`, the flags of the database
 * settings `storeSettings` (read as the service reads them; no other setting's flag is taken) and
 * at most `maxPositionals` file names. Anything else is a UsageError naming the command's --help.
 */
export function parseCommandArguments<F extends Flags, N extends StoreSettingName>(
  command: string,
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  flags: F,
  maxPositionals: number,
  storeSettings: readonly N[],
): CommandArguments<F, N> {
  const storeFlags = Object.fromEntries(storeSettings.map((name) => [settingFlag(name), { type: 'string' as const }]))
  let parsed: ReturnType<typeof parseArgs>
  try {
    parsed = parseArgs({ args: [...argv], options: { ...flags, ...storeFlags }, allowPositionals: true, strict: true })
  } catch (error) {
    // parseArgs explains at length how to pass a name that starts with "-": its first sentence is enough.
    const first = (error as Error).message.split('. ')[0]
    throw new UsageError(`${first} (see catalogue ${command} --help)`)
  }
  if (parsed.positionals.length > maxPositionals) {
    throw new UsageError(
      `unexpected argument "${parsed.positionals[maxPositionals]}" (see catalogue ${command} --help)`,
    )
  }
  const values = parsed.values as Record<string, string | boolean | undefined>
  try {
    const given: Partial<Record<N, string>> = {}
    for (const name of storeSettings) {
      const value = values[settingFlag(name)]
      if (typeof value === 'string') given[name] = value
    }
    const store = parseStoreSettings(storeSettings, given, env)
    return { values: values as Values<F>, positionals: parsed.positionals, store }
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(error.message)
    throw error
  }
}
