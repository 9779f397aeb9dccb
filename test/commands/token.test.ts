import { afterAll, afterEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type ChildProcess, removeTempDirs, spawnChild, stopChildren, tempDir, WAIT_MS } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

const CLI = join(import.meta.dir, '..', '..', 'src', 'cli.ts')
const REPO = join(import.meta.dir, '..', '..')
const JSON_API = 'application/vnd.api+json'

afterEach(stopChildren)
afterAll(removeTempDirs)

function cli(args: string[], env: Record<string, string> = {}): ChildProcess {
  return spawnChild(['bun', CLI, ...args], REPO, env)
}

/** Runs `catalogue token create ...` and returns its two lines. */
async function createToken(name: string, scope: string): Promise<{ token: string; line: string }> {
  const run = cli(['token', 'create', name, '--scope', scope])
  expect(await run.exitCode()).toBe(0)
  expect(run.stderr).toBe('')
  const lines = run.stdout.split('\n').filter((l) => l !== '')
  expect(lines).toHaveLength(2)
  return { token: lines[0] as string, line: lines[1] as string }
}

/** Exit code 2 and one `catalogue token:` line on stderr; returns that line. */
async function expectUsageError(run: ChildProcess): Promise<string> {
  expect(await run.exitCode()).toBe(2)
  const lines = run.stderr.split('\n').filter((l) => l !== '')
  expect(lines).toHaveLength(1)
  expect(lines[0]).toStartWith('catalogue token: ')
  expect(run.stdout).toBe('')
  return lines[0] as string
}

async function startWithTokens(lines: string[]): Promise<string> {
  const dir = tempDir('catalogue-token-')
  const file = join(dir, 'tokens')
  writeFileSync(file, `${lines.join('\n')}\n`)
  const service = cli([], {
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: `sqlite://${join(dir, 'c.db')}`,
    API_TOKENS_FILE: file,
  })
  const listening = await service.waitForLog((l) => l.msg === 'listening')
  return String(listening.url).replace(/\/$/, '')
}

function request(base: string, method: string, path: string, token?: string): Promise<Response> {
  const headers: Record<string, string> = { accept: JSON_API, 'content-type': JSON_API }
  if (token !== undefined) headers.authorization = `Bearer ${token}`
  return fetch(`${base}${path}`, {
    method,
    headers,
    body: method === 'POST' ? JSON.stringify({ data: { type: 'author', attributes: { name: 'A' } } }) : undefined,
    signal: AbortSignal.timeout(WAIT_MS),
  })
}

describe('catalogue token create', () => {
  it('prints a token, then the line for the token file: NAME SCOPE and the SHA-256 of the token', async () => {
    const { token, line } = await createToken('ci', 'write')
    expect(token).toMatch(/^cat_[A-Za-z0-9_-]{43}$/)
    const hash = new Bun.CryptoHasher('sha256').update(token).digest('hex')
    expect(line).toBe(`ci write ${hash}`)
  })

  it('makes a new token each time', async () => {
    const [a, b] = await Promise.all([createToken('same', 'read'), createToken('same', 'read')])
    expect(a.token).not.toBe(b.token)
  })

  it('makes tokens the service accepts: a write token writes, a read token reads but may not write', async () => {
    const writer = await createToken('ci', 'write')
    const reader = await createToken('dashboard', 'read')
    const base = await startWithTokens(['# made by catalogue token create', writer.line, reader.line])
    expect((await request(base, 'POST', '/api/v1/authors', writer.token)).status).toBe(201)
    expect((await request(base, 'GET', '/api/v1/authors', reader.token)).status).toBe(200)
    expect((await request(base, 'POST', '/api/v1/authors', reader.token)).status).toBe(403)
    expect((await request(base, 'GET', '/api/v1/authors')).status).toBe(401)
    expect((await request(base, 'GET', '/api/v1/authors', `${reader.token}x`)).status).toBe(401)
  })

  it('accepts --scope=read', async () => {
    const run = cli(['token', 'create', 'reports', '--scope=read'])
    expect(await run.exitCode()).toBe(0)
    expect(run.stdout.split('\n')[1]).toStartWith('reports read ')
  })
})

describe('catalogue token --help', () => {
  it('prints the usage and exits 0, after the action too', async () => {
    for (const args of [
      ['token', '--help'],
      ['token', 'create', '--help'],
    ]) {
      const run = cli(args)
      expect(await run.exitCode()).toBe(0)
      expect(run.stdout).toContain('catalogue token create NAME --scope read|write')
      expect(run.stdout).toContain('SIGHUP')
    }
  })

  it('is listed in catalogue --help', async () => {
    const run = cli(['--help'])
    expect(await run.exitCode()).toBe(0)
    expect(run.stdout).toMatch(/^ {2}token +make an API token/m)
  })
})

describe('catalogue token with bad input', () => {
  it.each([
    ['no action', ['token'], 'say what to do'],
    ['an unknown action', ['token', 'delete', 'ci'], 'unknown action "delete"'],
    ['no name', ['token', 'create', '--scope', 'read'], 'a NAME is needed'],
    ['a name with a space', ['token', 'create', 'c i', '--scope', 'read'], 'the name must be'],
    ['a name of 65 characters', ['token', 'create', 'n'.repeat(65), '--scope', 'read'], 'the name must be'],
    ['no scope', ['token', 'create', 'ci'], '--scope read|write is needed'],
    ['--scope without a value', ['token', 'create', 'ci', '--scope'], '--scope needs a value'],
    ['an unknown scope', ['token', 'create', 'ci', '--scope', 'admin'], '--scope must be read or write (got "admin")'],
    ['two scopes', ['token', 'create', 'ci', '--scope', 'read', '--scope=write'], '--scope is given twice'],
    ['two names', ['token', 'create', 'ci', 'cd', '--scope', 'read'], 'one NAME only'],
    ['an unknown option', ['token', 'create', 'ci', '--scope', 'read', '--ttl', '5'], 'unknown option "--ttl"'],
  ])('exits 2 with one line for %s', async (_, args, message) => {
    expect(await expectUsageError(cli(args))).toContain(message)
  })
})
