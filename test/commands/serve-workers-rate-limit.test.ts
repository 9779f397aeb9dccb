import { afterAll, afterEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import http from 'node:http'
import { type Service, startService, tempDatabase } from '../support/commands'
import { type LogLine, removeTempDirs, stopChildren, WAIT_MS } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/*
 * RATE_LIMIT with `--workers 2`: the supervisor counts every worker's requests, so that the limit
 * RateLimit-Policy announces holds whichever worker a connection lands on (src/http/access/shared-rate-limit.ts).
 */

afterEach(stopChildren)
afterAll(removeTempDirs)

interface Got {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
}

/** GET /api/v1/authors over a connection of its own from `localAddress`, so that the kernel spreads them over the workers. */
function getFrom(service: Service, localAddress = '127.0.0.1'): Promise<Got> {
  const { port } = new URL(service.api)
  return new Promise((resolve, reject) => {
    const request = http.get(
      { host: '127.0.0.1', port, path: '/api/v1/authors', localAddress, agent: false, timeout: WAIT_MS },
      (response) => {
        response.resume()
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers }))
      },
    )
    request.on('timeout', () => request.destroy(new Error('timed out: GET /api/v1/authors')))
    request.on('error', reject)
  })
}

/** Starts `--workers 2 --rate-limit 3` and waits for both workers to listen. */
async function startLimited(): Promise<Service> {
  const service = await startService({ WORKERS: '2', RATE_LIMIT: '3', DATABASE_URL: tempDatabase().url })
  for (const worker of [1, 2]) {
    await service.child.waitForLog((line) => line.msg === 'worker listening' && line.worker === worker)
  }
  return service
}

/** The workers that wrote the request lines so far, once there are `requests` of them (or WAIT_MS has passed). */
async function workersAnswered(service: Service, requests: number): Promise<Set<unknown>> {
  const lines: LogLine[] = []
  const deadline = Date.now() + WAIT_MS
  while (Date.now() < deadline) {
    lines.splice(0, lines.length, ...service.child.logs.filter((line) => line.msg === 'request'))
    if (lines.length >= requests) break
    await Bun.sleep(20)
  }
  return new Set(lines.map((line) => line.worker))
}

describe('RATE_LIMIT=3 with --workers 2', () => {
  it('lets exactly 3 requests of one client through in a minute, whichever worker answers, and refuses the rest with 429', async () => {
    const service = await startLimited()
    const answers: Got[] = []
    for (let i = 0; i < 9; i++) answers.push(await getFrom(service))
    // Each connection lands on a worker the kernel picks: in the rare run where all nine found the
    // same one, more are sent, so that the count is seen to be shared.
    while ((await workersAnswered(service, answers.length)).size < 2 && answers.length < 40) {
      answers.push(await getFrom(service))
    }
    expect(await workersAnswered(service, answers.length)).toEqual(new Set([1, 2]))

    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, ...Array(answers.length - 3).fill(429)])
    for (const { headers } of answers) expect(headers['ratelimit-policy']).toBe('"default";q=3;w=60')
    const remaining = answers.map(({ headers }) => /;r=(\d+);/.exec(String(headers.ratelimit))?.[1])
    expect(remaining).toEqual(['2', '1', '0', ...Array(answers.length - 3).fill('0')])
    for (const { headers } of answers.slice(3)) {
      const reset = Number(/;t=(\d+)$/.exec(String(headers.ratelimit))?.[1])
      expect(reset).toBeGreaterThanOrEqual(1)
      expect(reset).toBeLessThanOrEqual(60)
      expect(headers['retry-after']).toBe(String(reset))
    }
    // Another client has its own allowance.
    const other = await getFrom(service, '127.0.0.2')
    expect(other.status).toBe(200)
    expect(other.headers.ratelimit).toMatch(/^"default";r=2;t=\d+$/)
  })

  it('keeps the counts when a worker dies and is started again', async () => {
    const service = await startLimited()
    for (let i = 0; i < 3; i++) expect((await getFrom(service)).status).toBe(200)
    const listening = service.child.logs.filter((line) => line.msg === 'worker listening')
    const killed = Number(listening.find((line) => line.worker === 2)?.pid)
    process.kill(killed, 'SIGKILL')
    await service.child.waitForLog(
      (line) => line.msg === 'worker listening' && line.worker === 2 && line.pid !== killed,
    )
    // Until the new worker has answered some: a worker that counted alone would let them through.
    const byNewWorker = () =>
      service.child.logs.filter((line) => line.msg === 'request' && line.worker === 2 && line.pid !== killed).length
    const after: number[] = []
    while ((after.length < 8 || byNewWorker() < 3) && after.length < 60) after.push((await getFrom(service)).status)
    expect(byNewWorker()).toBeGreaterThanOrEqual(3)
    expect(after).toEqual(Array(after.length).fill(429))
  })
})
