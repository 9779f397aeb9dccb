import { afterAll, afterEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type ChildProcess, removeTempDirs, spawnChild, stopChildren, tempDir, WAIT_MS } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

// The service as a child process with API_TOKENS_FILE: reading the file at start and on SIGHUP,
// and what the log says (and never says) about tokens.

const CLI = join(import.meta.dir, '..', '..', 'src', 'cli.ts')
const REPO = join(import.meta.dir, '..', '..')
const JSON_API = 'application/vnd.api+json'

const OLD = 'cat_old-token-0123456789abcdefghijklmnopqrstuvwxyz0'
const NEW = 'cat_new-token-0123456789abcdefghijklmnopqrstuvwxyz0'
const sha256 = (token: string) => new Bun.CryptoHasher('sha256').update(token).digest('hex')

afterEach(stopChildren)
afterAll(removeTempDirs)

interface Started {
  readonly cli: ChildProcess
  readonly base: string
  readonly tokenFile: string
}

/** A folder with a token file holding `text` and a database; the service not started yet. */
function prepare(text: string | null): { dir: string; tokenFile: string; env: Record<string, string> } {
  const dir = tempDir('catalogue-access-')
  const tokenFile = join(dir, 'tokens')
  if (text !== null) writeFileSync(tokenFile, text)
  return {
    dir,
    tokenFile,
    env: { PORT: '0', HOST: '127.0.0.1', DATABASE_URL: `sqlite://${join(dir, 'c.db')}`, API_TOKENS_FILE: tokenFile },
  }
}

async function start(text: string | null, env: Record<string, string> = {}): Promise<Started> {
  const prepared = prepare(text)
  const cli = spawnChild(['bun', CLI], REPO, { ...prepared.env, ...env })
  const listening = await cli.waitForLog((l) => l.msg === 'listening')
  return { cli, base: String(listening.url).replace(/\/$/, ''), tokenFile: prepared.tokenFile }
}

function get(base: string, path: string, token?: string): Promise<Response> {
  const headers: Record<string, string> = { accept: JSON_API }
  if (token !== undefined) headers.authorization = `Bearer ${token}`
  return fetch(`${base}${path}`, { headers, signal: AbortSignal.timeout(WAIT_MS) })
}

/** Sends SIGHUP and waits for the log line with `msg`. */
async function reload(cli: ChildProcess, msg: string): Promise<void> {
  cli.proc.kill('SIGHUP')
  await cli.waitForLog((line) => line.msg === msg)
}

/** Exit code 2 and one `catalogue:` line on stderr; returns that line. */
async function expectStartupFailure(cli: ChildProcess): Promise<string> {
  expect(await cli.exitCode()).toBe(2)
  const lines = cli.stderr.split('\n').filter((l) => l !== '')
  expect(lines).toHaveLength(1)
  expect(lines[0]).toStartWith('catalogue: API_TOKENS_FILE: ')
  return lines[0] as string
}

describe('API_TOKENS_FILE at start', () => {
  it('stops with one line and exit 2 when the file is missing', async () => {
    const { env, tokenFile } = prepare(null)
    const line = await expectStartupFailure(spawnChild(['bun', CLI], REPO, env))
    expect(line).toBe(`catalogue: API_TOKENS_FILE: cannot read ${tokenFile}: no such file`)
  })

  it('stops with one line and exit 2 naming the bad line of a malformed file', async () => {
    const { env, tokenFile } = prepare(`old read ${sha256(OLD)}\nnew admin ${sha256(NEW)}\n`)
    const line = await expectStartupFailure(spawnChild(['bun', CLI], REPO, env))
    expect(line).toStartWith(`catalogue: API_TOKENS_FILE: ${tokenFile} line 2: the scope must be read or write`)
  })

  it('logs how many tokens it read', async () => {
    const { cli, tokenFile } = await start(`old read ${sha256(OLD)}\nnew write ${sha256(NEW)}\n`)
    const loaded = await cli.waitForLog((l) => l.msg === 'API tokens loaded')
    expect(loaded).toMatchObject({ level: 'info', file: tokenFile, tokens: 2 })
  })

  it('warns when the file lists no tokens', async () => {
    const { cli, base } = await start('# nobody yet\n')
    const warning = await cli.waitForLog((l) => l.level === 'warn')
    expect(warning.msg).toContain('lists no tokens')
    expect((await get(base, '/api/v1/authors')).status).toBe(401)
  })
})

describe('SIGHUP', () => {
  it('reads the token file again: an added token is accepted, a removed one refused', async () => {
    const { cli, base, tokenFile } = await start(`old read ${sha256(OLD)}\n`)
    expect((await get(base, '/api/v1/authors', OLD)).status).toBe(200)
    expect((await get(base, '/api/v1/authors', NEW)).status).toBe(401)
    writeFileSync(tokenFile, `# old is revoked\nnew read ${sha256(NEW)}\n`)
    await reload(cli, 'API tokens reloaded')
    expect(cli.logs.find((l) => l.msg === 'API tokens reloaded')).toMatchObject({ file: tokenFile, tokens: 1 })
    expect((await get(base, '/api/v1/authors', NEW)).status).toBe(200)
    expect((await get(base, '/api/v1/authors', OLD)).status).toBe(401)
  })

  it('keeps the tokens in force and logs an error when the file has become unusable', async () => {
    const { cli, base, tokenFile } = await start(`old read ${sha256(OLD)}\n`)
    writeFileSync(tokenFile, `new read ${sha256(NEW)}\nbroken line\n`)
    await reload(cli, 'API tokens not reloaded: the previous ones stay in force')
    const error = cli.logs.find((l) => l.level === 'error')
    expect(error).toMatchObject({ file: tokenFile })
    expect(String(error?.error)).toContain('line 2')
    expect((await get(base, '/api/v1/authors', OLD)).status).toBe(200)
    expect((await get(base, '/api/v1/authors', NEW)).status).toBe(401)

    writeFileSync(tokenFile, `new read ${sha256(NEW)}\n`)
    await reload(cli, 'API tokens reloaded')
    expect((await get(base, '/api/v1/authors', NEW)).status).toBe(200)
  })
})

describe('the log with API tokens', () => {
  it('names the token and gives the query in each request line, and never holds a token', async () => {
    const { cli, base } = await start(`old read ${sha256(OLD)}\nnew write ${sha256(NEW)}\n`)
    expect((await get(base, '/api/v1/authors?sort=-name&page[size]=2', OLD)).status).toBe(200)
    expect((await get(base, '/api/v1/authors', 'cat_a-wrong-token')).status).toBe(401)
    const named = await cli.waitForLog((l) => l.msg === 'request' && l.status === 200)
    expect(named).toMatchObject({ path: '/api/v1/authors', query: 'sort=-name&page[size]=2', token: 'old' })
    const refused = await cli.waitForLog((l) => l.msg === 'request' && l.status === 401)
    expect(refused.token).toBeUndefined()
    cli.proc.kill('SIGTERM')
    expect(await cli.exitCode()).toBe(0)
    for (const secret of [OLD, NEW, 'cat_a-wrong-token']) {
      expect(cli.stdout).not.toContain(secret)
      expect(cli.stderr).not.toContain(secret)
    }
  })
})

describe('the start-up warning without API tokens', () => {
  const withoutTokens = (host: string) => {
    const dir = tempDir('catalogue-access-')
    return spawnChild(['bun', CLI], REPO, { PORT: '0', HOST: host, DATABASE_URL: `sqlite://${join(dir, 'c.db')}` })
  }

  it('says in one warning line that the service is open when it listens beyond loopback, and only then', async () => {
    const open = withoutTokens('0.0.0.0')
    await open.waitForLog((l) => l.msg === 'listening')
    const warning = await open.waitForLog((l) => l.level === 'warn')
    expect(warning.msg).toContain('no API tokens')
    expect(warning.host).toBe('0.0.0.0')

    const loopback = withoutTokens('127.0.0.1')
    await loopback.waitForLog((l) => l.msg === 'listening')
    const { cli: guarded } = await start(`old read ${sha256(OLD)}\n`, { HOST: '0.0.0.0' })
    await guarded.waitForLog((l) => l.msg === 'API tokens loaded')

    for (const cli of [open, loopback, guarded]) {
      cli.proc.kill('SIGTERM')
      expect(await cli.exitCode()).toBe(0)
    }
    expect(open.logs.filter((l) => l.level === 'warn')).toHaveLength(1)
    expect(loopback.logs.filter((l) => l.level === 'warn')).toEqual([])
    expect(guarded.logs.filter((l) => l.level === 'warn')).toEqual([])
  })
})
