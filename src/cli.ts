#!/usr/bin/env bun
/**
 * The one executable: `catalogue [options]` starts the service; `catalogue <command> ...` runs an
 * operator command. Every command answers `--help`; bad input is one line on stderr and exit 2.
 */
import packageJson from '../package.json'
import { UsageError } from './commands/command'
import { commands } from './commands/command-list'
import { serveCommand } from './commands/serve'

const commandColumn = Math.max(...commands.map((c) => c.name.length)) + 2
const usage = `catalogue ${packageJson.version}: the library catalogue JSON:API service

Usage: catalogue [options]              start the service (catalogue serve --help lists the options)
       catalogue <command> [arguments]  run an operator command
       catalogue --version              print the version

Commands:
${commands.map((c) => `  ${c.name.padEnd(commandColumn)}${c.summary}`).join('\n')}

Each command answers --help.
`

async function main(argv: readonly string[]): Promise<number> {
  const [first, ...rest] = argv
  if (first === '--version' || first === '-V') {
    console.log(packageJson.version)
    return 0
  }
  if (first === 'help' || (first === '--help' && rest.length === 0) || first === '-h') {
    console.log(`${usage}\n${serveCommand.help}`)
    return 0
  }
  const named = first !== undefined && !first.startsWith('-') ? commands.find((c) => c.name === first) : undefined
  if (first !== undefined && !first.startsWith('-') && !named) {
    console.error(`catalogue: unknown command "${first}" (see catalogue --help)`)
    return 2
  }
  const command = named ?? serveCommand
  const args = named ? rest : argv
  if (named && (args.includes('--help') || args.includes('-h'))) {
    console.log(command.help)
    return 0
  }
  try {
    return await command.run(args, process.env)
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    console.error(`catalogue ${command.name}: ${error.message}`)
    return 2
  }
}

process.exit(await main(Bun.argv.slice(2)))
