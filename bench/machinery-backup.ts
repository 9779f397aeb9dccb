/**
 * The backup thread's part of `bun run bench -- machinery`: `catalogue backup` runs VACUUM INTO on
 * a thread of its own so that its main thread draws the progress. It runs in its own process, so
 * what it could change is how long a backup takes and what the service's reads wait meanwhile.
 * Each round, wrk reads single books from a service (pinned to the server's core) while backups of
 * its file are made one after another, with the thread, without it (CATALOGUE_WITHOUT=backup-thread)
 * or not at all, in alternating order.
 */
import { join } from 'node:path'
import { WITHOUT_ENV } from '../src/store/machinery-switches'
import { summarize } from './load'
import type { Load } from './machinery-cases'
import { fixed, loadRound, median, spread, startService } from './machinery-service'
import { pinning } from './measure'
import { markdownTable } from './report'
import { getBook } from './scenarios'
import { LARGE } from './seed'
import { type RunningServer, stopServer, waitUntilReady } from './servers'

type Variant = 'no backup' | 'with' | 'without'

const reads: Load = { name: 'GET one book', parts: [{ label: 'GET', plan: getBook(LARGE), concurrency: 16 }] }
/** Long enough for a few backups of the 100,000 books in each round. */
const ROUND_MS = 6000

/** `catalogue backup` of `file` again and again until `until` settles; the seconds each took. */
async function backupsUntil(file: string, target: string, env: Record<string, string>, until: Promise<unknown>) {
  let done = false
  void until.finally(() => {
    done = true
  })
  const seconds: number[] = []
  while (!done) {
    const started = performance.now()
    const child = Bun.spawn([...pinning.spread, 'bun', 'src/cli.ts', 'backup', '--force', target], {
      cwd: join(import.meta.dir, '..'),
      env: { ...process.env, DATABASE_URL: `sqlite://${file}`, [WITHOUT_ENV]: '', ...env },
      stdout: 'ignore',
      stderr: 'pipe',
    })
    const [code, errors] = await Promise.all([child.exited, new Response(child.stderr).text()])
    if (code !== 0) throw new Error(`catalogue backup failed (${code}): ${errors.trim()}`)
    seconds.push((performance.now() - started) / 1000)
  }
  return seconds
}

export async function runBackups(
  file: string,
  dir: string,
  rounds: number,
  track: (server: RunningServer) => void,
): Promise<string> {
  const service = startService('service', file, { DURABILITY: 'full' }, 1, track)
  const results: Record<Variant, { perSecond: number[]; p99Ms: number[]; backupSeconds: number[] }> = {
    'no backup': { perSecond: [], p99Ms: [], backupSeconds: [] },
    with: { perSecond: [], p99Ms: [], backupSeconds: [] },
    without: { perSecond: [], p99Ms: [], backupSeconds: [] },
  }
  const env: Record<Variant, Record<string, string> | null> = {
    'no backup': null,
    with: {},
    without: { [WITHOUT_ENV]: 'backup-thread' },
  }
  try {
    await waitUntilReady(service, '/api/v1/books/1')
    await loadRound(service, reads, 1000)
    const order: Variant[] = ['no backup', 'with', 'without']
    for (let round = 0; round < rounds; round++) {
      for (const variant of round % 2 === 0 ? order : [...order].reverse()) {
        const loading = loadRound(service, reads, ROUND_MS)
        const variantEnv = env[variant]
        const backups = variantEnv
          ? backupsUntil(file, join(dir, 'machinery-backup.db'), variantEnv, loading)
          : Promise.resolve([])
        const [[round], seconds] = await Promise.all([loading, backups])
        const result = results[variant]
        if (round) {
          const { perSecond, p99Ms } = summarize([round])
          result.perSecond.push(perSecond)
          result.p99Ms.push(p99Ms)
        }
        result.backupSeconds.push(...seconds)
      }
    }
  } finally {
    await stopServer(service)
  }
  const rows = (Object.keys(results) as Variant[]).map((variant) => {
    const { perSecond, p99Ms, backupSeconds } = results[variant]
    return [
      variant === 'no backup' ? 'no backup running' : `backups ${variant} the thread`,
      spread(perSecond),
      spread(p99Ms),
      backupSeconds.length > 0 ? `${spread(backupSeconds)} (${backupSeconds.length} backups)` : '',
    ]
  })
  const gain = median(results.without.backupSeconds) / median(results.with.backupSeconds)
  const p99Gain = median(results.without.p99Ms) / median(results.with.p99Ms)
  return [
    `## The backup thread (catalogue backup of ${LARGE.books.toLocaleString('en-US')} books while wrk reads single books at 16 connections, DURABILITY=full; ${rounds} rounds of ${ROUND_MS / 1000} s a variant)`,
    '',
    markdownTable(['', 'GET req/s', 'GET p99 ms', 'seconds a backup (the whole command)'], rows),
    '',
    `The thread's gain: a backup's time ${fixed(gain)} (without / with), the reads' p99 ${fixed(p99Gain)} (without / with).`,
  ].join('\n')
}
