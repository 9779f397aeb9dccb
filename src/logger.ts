/** Structured logs: one JSON object a line on stdout, filtered by LOG_LEVEL. */
export const logLevels = ['debug', 'info', 'warn', 'error', 'silent'] as const
export type LogLevel = (typeof logLevels)[number]

type LogValue = string | number | boolean | null | undefined
/** A line's fields: plain values, or a map of them (a request's headers). */
export type LogFields = Readonly<Record<string, LogValue | Readonly<Record<string, LogValue>>>>

export interface Logger {
  readonly level: LogLevel
  enabled(level: Exclude<LogLevel, 'silent'>): boolean
  log(level: Exclude<LogLevel, 'silent'>, message: string, fields?: LogFields): void
  /** Writes out what is buffered; call before exiting. */
  flush(): void
}

export interface LogSink {
  write(line: string): void
  flush(): void
}

/**
 * Standard output, written once per event-loop turn rather than once per line: under load one
 * write carries many request lines.
 */
export function stdoutSink(): LogSink {
  const writer = Bun.stdout.writer()
  let buffered: string[] = []
  // Once stdout is gone (its reader exited: a supervisor killed, `| head`), lines are dropped: the
  // service goes on, and stops cleanly, without anyone to read them.
  let closed = false
  const flush = () => {
    if (buffered.length === 0) return
    const text = `${buffered.join('\n')}\n`
    buffered = []
    if (closed) return
    try {
      writer.write(text)
      writer.flush()
    } catch {
      closed = true
    }
  }
  return {
    write(line) {
      if (buffered.push(line) === 1) setImmediate(flush)
    },
    flush,
  }
}

let timeMs = Number.NaN
let timeText = ''

/** Now in ISO 8601, formatted once a millisecond: under load, many request lines share it. */
function isoNow(): string {
  const now = Date.now()
  if (now !== timeMs) {
    timeMs = now
    timeText = new Date(now).toISOString()
  }
  return timeText
}

/**
 * Lines are `{"time":…,"level":…,"msg":…,…fields}`, written as text around one JSON.stringify of the
 * fields (a logged request costs a few microseconds, and copying its fields into a new object was
 * a tenth of them). No caller names a field time, level or msg.
 */
export function createLogger(level: LogLevel, sink: LogSink = stdoutSink()): Logger {
  const threshold = logLevels.indexOf(level)
  const enabled = (at: Exclude<LogLevel, 'silent'>) => logLevels.indexOf(at) >= threshold
  return {
    level,
    enabled,
    log(at, message, fields) {
      if (!enabled(at)) return
      const head = `{"time":"${isoNow()}","level":"${at}","msg":${JSON.stringify(message)}`
      const rest = fields === undefined ? '{}' : JSON.stringify(fields)
      sink.write(rest === '{}' ? `${head}}` : `${head},${rest.slice(1)}`)
    },
    flush: () => sink.flush(),
  }
}

/** `logger` with `fields` added to every line (a worker's number, say). */
export function withFields(logger: Logger, fields: LogFields): Logger {
  return {
    level: logger.level,
    enabled: logger.enabled,
    log: (at, message, more) => logger.log(at, message, { ...fields, ...more }),
    flush: () => logger.flush(),
  }
}
