/** Starting the service with or without a piece, loading it with wrk, and medians with spreads. */
import { WITHOUT_ENV } from '../../../src/store/sqlite/commits/switches'
import type { LoadRound } from '../../harness/load'
import { runWrk } from '../../harness/load-wrk'
import { pinning } from '../../harness/measure'
import { type RunningServer, startServer, UNCAPPED_LONG_ANSWERS } from '../../harness/servers'
import { median } from '../../harness/statistics'
import type { Load } from './cases'

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
