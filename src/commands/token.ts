import { newToken, TOKEN_NAME, type TokenScope, tokenFileLine } from '../http/access/api-tokens'
import { type Command, UsageError } from './command'

const help = `catalogue token: make API tokens

Usage: catalogue token create NAME --scope read|write

Prints a new random token on the first line and, on the second, the line that lets the service
accept it: add that line to the file API_TOKENS_FILE names, then send SIGHUP to the service (or
restart it). The token itself is stored nowhere: keep it where the client can read it; it cannot
be shown again. To revoke a token, delete its line and send SIGHUP.

  NAME     what the request log calls the token: 1 to 64 letters, digits, ".", "_" or "-"
  --scope  read: GET requests only; write: every request

Example:
  catalogue token create ci --scope write
`

/** The NAME and --scope of `token create`; UsageError for anything else. */
function parseCreate(argv: readonly string[]): { name: string; scope: TokenScope } {
  let name: string | undefined
  let scope: string | undefined
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string
    if (arg === '--scope' || arg.startsWith('--scope=')) {
      if (scope !== undefined) throw new UsageError('--scope is given twice')
      scope = arg === '--scope' ? argv[++i] : arg.slice('--scope='.length)
      if (scope === undefined) throw new UsageError('--scope needs a value: read or write')
    } else if (arg.startsWith('-')) {
      throw new UsageError(`unknown option "${arg}" (see catalogue token --help)`)
    } else if (name === undefined) {
      name = arg
    } else {
      throw new UsageError(`one NAME only (got "${name}" and "${arg}")`)
    }
  }
  if (name === undefined) throw new UsageError('a NAME is needed: catalogue token create NAME --scope read|write')
  if (!TOKEN_NAME.test(name)) {
    throw new UsageError(`the name must be 1 to 64 letters, digits, ".", "_" or "-" (got "${name}")`)
  }
  if (scope === undefined) throw new UsageError('--scope read|write is needed')
  if (scope !== 'read' && scope !== 'write') throw new UsageError(`--scope must be read or write (got "${scope}")`)
  return { name, scope }
}

async function run(argv: readonly string[]): Promise<number> {
  const [action, ...rest] = argv
  if (action !== 'create') {
    throw new UsageError(
      action === undefined
        ? 'say what to do: catalogue token create NAME --scope read|write'
        : `unknown action "${action}": only create`,
    )
  }
  const { name, scope } = parseCreate(rest)
  const token = newToken()
  console.log(`${token}\n${tokenFileLine(name, scope, token)}`)
  return 0
}

export const tokenCommand: Command = {
  name: 'token',
  summary: 'make an API token: catalogue token create NAME --scope read|write',
  help,
  run,
}
