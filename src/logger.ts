/** Structured logs: one JSON object a line on stdout, filtered by LOG_LEVEL. */
export const logLevels = ['debug', 'info', 'warn', 'error', 'silent'] as const
export type LogLevel = (typeof logLevels)[number]

export type LogFields = Readonly<Record<string, string | number | boolean | null | undefined>>

export interface Logger {
  readonly level: LogLevel
  enabled(level: Exclude<LogLevel, 'silent'>): boolean
  log(level: Exclude<LogLevel, 'silent'>, message: string, fields?: LogFields): void
}

export function createLogger(level: LogLevel, write: (line: string) => void = (line) => console.log(line)): Logger {
  const threshold = logLevels.indexOf(level)
  const enabled = (at: Exclude<LogLevel, 'silent'>) => logLevels.indexOf(at) >= threshold
  return {
    level,
    enabled,
    log(at, message, fields) {
      if (!enabled(at)) return
      write(JSON.stringify({ time: new Date().toISOString(), level: at, msg: message, ...fields }))
    },
  }
}
