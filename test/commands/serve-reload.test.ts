import { afterAll, afterEach, describe, expect, it, setDefaultTimeout } from 'bun:test'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type Service, startService, tempDatabase } from '../support/commands'
import { type LogLine, removeTempDirs, stopChildren, WAIT_MS } from '../support/process'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/*
 * SIGHUP (systemctl reload, logrotate, a closed terminal) never stops the service, whether one
 * process serves or a supervisor and its workers, with a token file or without: it reloads what it
 * can, says so in the log, and the service serves on and stops cleanly when asked.
 */

const JSON_API = 'application/vnd.api+json'
const TOKEN = 'cat_reload-token-0123456789abcdefghijklmnopqrstuv'
const NEW_TOKEN = 'cat_reload-newer-0123456789abcdefghijklmnopqrstuv'
const sha256 = (token: string) => new Bun.CryptoHasher('sha256').update(token).digest('hex')
/** Per test: real processes on a machine that may be busy. */
const TEST_MS = 25_000

afterEach(stopChildren)
afterAll(removeTempDirs)

async function send(service: Service, method: string, path: string, token: string | null, body?: unknown) {
  const headers: Record<string, string> = { accept: JSON_API, connection: 'close' }
  if (token !== null) headers.authorization = `Bearer ${token}`
  if (body !== undefined) headers['content-type'] = JSON_API
  return fetch(`${service.api}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(WAIT_MS),
  })
}

/** The lines logged after the first `skip` lines that match `predicate`. */
function linesSince(service: Service, skip: number, predicate: (line: LogLine) => boolean): LogLine[] {
  return service.child.logs.slice(skip).filter(predicate)
}

for (const workers of [1, 2]) {
  for (const withTokens of [false, true]) {
    const setting = `${workers === 1 ? 'one process' : `--workers ${workers}`}, ${withTokens ? 'with' : 'without'} API_TOKENS_FILE`

    describe(`SIGHUP to the service (${setting})`, () => {
      it(
        'reloads what it can and logs it, goes on serving, then stops cleanly on SIGTERM leaving no -wal',
        async () => {
          const database = tempDatabase('catalogue-reload-')
          const tokenFile = join(database.dir, 'tokens')
          writeFileSync(tokenFile, `ops write ${sha256(TOKEN)}\n`)
          const env: Record<string, string> = { DATABASE_URL: database.url, WORKERS: String(workers) }
          if (withTokens) env.API_TOKENS_FILE = tokenFile
          const service = await startService(env)
          for (let worker = 1; worker <= workers && workers > 1; worker++) {
            await service.child.waitForLog((line) => line.msg === 'worker listening' && line.worker === worker)
          }
          const token = withTokens ? TOKEN : null
          const created = await send(service, 'POST', '/authors', token, {
            data: { type: 'authors', attributes: { name: 'Before the reload' } },
          })
          expect(created.status).toBe(201)
          const before = service.child.logs.length

          // With tokens, the file changes before the signal: the reload must be seen to take it.
          if (withTokens) writeFileSync(tokenFile, `ops write ${sha256(NEW_TOKEN)}\n`)
          service.child.proc.kill('SIGHUP')
          if (withTokens) {
            for (let worker = 1; worker <= workers; worker++) {
              const reloaded = await service.child.waitForLog(
                (line) => line.msg === 'API tokens reloaded' && (workers === 1 || line.worker === worker),
              )
              expect(reloaded).toMatchObject({ level: 'info', signal: 'SIGHUP', file: tokenFile, tokens: 1 })
            }
            if (workers > 1) {
              expect(
                linesSince(service, before, (line) => line.msg.startsWith('SIGHUP: passed to the workers')),
              ).toEqual([expect.objectContaining({ level: 'info', workers })])
            }
          } else {
            await service.child.waitForLog((line) => line.msg.startsWith('SIGHUP: nothing to reload'))
            // One line, from the process that got the signal (a supervisor does not pass it on).
            expect(linesSince(service, before, (line) => line.msg.startsWith('SIGHUP'))).toEqual([
              expect.objectContaining({ level: 'info', signal: 'SIGHUP' }),
            ])
          }
          expect(linesSince(service, before, (line) => ['stopping', 'stopped'].includes(line.msg))).toEqual([])

          // Still serving, on new connections (which any worker may take), with the reloaded token.
          const token2 = withTokens ? NEW_TOKEN : null
          const reads = await Promise.all(
            Array.from({ length: 6 }, () => send(service, 'GET', '/authors/1', token2).then((r) => r.status)),
          )
          expect(reads).toEqual(Array(6).fill(200))
          if (withTokens) expect((await send(service, 'GET', '/authors/1', TOKEN)).status).toBe(401)
          const again = await send(service, 'POST', '/authors', token2, {
            data: { type: 'authors', attributes: { name: 'After the reload' } },
          })
          expect(again.status).toBe(201)

          service.child.proc.kill('SIGTERM')
          expect(await service.child.exitCode()).toBe(0)
          expect(service.child.logs.at(-1)).toMatchObject({ level: 'info', msg: 'stopped' })
          const wal = `${database.path}-wal`
          expect(existsSync(wal)).toBe(false)
        },
        TEST_MS,
      )
    })
  }
}
