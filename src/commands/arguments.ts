import { parseArgs } from 'node:util'
import { ConfigError, parseStoreSettings, type StoreSettings, storeSettingFlags } from '../config'
import { UsageError } from './command'

type Flags = Readonly<Record<string, { readonly type: 'string' | 'boolean' }>>

/** The options every command that opens the database takes, read as the service reads them. */
const storeFlags = Object.fromEntries(
  Object.keys(storeSettingFlags).map((flag) => [flag, { type: 'string' as const }]),
) satisfies Flags

type Values<F extends Flags> = {
  readonly [K in keyof F]?: F[K]['type'] extends 'string' ? string : boolean
}

export interface CommandArguments<F extends Flags> {
  readonly values: Values<F>
  readonly positionals: readonly string[]
  readonly store: StoreSettings
}

/**
 * Reads a command's arguments with node:util's parseArgs: `flags` and the database settings,
 * at most `maxPositionals` file names. Anything else is a UsageError naming the command's --help.
 */
export function parseCommandArguments<F extends Flags>(
  command: string,
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  flags: F,
  maxPositionals: number,
): CommandArguments<F> {
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
    const given = Object.entries(storeSettingFlags).flatMap(([flag, key]) => {
      const value = values[flag]
      return typeof value === 'string' ? [[key, value] as const] : []
    })
    const store = parseStoreSettings(Object.fromEntries(given), env)
    return { values: values as Values<F>, positionals: parsed.positionals, store }
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(error.message)
    throw error
  }
}
