import { afterAll, afterEach, beforeAll, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { existsSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { BUILD_TIMEOUT_MS, compiledExecutable } from '../support/executable'
import { type ChildProcess, removeTempDirs, spawnChild, stopChildren, tempDir, WAIT_MS } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

const JSON_API = 'application/vnd.api+json'

let buildDir: string
let executable: string
let buildMs = 0

function spawnExecutable(args: string[], cwd: string, env: Record<string, string>): ChildProcess {
  return spawnChild([executable, ...args], cwd, env)
}

async function send(method: string, url: string, body?: unknown) {
  const response = await fetch(url, {
    method,
    headers: body === undefined ? { accept: JSON_API } : { accept: JSON_API, 'content-type': JSON_API },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(WAIT_MS),
  })
  const text = await response.text()
  // biome-ignore lint/suspicious/noExplicitAny: the test reads documents of every shape
  const json: any = text === '' ? undefined : JSON.parse(text)
  return { status: response.status, json }
}

beforeAll(async () => {
  const built = await compiledExecutable()
  buildDir = built.dir
  executable = built.path
  buildMs = built.buildMs
}, BUILD_TIMEOUT_MS + 5_000)

afterEach(stopChildren)

afterAll(() => {
  if (buildMs > 0) console.log(`bun build --compile took ${buildMs} ms`)
  removeTempDirs()
})

describe('the compiled catalogue executable', () => {
  it('is a single file: the build output folder holds nothing else', () => {
    expect(readdirSync(buildDir)).toEqual(['catalogue'])
  })

  it('prints its options for --help and exits 0, from an empty folder', async () => {
    const cwd = tempDir('catalogue-exe-cwd-')
    const child = spawnExecutable(['--help'], cwd, {})
    expect(await child.exitCode()).toBe(0)
    for (const word of ['PORT', 'HOST', 'DATABASE_URL', 'LOG_LEVEL']) expect(child.stdout).toContain(word)
    expect(readdirSync(cwd)).toEqual([])
  })

  it('prints one catalogue: line and exits 2 for PORT=abc', async () => {
    const cwd = tempDir('catalogue-exe-cwd-')
    const child = spawnExecutable([], cwd, { PORT: 'abc' })
    expect(await child.exitCode()).toBe(2)
    expect(child.stderr.trimEnd().split('\n')).toHaveLength(1)
    expect(child.stderr).toStartWith('catalogue: PORT')
  })

  it('runs the operator commands: export of an empty database, import, export, backup (on its worker)', async () => {
    const cwd = tempDir('catalogue-exe-cwd-')
    const dataDir = tempDir('catalogue-exe-data-')
    const env = { DATABASE_URL: `sqlite://${join(dataDir, 'x.db')}` }
    // Importing an empty file with --create makes the empty database.
    const nothing = join(dataDir, 'nothing.jsonl')
    await Bun.write(nothing, '')
    const empty = spawnExecutable(['import', '--create', nothing], cwd, env)
    expect(await empty.exitCode()).toBe(0)
    const none = spawnExecutable(['export'], cwd, env)
    expect(await none.exitCode()).toBe(0)
    expect(none.stdout.split('\n')).toEqual([expect.stringMatching(/^\{"format":"library-catalogue-export"/), ''])
    const file = join(dataDir, 'books.jsonl')
    await Bun.write(file, '{"title":"Dune","author":"Frank Herbert","collection":null}\n')
    const imported = spawnExecutable(['import', file], cwd, env)
    expect(await imported.exitCode()).toBe(0)
    const exported = spawnExecutable(['export', join(dataDir, 'catalogue.jsonl')], cwd, env)
    expect(await exported.exitCode()).toBe(0)
    const restored = spawnExecutable(['import', '--create', join(dataDir, 'catalogue.jsonl')], cwd, {
      DATABASE_URL: `sqlite://${join(dataDir, 'restored.db')}`,
    })
    expect(await restored.exitCode()).toBe(0)
    expect(restored.stderr).toStartWith('restored 1 author, 0 book collections and 1 book')
    const backup = spawnExecutable(['backup', join(dataDir, 'backup.db')], cwd, env)
    expect(await backup.exitCode()).toBe(0)
    expect(existsSync(join(dataDir, 'backup.db'))).toBe(true)
    expect(readdirSync(cwd)).toEqual([])
  })

  it('serves authors, collections and books from a different empty folder, then stops on SIGTERM with exit 0', async () => {
    const cwd = tempDir('catalogue-exe-cwd-')
    const dataDir = tempDir('catalogue-exe-data-')
    const dbPath = join(dataDir, 'x.db')
    const child = spawnExecutable([], cwd, { PORT: '0', HOST: '127.0.0.1', DATABASE_URL: `sqlite://${dbPath}` })
    const listening = await child.waitForLog((line) => line.msg === 'listening')
    const base = `http://127.0.0.1:${new URL(String(listening.url)).port}/api/v1`

    const author = await send('POST', `${base}/authors`, { data: { type: 'author', attributes: { name: 'Le Guin' } } })
    expect(author.status).toBe(201)
    const collection = await send('POST', `${base}/book_collections`, {
      data: { type: 'book_collection', attributes: { name: 'Earthsea' } },
    })
    expect(collection.status).toBe(201)
    const authorId: string = author.json.data.id
    const collectionId: string = collection.json.data.id
    const book = await send('POST', `${base}/books`, {
      data: {
        type: 'book',
        attributes: { name: 'A Wizard of Earthsea', author_id: Number(authorId) },
        relationships: { book_collection: { data: { type: 'book_collections', id: collectionId } } },
      },
    })
    expect(book.status).toBe(201)

    const read = await send('GET', `${base}/books/${book.json.data.id}`)
    expect(read.status).toBe(200)
    expect(read.json.data).toMatchObject({
      type: 'books',
      attributes: { name: 'A Wizard of Earthsea' },
      relationships: {
        author: { data: { type: 'authors', id: authorId } },
        book_collection: { data: { type: 'book_collections', id: collectionId } },
      },
    })
    const included = (read.json.included as { type: string; id: string; attributes: { name: string } }[]).map(
      ({ type, id, attributes }) => ({ type, id, name: attributes.name }),
    )
    expect(included).toHaveLength(2)
    expect(included).toContainEqual({ type: 'authors', id: authorId, name: 'Le Guin' })
    expect(included).toContainEqual({ type: 'book_collections', id: collectionId, name: 'Earthsea' })

    child.proc.kill('SIGTERM')
    expect(await child.exitCode()).toBe(0)
    expect(child.logs.map((line) => line.msg)).toContain('stopping')
    expect(child.logs.at(-1)?.msg).toBe('stopped')
    expect(existsSync(dbPath)).toBe(true)
    // The executable wrote nothing into its working folder.
    expect(readdirSync(cwd)).toEqual([])
  })

  it('runs --workers 2: both workers are copies of the executable, they answer, and SIGTERM stops all with exit 0', async () => {
    const cwd = tempDir('catalogue-exe-cwd-')
    const dbPath = join(tempDir('catalogue-exe-data-'), 'w.db')
    const child = spawnExecutable(['--workers', '2'], cwd, {
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: `sqlite://${dbPath}`,
    })
    const listening = await child.waitForLog((line) => line.msg === 'listening')
    for (const worker of [1, 2])
      await child.waitForLog((line) => line.msg === 'worker listening' && line.worker === worker)
    const base = `http://127.0.0.1:${new URL(String(listening.url)).port}/api/v1`
    const created = await send('POST', `${base}/authors`, { data: { type: 'authors', attributes: { name: 'Two' } } })
    expect(created.status).toBe(201)
    expect((await send('GET', `${base}/authors/${created.json.data.id}`)).status).toBe(200)
    const pids = child.logs.filter((line) => line.msg === 'worker listening').map((line) => Number(line.pid))
    for (const pid of pids) expect(readlinkSync(`/proc/${pid}/exe`)).toBe(executable)

    child.proc.kill('SIGTERM')
    expect(await child.exitCode()).toBe(0)
    expect(child.logs.filter((line) => line.msg === 'stopped').length).toBe(3)
    expect(readdirSync(cwd)).toEqual([])
  })
})

describe('.env and bunfig.toml in the working folder', () => {
  /** A working folder with a .env that sets `dotenv` and a bunfig.toml whose preload leaves a file. */
  function folderWith(dotenv: string): string {
    const cwd = tempDir('catalogue-exe-dotenv-')
    writeFileSync(join(cwd, '.env'), dotenv)
    writeFileSync(join(cwd, 'bunfig.toml'), 'preload = ["./preload.ts"]\n')
    writeFileSync(
      join(cwd, 'preload.ts'),
      `require('node:fs').writeFileSync(${JSON.stringify(join(cwd, 'preloaded'))}, '')\n`,
    )
    return cwd
  }

  it('are not read by the compiled executable: it starts with the settings of its environment alone', async () => {
    // Read, this .env would stop the start (exit 2) and the preload would leave a file behind.
    const cwd = folderWith('LOG_LEVEL=nonsense\n')
    const dbPath = join(tempDir('catalogue-exe-data-'), 'x.db')
    const child = spawnExecutable([], cwd, { PORT: '0', HOST: '127.0.0.1', DATABASE_URL: `sqlite://${dbPath}` })
    await child.waitForLog((line) => line.msg === 'listening')
    child.proc.kill('SIGTERM')
    expect(await child.exitCode()).toBe(0)
    expect(child.logs.some((line) => line.msg.includes('.env'))).toBe(false)
    expect(readdirSync(cwd).sort()).toEqual(['.env', 'bunfig.toml', 'preload.ts'])
  })

  it('is read by `bun src/cli.ts` (bun start), which says so in one log line', async () => {
    const cwd = folderWith('MAX_PAGE_SIZE=7\n')
    const dbPath = join(tempDir('catalogue-exe-data-'), 'x.db')
    const child = spawnChild(
      ['bun', join(import.meta.dir, '..', '..', 'src', 'cli.ts')],
      cwd,
      { PORT: '0', HOST: '127.0.0.1', DATABASE_URL: `sqlite://${dbPath}` },
      { dotenv: true },
    )
    const listening = await child.waitForLog((line) => line.msg === 'listening')
    expect(child.logs.filter((line) => String(line.msg).includes('.env files'))).toEqual([
      expect.objectContaining({ level: 'info', files: '.env' }),
    ])
    const base = `http://127.0.0.1:${new URL(String(listening.url)).port}/api/v1`
    expect((await send('GET', `${base}/authors?page[size]=8`)).status).toBe(400)
    child.proc.kill('SIGTERM')
    expect(await child.exitCode()).toBe(0)
  })
})
