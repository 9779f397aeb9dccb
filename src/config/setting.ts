/*
 * What one setting is: its flag, its environment variable, the kind of value it takes (which reads
 * and checks the text), its default and the words that describe it in --help and in the docs.
 * Every setting is one entry of the table in table.ts; nothing else parses a setting by hand.
 */

/** A bad setting: reported as one line, exit code 2. */
export class ConfigError extends Error {}

/** How a setting's text becomes its value, and what it accepts, in words. */
export interface Kind<T> {
  /** The value of `text`; a ConfigError, naming the setting by its variable `name`, when it is not one. */
  readonly parse: (text: string, name: string) => T
  /** What it takes, in markdown, for the Accepts column of docs/configuration.md. */
  readonly accepts: string
}

export interface Setting<T> {
  readonly flag: `--${string}`
  readonly env: string
  readonly kind: Kind<T>
  /** The default, as the text a flag would give ('' for none): --help shows it, and the kind reads it. */
  readonly fallback: string
  /** The line of `catalogue --help`. */
  readonly help: string
  /** The default as --help shows it, where `fallback` is '' but stands for something (another setting). */
  readonly helpDefault?: string
  /** The Meaning column of docs/configuration.md (markdown; links relative to docs/). */
  readonly doc: string
  /** The Default column, where the default alone says too little (markdown). */
  readonly docDefault?: string
  /** The README's shorter Meaning (links relative to the README): only the settings most often set have one. */
  readonly brief?: string
}

const range = (min: number, max: number) => `\`${min}\`–\`${max}\``

/** A whole number from `min` to `max`, `unit` (seconds, milliseconds, bytes...) naming what it counts in the docs. */
export function integer(min: number, max: number, unit = ''): Kind<number> {
  return {
    parse: (text, name) => {
      if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
        throw new ConfigError(`${name} must be an integer from ${min} to ${max} (got "${text}")`)
      }
      return Number(text)
    },
    accepts: unit === '' ? range(min, max) : `${range(min, max)} ${unit}`,
  }
}

export const seconds = (min: number, max: number) => integer(min, max, 'seconds')
export const milliseconds = (min: number, max: number) => integer(min, max, 'ms')
export const bytes = (min: number, max: number) => integer(min, max, 'bytes')

/** A whole number from `min` to `max`, or `auto`: the number `auto()` picks. */
export function integerOrAuto(min: number, max: number, auto: () => number): Kind<number> {
  return {
    parse: (text, name) => {
      const value = text === 'auto' ? auto() : Number(text)
      if (!/^(\d+|auto)$/.test(text) || value < min || value > max) {
        throw new ConfigError(`${name} must be an integer from ${min} to ${max} or auto (got "${text}")`)
      }
      return value
    },
    accepts: `${range(min, max)} or \`auto\``,
  }
}

export const boolean: Kind<boolean> = {
  parse: (text, name) => {
    if (text !== 'true' && text !== 'false') throw new ConfigError(`${name} must be true or false (got "${text}")`)
    return text === 'true'
  },
  accepts: '`true`, `false`',
}

/** One of `values`, written exactly so. */
export function oneOf<const V extends string>(values: readonly V[]): Kind<V> {
  return {
    parse: (text, name) => {
      if (!(values as readonly string[]).includes(text)) {
        throw new ConfigError(`${name} must be one of ${values.join(', ')} (got "${text}")`)
      }
      return text as V
    },
    accepts: values.map((value) => `\`${value}\``).join(', '),
  }
}

/** Any text but blank, as given. */
export function text(accepts: string): Kind<string> {
  return {
    parse: (value, name) => {
      if (value.trim() === '') throw new ConfigError(`${name} must not be empty`)
      return value
    },
    accepts,
  }
}

/** A path, trimmed; blank: none. */
export function optionalPath(accepts: string): Kind<string | null> {
  return { parse: (value) => value.trim() || null, accepts }
}

/** Items separated by commas, each trimmed, the empty ones dropped. */
export function list(accepts: string): Kind<string[]> {
  return {
    parse: (value) =>
      value
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== ''),
    accepts,
  }
}

/** A kind whose check lives with what it configures: `check` answers the value, or why the text is not one. */
export function checkedBy<T>(accepts: string, check: (text: string) => T | { readonly error: string }): Kind<T> {
  return {
    parse: (value) => {
      const checked = check(value)
      if (checked !== null && typeof checked === 'object' && 'error' in checked) throw new ConfigError(checked.error)
      return checked as T
    },
    accepts,
  }
}
