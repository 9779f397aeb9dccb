import { afterAll, afterEach, beforeAll, describe, expect, it } from 'bun:test'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'

const REPO = join(import.meta.dir, '..', '..')
const JSON_API = 'application/vnd.api+json'
const BUILD_TIMEOUT_MS = 120_000
const WAIT_MS = 10_000

let buildDir: string
let executable: string
let buildMs = 0
const tempDirs: string[] = []
const running: Subprocess<'ignore', 'pipe', 'pipe'>[] = []

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  tempDirs.push(dir)
  return dir
}

/** Environment for the child: only PATH and HOME from ours, so nothing set here leaks in. */
function childEnv(env: Record<string, string>): Record<string, string> {
  const base: Record<string, string> = {}
  for (const name of ['PATH', 'HOME', 'TMPDIR']) {
    const value = process.env[name]
    if (value !== undefined) base[name] = value
  }
  return { ...base, ...env }
}

function spawnExecutable(args: string[], cwd: string, env: Record<string, string>) {
  const proc = Bun.spawn([executable, ...args], {
    cwd,
    env: childEnv(env),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  running.push(proc)
  return proc
}

async function withTimeout<T>(promise: Promise<T>, what: string, ms = WAIT_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** Reads JSON log lines from a process's stdout as they come. */
function logReader(stream: ReadableStream<Uint8Array>) {
  const lines: Record<string, unknown>[] = []
  let text = ''
  const reader = stream.getReader()
  const decoder = new TextDecoder()
  /** Re-reads the complete lines of `text`; anything that is not JSON (help text) is skipped. */
  const parse = () => {
    lines.length = 0
    for (const line of text.slice(0, text.lastIndexOf('\n') + 1).split('\n')) {
      if (!line.startsWith('{')) continue
      try {
        lines.push(JSON.parse(line))
      } catch {
        // not a log line
      }
    }
  }
  /** One more chunk of stdout; false once the stream has ended. */
  const readMore = async () => {
    const { value, done } = await reader.read()
    if (done) return false
    text += decoder.decode(value, { stream: true })
    parse()
    return true
  }
  return {
    lines,
    /** The first line with this `msg`, reading on until it comes or the stream ends. */
    async waitFor(msg: string): Promise<Record<string, unknown>> {
      for (;;) {
        const found = lines.find((line) => line.msg === msg)
        if (found) return found
        if (!(await readMore())) throw new Error(`stdout ended before a "${msg}" line:\n${text}`)
      }
    },
    /** Reads the stream to its end. */
    async drain(): Promise<void> {
      while (await readMore()) {}
    },
  }
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
  buildDir = tempDir('catalogue-build-')
  executable = join(buildDir, 'catalogue')
  const started = performance.now()
  const build = Bun.spawn(['bun', 'build', '--compile', 'src/cli.ts', '--outfile', executable], {
    cwd: REPO,
    env: childEnv({}),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const code = await withTimeout(build.exited, 'bun build --compile', BUILD_TIMEOUT_MS).catch((error: Error) => {
    build.kill('SIGKILL')
    throw error
  })
  buildMs = Math.round(performance.now() - started)
  if (code !== 0) {
    throw new Error(`bun build --compile failed (${code}):\n${await new Response(build.stderr).text()}`)
  }
}, BUILD_TIMEOUT_MS + 5_000)

afterEach(async () => {
  for (const proc of running) {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL')
    await Promise.race([proc.exited, Bun.sleep(5_000)])
  }
  running.length = 0
})

afterAll(() => {
  if (buildMs > 0) console.log(`bun build --compile took ${buildMs} ms`)
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true })
})

describe('the compiled catalogue executable', () => {
  it('is a single file: the build output folder holds nothing else', () => {
    expect(readdirSync(buildDir)).toEqual(['catalogue'])
  })

  it('prints its options for --help and exits 0, from an empty folder', async () => {
    const cwd = tempDir('catalogue-exe-cwd-')
    const proc = spawnExecutable(['--help'], cwd, {})
    expect(await withTimeout(proc.exited, 'catalogue --help')).toBe(0)
    const stdout = await new Response(proc.stdout).text()
    for (const word of ['PORT', 'HOST', 'DATABASE_URL', 'LOG_LEVEL']) expect(stdout).toContain(word)
    expect(readdirSync(cwd)).toEqual([])
  })

  it('prints one catalogue: line and exits 2 for PORT=abc', async () => {
    const cwd = tempDir('catalogue-exe-cwd-')
    const proc = spawnExecutable([], cwd, { PORT: 'abc' })
    expect(await withTimeout(proc.exited, 'catalogue with PORT=abc')).toBe(2)
    const stderr = await new Response(proc.stderr).text()
    expect(stderr.trimEnd().split('\n')).toHaveLength(1)
    expect(stderr).toStartWith('catalogue: PORT')
  })

  it('serves authors, collections and books from a different empty folder, then stops on SIGTERM with exit 0', async () => {
    const cwd = tempDir('catalogue-exe-cwd-')
    const dataDir = tempDir('catalogue-exe-data-')
    const dbPath = join(dataDir, 'x.db')
    const proc = spawnExecutable([], cwd, { PORT: '0', HOST: '127.0.0.1', DATABASE_URL: `sqlite://${dbPath}` })
    const logs = logReader(proc.stdout)
    const listening = await withTimeout(logs.waitFor('listening'), 'the listening line')
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

    proc.kill('SIGTERM')
    expect(await withTimeout(proc.exited, 'exit after SIGTERM')).toBe(0)
    await withTimeout(logs.drain(), 'the rest of stdout')
    expect(logs.lines.map((line) => line.msg)).toContain('stopping')
    expect(logs.lines.at(-1)?.msg).toBe('stopped')
    expect(existsSync(dbPath)).toBe(true)
    // The executable wrote nothing into its working folder.
    expect(readdirSync(cwd)).toEqual([])
  })
})
