import { describe, expect, it } from 'bun:test'
import type { Command } from '../../src/commands/command'
import { commands } from '../../src/commands/command-list'
import { parseConfig } from '../../src/config'
import type { SettingName } from '../../src/config/service-config'
import { settingNames, settings } from '../../src/config/table'

/*
 * Each command's --help lists exactly the settings the command reads: what it reads is what it
 * asks of the environment (an environment that notes each variable read) and which settings'
 * flags it takes.
 */

/** Where each command stops: before it opens a database, asks a service or prints a token. */
const SETTINGS_REFUSED = { DATABASE_URL: 'nowhere://x', PORT: 'none' }

/** Arguments that take each command as far as its options (token's before them: it reads no setting). */
const argumentsOf: Readonly<Record<string, readonly string[]>> = { token: ['create', 'probe', '--scope', 'read'] }

const settingOfVariable = new Map(settingNames.map((name) => [settings[name].env, name]))

/** The settings whose flag and variable `help` lists, each on a line of its own. */
function listedIn(help: string): SettingName[] {
  return settingNames.filter((name) => {
    const { flag, env } = settings[name]
    const line = new RegExp(`^\\s+${flag} <value>\\s+${env}\\s`, 'm')
    const wrapped = new RegExp(`^\\s+${flag} <value>\\n\\s+${env}\\s`, 'm')
    return line.test(help) || wrapped.test(help)
  })
}

/** Runs `read` against an environment that notes each setting's variable asked for. */
async function variablesRead(read: (env: Record<string, string | undefined>) => unknown): Promise<SettingName[]> {
  const asked = new Set<SettingName>()
  const env = new Proxy<Record<string, string | undefined>>(
    {},
    {
      get: (_, key) => {
        if (typeof key !== 'string') return undefined
        const name = settingOfVariable.get(key)
        if (name) asked.add(name)
        return SETTINGS_REFUSED[key as keyof typeof SETTINGS_REFUSED]
      },
    },
  )
  try {
    await read(env)
  } catch {
    // Stopped at a refused setting, as intended.
  }
  return settingNames.filter((name) => asked.has(name))
}

/** The settings whose flag `command` takes: a flag it does not take is an unknown option. */
async function flagsTaken(command: Command): Promise<SettingName[]> {
  const taken: SettingName[] = []
  for (const name of settingNames) {
    const argv = [...(argumentsOf[command.name] ?? []), settings[name].flag, 'x']
    const message = await (async () => {
      try {
        if (command.name === 'serve') parseConfig(argv, SETTINGS_REFUSED)
        else await command.run(argv, SETTINGS_REFUSED)
        return ''
      } catch (error) {
        return (error as Error).message
      }
    })()
    if (!/unknown option/i.test(message)) taken.push(name)
  }
  return taken
}

/** What `command` reads: serve reads its settings through parseConfig alone (its run would exit the process). */
function readsOf(command: Command): Promise<SettingName[]> {
  return variablesRead((env) => (command.name === 'serve' ? parseConfig([], env) : command.run([], env)))
}

describe('catalogue <command> --help', () => {
  for (const command of commands) {
    it(`lists exactly the settings catalogue ${command.name} reads, and takes the flags of those alone`, async () => {
      const listed = listedIn(command.help)
      expect(await readsOf(command)).toEqual(listed)
      expect(await flagsTaken(command)).toEqual(listed)
    })
  }

  it('lists --busy-timeout for backup, a copy of a SQLite file the service may be writing, and no PostgreSQL setting', () => {
    const backup = commands.find((command) => command.name === 'backup')
    expect(listedIn(backup?.help ?? '')).toEqual(['dataDir', 'databaseUrl', 'busyTimeoutMs'])
  })

  it('lists every setting for serve, which reads them all', () => {
    const serve = commands.find((command) => command.name === 'serve')
    expect(listedIn(serve?.help ?? '')).toEqual(settingNames)
  })
})
