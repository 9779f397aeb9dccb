import { afterAll, afterEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import packageJson from '../../package.json'
import { type Config, parseConfig, settingVariables } from '../../src/config'
import { TrustedProxies } from '../../src/http/access/trusted-proxies'
import { CLI, REPO, runCli, startService, tempDatabase } from '../support/commands'
import { removeTempDirs, spawnChild, stopChildren, tempDir, WAIT_MS } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/*
 * The deployment files say things about the code: a flag, a variable, a command, a signal, a path
 * the build writes. Each is checked here against the code, and run where a test can run it. (CI
 * also runs `systemd-analyze verify` and `docker build` where those tools work: .ci/run.)
 */

afterEach(stopChildren)
afterAll(removeTempDirs)

/** The directives of a systemd unit by section, each key with its values in order. */
function readUnit(path: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>()
  let section: Map<string, string[]> | undefined
  for (const raw of readFileSync(path, 'utf8').split('\n')) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue
    const header = /^\[(.+)\]$/.exec(line)
    if (header) {
      section = new Map()
      sections.set(header[1] as string, section)
      continue
    }
    const equals = line.indexOf('=')
    if (!section || equals === -1) throw new Error(`not a directive: ${line}`)
    const key = line.slice(0, equals)
    section.set(key, [...(section.get(key) ?? []), line.slice(equals + 1)])
  }
  return sections
}

interface Instruction {
  readonly name: string
  readonly args: string
}

/** A Dockerfile's stages, each a list of instructions (continued lines joined, comments dropped). */
function readDockerfile(path: string): Instruction[][] {
  const text = readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => !line.trim().startsWith('#'))
    .join('\n')
    .replace(/\\\n/g, ' ')
  const stages: Instruction[][] = []
  for (const line of text.split('\n')) {
    const match = /^\s*([A-Z]+)\s+(.*)$/.exec(line)
    if (!match) continue
    const instruction = { name: match[1] as string, args: (match[2] as string).trim().replace(/\s+/g, ' ') }
    if (instruction.name === 'FROM') stages.push([])
    stages.at(-1)?.push(instruction)
  }
  return stages
}

const only = (stage: Instruction[], name: string): string[] => stage.filter((i) => i.name === name).map((i) => i.args)
const variablesOf = (assignments: string[]): Record<string, string> =>
  Object.fromEntries(assignments.flatMap((a) => a.split(' ')).map((pair) => pair.split('=', 2) as [string, string]))

const unit = readUnit(join(REPO, 'deploy', 'catalogue.service'))
const service = unit.get('Service') ?? new Map<string, string[]>()
const directive = (key: string): string => (service.get(key) ?? []).join(' ')
const [buildStage = [], runStage = []] = readDockerfile(join(REPO, 'Dockerfile'))
const outfile = packageJson.scripts.build.split(/\s+/).at(-1) as string

describe('deploy/catalogue.service', () => {
  it('runs the service with flags and variables that are settings, its data in its state directory', () => {
    const [program, command, ...flags] = directive('ExecStart').split(' ')
    expect({ program, command }).toEqual({ program: '/usr/local/bin/catalogue', command: 'serve' })
    const environment = variablesOf(service.get('Environment') ?? [])
    for (const name of Object.keys(environment)) expect(settingVariables).toContain(name)
    // %S is the system's state directory root, /var/lib.
    const config = parseConfig(
      flags.map((flag) => flag.replaceAll('%S', '/var/lib')),
      environment,
    ) as Config
    expect(config.dataDir).toBe(`/var/lib/${directive('StateDirectory')}`)
    expect(config.databaseUrl).toBe(`sqlite:///var/lib/${directive('StateDirectory')}/catalogue.db`)
    expect(directive('WorkingDirectory')).toBe('%S/catalogue')
  })

  it('reloads by SIGHUP, restarts on failure and waits longer than SHUTDOWN_TIMEOUT for a stop', () => {
    expect(directive('ExecReload')).toBe('/bin/kill -HUP $MAINPID')
    expect(['on-failure', 'always']).toContain(directive('Restart'))
    expect(directive('KillMode')).toBe('mixed')
    const shutdownTimeout = (parseConfig([], {}) as Config).shutdownTimeout
    expect(Number.parseInt(directive('TimeoutStopSec'), 10)).toBeGreaterThan(shutdownTimeout + 5)
    expect(directive('DynamicUser')).toBe('yes')
    expect(directive('ProtectSystem')).toBe('strict')
  })

  it('listens on loopback for a proxy on the same machine, and trusts that proxy to name the client', () => {
    const config = parseConfig([], variablesOf(service.get('Environment') ?? [])) as Config
    expect(config.host).toBe('127.0.0.1')
    const proxies = new TrustedProxies(config.trustedProxies)
    // The proxy calls from the loopback address the service listens on; no other address is trusted.
    expect(proxies.has(config.host)).toBe(true)
    expect(proxies.has('10.0.0.1')).toBe(false)
  })

  it('as systemd would run it: ExecStart serves from the state directory, ExecReload keeps it running, SIGTERM stops it', async () => {
    const stateRoot = tempDir('catalogue-unit-')
    const [, ...args] = directive('ExecStart').replaceAll('%S', stateRoot).split(' ')
    const environment = { ...variablesOf(service.get('Environment') ?? []), PORT: '0' }
    // systemd makes the state directory before the start; the working directory is in it.
    const workingDirectory = directive('WorkingDirectory').replaceAll('%S', stateRoot)
    mkdirSync(workingDirectory)
    const child = spawnChild(['bun', CLI, ...args], workingDirectory, environment)
    const listening = await child.waitForLog((line) => line.msg === 'listening')
    expect(existsSync(join(stateRoot, 'catalogue', 'catalogue.db'))).toBe(true)

    const [kill, ...killArgs] = directive('ExecReload').replace('$MAINPID', String(child.proc.pid)).split(' ')
    const reload = Bun.spawn([kill as string, ...killArgs])
    expect(await reload.exited).toBe(0)
    await child.waitForLog((line) => String(line.msg).startsWith('SIGHUP'))
    const health = await fetch(new URL('/health', String(listening.url)), { signal: AbortSignal.timeout(WAIT_MS) })
    expect(health.status).toBe(200)

    child.proc.kill('SIGTERM')
    expect(await child.exitCode()).toBe(0)
    expect(child.logs.at(-1)?.msg).toBe('stopped')
  })
})

describe('Dockerfile', () => {
  it('builds with the Bun the tests run on, by `bun run build`, and copies what that build writes', () => {
    expect(only(buildStage, 'FROM')).toEqual([`oven/bun:${Bun.version} AS build`])
    expect(only(buildStage, 'RUN').some((run) => run.startsWith('bun run build'))).toBe(true)
    const workdir = only(buildStage, 'WORKDIR')[0]
    expect(only(runStage, 'COPY')).toContain(
      `--from=build ${join(workdir as string, outfile)} /usr/local/bin/catalogue`,
    )
  })

  it('lets into the build context every file the build stage copies', () => {
    const allowed = readFileSync(join(REPO, '.dockerignore'), 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('!'))
      .map((line) => line.slice(1).replace(/\/$/, ''))
    const copied = only(buildStage, 'COPY').flatMap((args) => args.split(' ').slice(0, -1))
    expect(copied.length).toBeGreaterThan(0)
    for (const source of copied) expect(allowed).toContain(source.replace(/\/$/, ''))
  })

  it('runs as a user that is not root, keeps DATA_DIR in the volume, and sets only real settings', () => {
    const user = only(runStage, 'USER')[0] as string
    expect(user.split(':')[0]).not.toMatch(/^(root|0)$/)
    const environment = variablesOf(only(runStage, 'ENV'))
    for (const name of Object.keys(environment)) expect(settingVariables).toContain(name)
    expect(only(runStage, 'VOLUME')).toEqual([JSON.stringify([environment.DATA_DIR])])
    expect(only(runStage, 'ENTRYPOINT')).toEqual(['["catalogue"]'])
  })

  it('HEALTHCHECK runs `catalogue healthcheck`, which answers 0 for the running service and 1 once it is gone', async () => {
    const healthcheck = only(runStage, 'HEALTHCHECK')[0] as string
    const command = JSON.parse(healthcheck.slice(healthcheck.indexOf('CMD ') + 4)) as string[]
    expect(command[0]).toBe('catalogue')
    const environment = variablesOf(only(runStage, 'ENV'))
    const running = await startService({ HOST: environment.HOST as string, DATABASE_URL: tempDatabase().url })
    const port = new URL(running.api).port
    const up = await runCli(command.slice(1), { env: { HOST: environment.HOST as string, PORT: port } })
    expect({ code: up.code, stderr: up.stderr }).toEqual({ code: 0, stderr: '' })
    running.child.proc.kill('SIGTERM')
    expect(await running.child.exitCode()).toBe(0)
    const down = await runCli(command.slice(1), { env: { HOST: environment.HOST as string, PORT: port } })
    expect(down.code).toBe(1)
  })
})

interface ComposeService {
  readonly image?: string
  readonly command?: string[]
  readonly environment?: Record<string, string>
  readonly deploy?: { readonly replicas?: number }
}

const compose = Bun.YAML.parse(readFileSync(join(REPO, 'deploy', 'compose.yaml'), 'utf8')) as {
  services: Record<string, ComposeService>
}
const composeService = (name: string): ComposeService => compose.services[name] ?? {}

describe('deploy/compose.yaml', () => {
  const env = composeService('api').environment ?? {}

  it('gives the instances and the migration only settings the service takes, with values it accepts, and its own database', () => {
    expect(composeService('migrate').environment).toEqual(env)
    expect(composeService('migrate').command).toEqual(['migrate'])
    for (const name of Object.keys(env)) expect(settingVariables).toContain(name)
    expect(parseConfig([], env)).toMatchObject({ databaseUrl: env.DATABASE_URL })
    const db = composeService('db').environment ?? {}
    const url = new URL(env.DATABASE_URL as string)
    expect({ host: url.hostname, user: url.username, password: url.password, database: url.pathname.slice(1) }).toEqual(
      {
        host: 'db',
        user: db.POSTGRES_USER as string,
        password: db.POSTGRES_PASSWORD as string,
        database: db.POSTGRES_DB as string,
      },
    )
  })

  it("keeps the instances' connections within the postgres image's max_connections, with room to spare", () => {
    const config = parseConfig([], env) as Config
    // WORKERS=auto would depend on the cores of the host it lands on: the sum below must not.
    expect(env.WORKERS).toMatch(/^\d+$/)
    const instances = composeService('api').deploy?.replicas ?? 1
    // Each process: its pool, and one connection for the change feed's LISTEN (docs/deployment.md).
    const perProcess = config.databasePoolSize + 1
    const steady = instances * config.workers * perProcess
    // For a moment at start: the migration's connection and each supervisor's; then psql, pg_dump, an export.
    const transient = 1 + instances
    const room = 5
    const command = composeService('db').command ?? []
    const set = command.find((arg) => arg.startsWith('max_connections='))
    // The image's default is PostgreSQL's; 3 of them are kept for superusers.
    const maxConnections = set ? Number(set.split('=')[1]) : 100
    expect(steady + transient + room).toBeLessThanOrEqual(maxConnections - 3)
    expect(readFileSync(join(REPO, 'deploy', 'compose.yaml'), 'utf8')).toContain(
      `${instances} instances x ${config.workers} workers x (${config.databasePoolSize} + 1)\n# = ${steady}`,
    )
  })
})
