import { join } from 'node:path'
import { SQL } from 'bun'
import { WAIT_MS } from './process'

/*
 * Other clients keeping a pooler busy while a test probes it (test/store/postgres-pooler.test.ts):
 * a child process (so that the probe and the load do not share one event loop) of `clients`
 * clients, each one connection, each sending `SELECT pg_backend_pid()` at random moments, about
 * `perSecond` statements a second in all, until stopped: as pgbench `-c 8 -R 2000` with that one
 * statement does. Run as a script: `bun pooler-load.ts <url> <clients> <perSecond>`; it prints
 * the statements it ran when its input closes.
 */

export interface PoolerLoad {
  /** Stops the clients; the statements they ran. */
  stop(): Promise<number>
}

/** Starts the load on `url`, and resolves once every client has run a statement. */
export async function startPoolerLoad(url: string, clients = 8, perSecond = 2000): Promise<PoolerLoad> {
  const child = Bun.spawn(
    [process.execPath, join(import.meta.dir, 'pooler-load.ts'), url, `${clients}`, `${perSecond}`],
    {
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'inherit',
    },
  )
  const lines = (async function* () {
    let buffered = ''
    for await (const chunk of child.stdout) {
      buffered += new TextDecoder().decode(chunk)
      let end = buffered.indexOf('\n')
      while (end >= 0) {
        yield buffered.slice(0, end)
        buffered = buffered.slice(end + 1)
        end = buffered.indexOf('\n')
      }
    }
  })()
  const next = async (what: string) => {
    const timer = Bun.sleep(WAIT_MS).then(() => null)
    const line = await Promise.race([lines.next().then((read) => (read.done ? null : read.value)), timer])
    if (line === null) {
      child.kill()
      throw new Error(`the pooler's load did not ${what} within ${WAIT_MS} ms`)
    }
    return line
  }
  if ((await next('start')) !== 'started') throw new Error("the pooler's load did not start")
  return {
    stop: async () => {
      child.stdin.end()
      const ran = Number(await next('stop'))
      await child.exited
      return ran
    },
  }
}

/** One client: statements at exponentially spread moments, `perSecond` of them a second on average. */
async function client(url: string, perSecond: number, running: () => boolean, started: () => void): Promise<number> {
  const sql = new SQL(url, { max: 1, prepare: false })
  let ran = 0
  try {
    await sql.unsafe('SELECT pg_backend_pid()').simple()
    ran++
    started()
    while (running()) {
      await Bun.sleep(-Math.log(1 - Math.random()) * (1000 / perSecond))
      await sql.unsafe('SELECT pg_backend_pid()').simple()
      ran++
    }
  } finally {
    await sql.close({ timeout: 0 })
  }
  return ran
}

if (import.meta.main) {
  const [url, clients, perSecond] = process.argv.slice(2)
  let running = true
  let waiting = Number(clients)
  const started = () => {
    waiting--
    if (waiting === 0) process.stdout.write('started\n')
  }
  const each = Number(perSecond) / Number(clients)
  const done = Promise.all(Array.from({ length: waiting }, () => client(url as string, each, () => running, started)))
  // The parent closes our input to stop us (or ends, which closes it too).
  await Bun.stdin.text()
  running = false
  const ran = (await done).reduce((sum, each) => sum + each, 0)
  process.stdout.write(`${ran}\n`)
}
