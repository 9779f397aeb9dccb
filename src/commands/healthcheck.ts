import { parseArgs } from 'node:util'
import { addressSettingsHelp, ConfigError, parseAddressSettings } from '../config'
import { HEALTH_PATH, READY_PATH } from '../http/observability/health'
import { type Command, UsageError } from './command'

const DEFAULT_TIMEOUT_S = 3

const help = `catalogue healthcheck: ask the running service whether it answers

Usage: catalogue healthcheck [--ready] [--timeout <seconds>] [--host <host>] [--port <port>]

Asks GET ${HEALTH_PATH} (the process answers) or, with --ready, GET ${READY_PATH} (its database answers
too) of the service at HOST and PORT, read as the service reads them; a service listening on every
address (0.0.0.0, ::) is asked on the loopback one. For probes that have no HTTP client, such as the
Docker image's HEALTHCHECK (docs/deployment.md).

Options:
  --ready                             ask ${READY_PATH} rather than ${HEALTH_PATH}
  --timeout <seconds>                 how long to wait for the answer, 1 to 300 (default ${DEFAULT_TIMEOUT_S})
${addressSettingsHelp}
  --help                              print this text and exit

Exit status: 0 the service answered 200, 1 it did not (one line on stderr says why), 2 bad arguments.
`

/** The URL that reaches a service listening on `host`: every address means this machine's loopback. */
export function probeUrl(host: string, port: number, path: string): string {
  const bare = host.replace(/^\[(.*)\]$/, '$1')
  const reachable = bare === '0.0.0.0' ? '127.0.0.1' : bare === '::' ? '::1' : bare
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}${path}`
}

/** Why a request got no answer, in a few words. */
function failureOf(error: unknown, timeoutS: number): string {
  const { name, code, message } = error as Error & { code?: string }
  if (name === 'TimeoutError') return `no answer within ${timeoutS} s`
  if (code === 'ConnectionRefused' || code === 'ECONNREFUSED') return 'connection refused (is the service running?)'
  return code ? `${code}: ${message}` : message
}

function parse(argv: readonly string[], env: Readonly<Record<string, string | undefined>>) {
  let values: { ready?: boolean; timeout?: string; host?: string; port?: string }
  try {
    const parsed = parseArgs({
      args: [...argv],
      options: {
        ready: { type: 'boolean' },
        timeout: { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
      },
      allowPositionals: false,
      strict: true,
    })
    values = parsed.values
  } catch (error) {
    throw new UsageError(`${(error as Error).message.split('. ')[0]} (see catalogue healthcheck --help)`)
  }
  const timeout = values.timeout ?? String(DEFAULT_TIMEOUT_S)
  if (!/^\d+$/.test(timeout) || Number(timeout) < 1 || Number(timeout) > 300) {
    throw new UsageError(`--timeout must be an integer from 1 to 300 (got "${timeout}")`)
  }
  try {
    const { host, port } = parseAddressSettings(values, env)
    if (port === 0) throw new UsageError('PORT=0 names no port to ask: give the port the service listens on')
    return { url: probeUrl(host, port, values.ready ? READY_PATH : HEALTH_PATH), timeoutS: Number(timeout) }
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(error.message)
    throw error
  }
}

async function healthcheck(argv: readonly string[], env: Readonly<Record<string, string | undefined>>) {
  const { url, timeoutS } = parse(argv, env)
  let response: Response
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(timeoutS * 1000), redirect: 'manual' })
  } catch (error) {
    console.error(`catalogue healthcheck: ${url}: ${failureOf(error, timeoutS)}`)
    return 1
  }
  const body = (await response.text().catch(() => '')).replace(/\s+/g, ' ').trim().slice(0, 200)
  if (response.status !== 200) {
    console.error(`catalogue healthcheck: ${url}: ${response.status} ${body}`)
    return 1
  }
  console.log(`${url}: 200 ${body}`)
  return 0
}

export const healthcheckCommand: Command = {
  name: 'healthcheck',
  summary: 'ask the running service whether it answers (/health, or /ready): exit 0 or 1',
  help,
  run: healthcheck,
}
