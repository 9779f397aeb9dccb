/**
 * What both parts of `bun run bench -- machinery` share (bench/machinery.ts, machinery-backup.ts):
 * starting the service with or without a piece, loading it with wrk, and medians.
 */
import { WITHOUT_ENV } from '../src/store/machinery-switches'
import type { LoadRound } from './load'
import { runWrk } from './load-wrk'
import type { Load } from './machinery-cases'
import { pinning } from './measure'
import { freePort, type RunningServer, startServer, UNCAPPED_LONG_ANSWERS } from './servers'

export const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}
export const fixed = (value: number) =>
  value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2)
/** "median (min-max)" of `values`. */
export const spread = (values: readonly number[]) =>
  `${fixed(median(values))} (${fixed(Math.min(...values))}-${fixed(Math.max(...values))})`

export function startService(
  name: string,
  file: string,
  env: Record<string, string>,
  workers: number,
  track: (server: RunningServer) => void,
): RunningServer {
  const server = startServer(
    name,
    'src/cli.ts',
    freePort(),
    {
      HOST: '127.0.0.1',
      DATABASE_URL: `sqlite://${file}`,
      LOG_LEVEL: 'info',
      WORKERS: String(workers),
      [WITHOUT_ENV]: '',
      ...UNCAPPED_LONG_ANSWERS,
      ...env,
    },
    workers > 1 ? pinning.spread : pinning.server,
  )
  track(server)
  return server
}

/** Runs every part of `load` at once against `server` for `ms`; `sequence` keeps the POST names apart. */
export async function loadRound(server: RunningServer, load: Load, ms: number): Promise<LoadRound[]> {
  return Promise.all(
    load.parts.map((part) =>
      runWrk(
        { ...part.plan, origin: server.origin, concurrency: part.concurrency, warmupMs: 0, durationMs: ms },
        pinning.client,
      ),
    ),
  )
}
