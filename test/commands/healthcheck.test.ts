import { afterAll, afterEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import type { Server } from 'bun'
import { runCli, startService, tempDatabase } from '../support/commands'
import { removeTempDirs, stopChildren } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/*
 * `catalogue healthcheck`: what the Docker image's HEALTHCHECK runs (the image has no curl). It asks
 * the running service at HOST:PORT and exits 0 when it answers 200, else 1 with one line saying why.
 */

const servers: Server<unknown>[] = []
afterEach(async () => {
  await stopChildren()
  for (const server of servers.splice(0)) await server.stop(true)
})
afterAll(removeTempDirs)

/** A port nothing listens on: a server's, once it has stopped. */
async function closedPort(): Promise<number> {
  const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response(null) })
  const port = server.port as number
  await server.stop(true)
  return port
}

/** A plain HTTP server on a free port of 127.0.0.1 that answers as `fetch` does. */
function fakeService(fetch: (request: Request) => Response | Promise<Response>): number {
  const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch })
  servers.push(server)
  return server.port as number
}

describe('catalogue healthcheck', () => {
  it('exits 0 when the service answers /health and /ready, asking 127.0.0.1 for a service on 0.0.0.0', async () => {
    const service = await startService({ HOST: '0.0.0.0', DATABASE_URL: tempDatabase().url })
    const port = new URL(service.api).port
    const health = await runCli(['healthcheck'], { env: { HOST: '0.0.0.0', PORT: port } })
    expect({ code: health.code, stdout: health.stdout, stderr: health.stderr }).toEqual({
      code: 0,
      stdout: `http://127.0.0.1:${port}/health: 200 {"status":"ok"}\n`,
      stderr: '',
    })
    const ready = await runCli(['healthcheck', '--ready', '--port', port, '--host', '127.0.0.1'])
    expect({ code: ready.code, stdout: ready.stdout }).toEqual({
      code: 0,
      stdout: `http://127.0.0.1:${port}/ready: 200 {"status":"ready"}\n`,
    })
  })

  it('exits 1 with one line when nothing listens on the port', async () => {
    const port = await closedPort()
    const run = await runCli(['healthcheck', '--host', '127.0.0.1', '--port', String(port)])
    expect(run.code).toBe(1)
    expect(run.stdout).toBe('')
    expect(run.lines).toEqual([
      `catalogue healthcheck: http://127.0.0.1:${port}/health: connection refused (is the service running?)`,
    ])
  })

  it('exits 1 naming the status when the answer is not 200 (a /ready that says the service is stopping)', async () => {
    const body = JSON.stringify({ status: 'stopping', detail: 'The service is stopping' })
    const port = fakeService((request) =>
      new URL(request.url).pathname === '/ready'
        ? new Response(body, { status: 503 })
        : new Response('', { status: 404 }),
    )
    const run = await runCli(['healthcheck', '--ready', '--host', '127.0.0.1', '--port', String(port)])
    expect(run.code).toBe(1)
    expect(run.lines).toEqual([`catalogue healthcheck: http://127.0.0.1:${port}/ready: 503 ${body}`])
  })

  it('gives up after --timeout seconds when the service does not answer, and exits 1', async () => {
    const port = fakeService(() => new Promise<Response>(() => {}))
    const started = performance.now()
    const run = await runCli(['healthcheck', '--timeout', '1', '--host', '127.0.0.1', '--port', String(port)])
    const ms = performance.now() - started
    expect(run.code).toBe(1)
    expect(run.lines).toEqual([`catalogue healthcheck: http://127.0.0.1:${port}/health: no answer within 1 s`])
    expect(ms).toBeLessThan(8_000)
  })

  it('exits 2 with one line for a bad port, PORT=0 or an unknown option', async () => {
    const cases: [string[], Record<string, string>, string][] = [
      [
        ['healthcheck', '--port', 'abc'],
        {},
        'catalogue healthcheck: PORT must be an integer from 0 to 65535 (got "abc")',
      ],
      [
        ['healthcheck'],
        { PORT: '0' },
        'catalogue healthcheck: PORT=0 names no port to ask: give the port the service listens on',
      ],
      [
        ['healthcheck', '--timeout', '0'],
        {},
        'catalogue healthcheck: --timeout must be an integer from 1 to 300 (got "0")',
      ],
    ]
    for (const [args, env, line] of cases) {
      const run = await runCli(args, { env })
      expect({ code: run.code, lines: run.lines }).toEqual({ code: 2, lines: [line] })
    }
    const unknown = await runCli(['healthcheck', '--database-url', 'sqlite://x.db'])
    expect(unknown.code).toBe(2)
    expect(unknown.lines).toHaveLength(1)
  })
})
