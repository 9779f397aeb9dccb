import { availableParallelism } from 'node:os'
import { type LogLevel, logLevels } from '../../logger'
import { boolean, integer, integerOrAuto, oneOf, type Setting, seconds, text } from '../setting'

/** The process: where it listens, what it logs, how many processes and threads serve, how it stops. */
export const serviceSettings = {
  port: {
    flag: '--port',
    env: 'PORT',
    kind: integer(0, 65535),
    fallback: '3000',
    help: 'TCP port to listen on (0 picks a free one)',
    doc: 'TCP port; `0` picks a free one (the `listening` log line says which)',
    brief: 'TCP port (`0` picks a free one)',
  },
  host: {
    flag: '--host',
    env: 'HOST',
    kind: text('an address or host name'),
    fallback: '0.0.0.0',
    help: 'address to listen on',
    doc: 'Address to listen on',
    brief: 'Address to listen on',
  },
  logLevel: {
    flag: '--log-level',
    env: 'LOG_LEVEL',
    kind: oneOf<LogLevel>(logLevels),
    fallback: 'info',
    help: logLevels.join(', '),
    doc: 'The least severe level of log line written; `silent` writes none',
    brief: logLevels.map((level) => `\`${level}\``).join(', '),
  },
  readWorkers: {
    flag: '--read-workers',
    env: 'READ_WORKERS',
    kind: integer(0, 64),
    fallback: '2',
    help: 'threads that answer lists and other reads that grow with the data (0: the main thread)',
    doc: 'Threads that answer lists and records that include to-many relationships, each with its own read-only connection (see [operations.md](operations.md)); `0` answers them on the main thread. A `:memory:` database has none. Unset with several `WORKERS`, each process has 1',
  },
  workers: {
    flag: '--workers',
    env: 'WORKERS',
    kind: integerOrAuto(1, 64, () => Math.min(availableParallelism(), 64)),
    fallback: '1',
    help: 'processes that serve on the one port, 1 to 64, or auto: one per CPU core (docs/workers.md)',
    doc: 'Processes serving the one port (`SO_REUSEPORT`); `auto` is one per core; see [workers.md](workers.md)',
    brief: 'Processes serving the one port, or `auto`: one per core ([docs/workers.md](docs/workers.md))',
  },
  shutdownTimeout: {
    flag: '--shutdown-timeout',
    env: 'SHUTDOWN_TIMEOUT',
    kind: seconds(0, 3600),
    fallback: '10',
    help: 'seconds a stop waits for requests in flight before closing their connections',
    doc: 'Seconds a stop waits for the requests in flight before it closes their connections',
  },
  metrics: {
    flag: '--metrics',
    env: 'METRICS',
    kind: boolean,
    fallback: 'true',
    help: 'serve GET /metrics, the Prometheus metrics: true or false (then 404, and no metric is kept)',
    doc: '`false`: no `/metrics` (404) and no metric work per request',
  },
} satisfies Record<string, Setting<unknown>>
