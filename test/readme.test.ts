import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { join } from 'node:path'
import { type ChildProcess, removeTempDirs, spawnChild, stopChildren, tempDir } from './support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/*
 * The README's example session, run as pasted: every `$ curl ...` line (with its `\`
 * continuations) goes to bash against a fresh service, and what it prints must be the output the
 * README shows under it. Only the port differs: the README's localhost:3000 becomes the test's.
 */

const REPO = join(import.meta.dir, '..')

interface Example {
  readonly command: string
  readonly output: string
}

/** The `$ `-prompted commands of the README's shell blocks, each with the lines printed under it. */
async function readmeExamples(): Promise<Example[]> {
  const readme = await Bun.file(join(REPO, 'README.md')).text()
  const examples: Example[] = []
  for (const block of readme.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const lines = (block[1] as string).split('\n')
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i] as string
      if (!line.startsWith('$ curl ')) continue
      let command = line.slice(2)
      while (command.endsWith('\\')) command = `${command}\n${lines[++i]}`
      // Up to the next command: a stream's events are separated by blank lines.
      const output: string[] = []
      while (i + 1 < lines.length && !(lines[i + 1] as string).startsWith('$ ')) output.push(lines[++i] as string)
      examples.push({ command, output: output.join('\n').trimEnd() })
    }
  }
  return examples
}

describe('README', () => {
  let service: ChildProcess
  let port: string
  let examples: Example[]
  beforeAll(async () => {
    examples = await readmeExamples()
    const database = join(tempDir('catalogue-readme-'), 'c.db')
    service = spawnChild(['bun', join(REPO, 'src', 'cli.ts')], REPO, {
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: `sqlite://${database}`,
    })
    const listening = await service.waitForLog((line) => line.msg === 'listening')
    port = new URL(String(listening.url)).port
  })
  afterAll(async () => {
    await stopChildren()
    removeTempDirs()
  })

  it('has an example session of at least five curl commands', () => {
    expect(examples.length).toBeGreaterThanOrEqual(5)
  })

  it('prints what each example shows, run as pasted in order', async () => {
    for (const example of examples) {
      const command = example.command.replaceAll('localhost:3000', `127.0.0.1:${port}`)
      const run = Bun.spawnSync(['bash', '-c', command])
      // curl -m N leaves a live stream after N seconds: exit 28, its timeout, is how it ends.
      const exit = / -m \d+ /.test(command) && run.exitCode === 28 ? 0 : run.exitCode
      expect({ command: example.command, exit }).toEqual({ command: example.command, exit: 0 })
      expect({ command: example.command, output: run.stdout.toString().trimEnd() }).toEqual({
        command: example.command,
        output: example.output,
      })
    }
  })
})
