import type { Subprocess } from 'bun'
import type { Config } from '../config'
import { RateLimiter } from '../http/access/rate-limiter'
import { answerRateAsk, isRateAsk } from '../http/access/shared-rate-limit'
import { createLogger, withFields } from '../logger'
import { resources } from '../resources/registry'
import { databaseIdentity, openStore, shownDatabaseUrl } from '../store/open'
import { isCompiledExecutable, noteDotenvFiles } from './dotenv-files'
import { listeningFields } from './listening-line'
import { NOTHING_TO_RELOAD } from './reload'
import { fail, listenFailure } from './start-failure'
import { logFeedRestart, logIndexBuilt, logMigration } from './store-log'
import { warnOfWideTrustedProxies } from './trusted-proxies-warning'

/*
 * WORKERS > 1: this process serves nothing itself. It migrates the database once, makes sure the
 * port is free, then runs WORKERS copies of the program that listen on that one port with
 * SO_REUSEPORT (the kernel spreads the connections), passes signals on to them and starts again
 * one that dies, and counts every worker's requests against RATE_LIMIT (shared-rate-limit.ts). See
 * docs/workers.md.
 */

/** What tells a copy it is worker `number` and which port to share (PORT=0 is settled by then). */
const WORKER_ENV = 'CATALOGUE_WORKER'
const PORT_ENV = 'CATALOGUE_WORKER_PORT'
/** The database the supervisor migrated (Store.identity): a worker finds the same one or serves nothing. */
const DATABASE_ENV = 'CATALOGUE_WORKER_DATABASE'

export interface WorkerSlot {
  /** 1 to WORKERS, carried by every log line as `worker`. */
  readonly number: number
  readonly port: number
  /** StoreOptions.sameDatabaseAs: the SQLite file the supervisor opened, which may be replaced since. */
  readonly database?: string
}

/** This process's slot when a supervisor started it, else null. */
export function workerSlot(env: Readonly<Record<string, string | undefined>>): WorkerSlot | null {
  const number = Number(env[WORKER_ENV])
  const port = Number(env[PORT_ENV])
  const database = env[DATABASE_ENV] || undefined
  return Number.isInteger(number) && number > 0 && Number.isInteger(port) ? { number, port, database } : null
}

/**
 * The command that starts this program again with the same arguments: the compiled executable
 * is its own entry (argv[1] is then its path inside the binary, /$bunfs/...); otherwise bun runs
 * the script again, with bun's own options but not --watch or --hot, which are the supervisor's.
 */
function ownCommand(args: readonly string[]): string[] {
  if (isCompiledExecutable()) return [process.execPath, ...args]
  const bunOptions = process.execArgv.filter((option) => !/^--(watch|hot)\b/.test(option))
  return [process.execPath, ...bunOptions, Bun.main, ...args]
}

/** Restarts of one slot wait 100 ms, doubling to 5 s while it keeps dying within 10 s of its start. */
const FIRST_RESTART_MS = 100
const LAST_RESTART_MS = 5_000
const STEADY_MS = 10_000

interface Worker {
  readonly number: number
  proc: Subprocess<'ignore', 'pipe', 'pipe'>
  startedAt: number
  ready: boolean
  /** Restarts in a row that came soon after a start. */
  quickDeaths: number
  restart?: ReturnType<typeof setTimeout>
  /** stderr lines held back until the worker listens: the start's failure, reported once. */
  heldErrors: string[]
  /** Settles once its stdout and stderr are read to their end. */
  drained: Promise<unknown>
  /** Died and left stopped (its file was replaced): its exit was logged then, not a failure of the stop. */
  retired?: boolean
}

/** Writes each line of a child's stream whole, so that lines of two workers never mix. */
async function forwardLines(stream: ReadableStream<Uint8Array>, write: (lines: string) => void): Promise<void> {
  const decoder = new TextDecoder()
  let partial = ''
  for await (const chunk of stream) {
    const text = partial + decoder.decode(chunk, { stream: true })
    const end = text.lastIndexOf('\n') + 1
    if (end > 0) write(text.slice(0, end))
    partial = text.slice(end)
  }
  if (partial !== '') write(`${partial}\n`)
}

/** Runs WORKERS copies of the service on the configured port; resolves to the exit code. */
export async function runSupervisor(
  config: Config,
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): Promise<number> {
  const logger = createLogger(config.logLevel)
  noteDotenvFiles(logger, env)
  warnOfWideTrustedProxies(logger, config.trustedProxies)
  const workers: Worker[] = []
  // SIGHUP never stops the service (reload.ts). The supervisor has nothing to reload itself; each
  // worker reads the token file again. Only a worker that listens gets it: one still starting has a
  // SIGHUP handler only once it has read the file, and reads it as it starts anyway.
  process.on('SIGHUP', () => {
    if (config.apiTokensFile === null) return logger.log('info', NOTHING_TO_RELOAD, { signal: 'SIGHUP' })
    const listening = workers.filter((w) => w.ready && w.proc.exitCode === null && w.proc.signalCode === null)
    for (const { proc } of listening) proc.kill('SIGHUP')
    logger.log('info', 'SIGHUP: passed to the workers, each reads API_TOKENS_FILE again', {
      signal: 'SIGHUP',
      workers: listening.length,
    })
  })
  // Bound without SO_REUSEPORT: a port another service holds (with or without it) fails here,
  // with the message one process gives. PORT=0 becomes a free port the workers all take.
  let port: number
  let url: string
  try {
    const probe = Bun.serve({
      port: config.port,
      hostname: config.host,
      reusePort: false,
      fetch: () => new Response(null, { status: 503 }),
    })
    port = probe.port ?? config.port
    url = probe.url.href
    probe.stop(true)
  } catch (error) {
    fail(`cannot listen on ${config.host}:${config.port}: ${listenFailure(error as Error)}`)
  }

  // Migrations once, here, rather than by every worker at once; a database that cannot be opened
  // stops the start as it does with one process.
  const store = await openStore(config.database, resources, {
    busyTimeoutMs: config.busyTimeoutMs,
    poolSize: 1,
    connectTimeoutSeconds: config.databaseConnectTimeout,
    statementTimeoutMs: config.statementTimeoutMs,
    preparedStatements: config.databasePreparedStatements,
    newGeneration: true,
    durability: config.durability,
    // With its pid, as its listening line: what no worker number marks, a pid marks as the supervisor's.
    onMigration: logMigration(withFields(logger, { pid: process.pid })),
    onIndexBuilt: logIndexBuilt(withFields(logger, { pid: process.pid })),
    onFeedRestart: logFeedRestart(logger),
  }).catch((error: Error) =>
    fail(`cannot open the database at ${shownDatabaseUrl(config.databaseUrl)}: ${error.message}`),
  )
  // Each worker writes to the database itself: on SQLite, in turns on the file's write lock, each
  // with its own group commit. Forwarding every write to this process instead (until issue 25) made
  // 0.67-0.82 of the writes (docs/performance.md, "Machinery with and without").
  const database = store.identity
  await store.close()
  /** The file the workers serve is no longer at its path: one started now would open the other. */
  const replaced = () => database !== undefined && databaseIdentity(config.database) !== database

  // RATE_LIMIT for all the workers at once: each asks this process to count its requests.
  const rates = config.rateLimit > 0 ? new RateLimiter({ perMinute: config.rateLimit }) : null
  const out = Bun.stdout.writer()
  const command = ownCommand(args)
  let stopping = false
  let started = false
  const { promise: startFailed, resolve: failStart } = Promise.withResolvers<Worker>()
  const { promise: allReady, resolve: readyAll } = Promise.withResolvers<void>()

  function spawn(number: number, quickDeaths: number): Worker {
    const proc = Bun.spawn(command, {
      env: {
        ...env,
        [WORKER_ENV]: String(number),
        [PORT_ENV]: String(port),
        [DATABASE_ENV]: database ?? '',
      },
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
      // JSON: the asks of the rate limit cost less to pass than with the structured clone.
      serialization: 'json',
      ipc: (message: { kind?: string }, child) => {
        if (rates && isRateAsk(message)) return void child.send(answerRateAsk(rates, message))
        if (message.kind !== 'ready') return
        worker.ready = true
        if (!started && workers.every((w) => w.ready)) readyAll()
      },
    })
    const worker: Worker = {
      number,
      proc,
      startedAt: Date.now(),
      ready: false,
      quickDeaths,
      heldErrors: [],
      drained: Promise.resolve(),
    }
    worker.drained = Promise.all([
      forwardLines(proc.stdout, (lines) => {
        out.write(lines)
        out.flush()
      }),
      forwardLines(proc.stderr, (lines) => {
        if (worker.ready || started) process.stderr.write(lines)
        else worker.heldErrors.push(...lines.split('\n').filter((line) => line !== ''))
      }),
    ])
    void proc.exited.then(() => exited(worker))
    return worker
  }

  function exited(worker: Worker): void {
    if (stopping) return
    if (!started) {
      failStart(worker)
      return
    }
    const { exitCode, signalCode } = worker.proc
    const lived = Date.now() - worker.startedAt
    if (replaced()) {
      // Its siblings answer 503 until the restart; a new worker would serve the new file beside them.
      worker.retired = true
      logger.log(
        'error',
        'worker exited; not started again: the database file was replaced or removed, restart the service',
        {
          worker: worker.number,
          pid: worker.proc.pid,
          code: exitCode,
          signal: signalCode,
        },
      )
      return
    }
    const quickDeaths = lived < STEADY_MS ? worker.quickDeaths + 1 : 0
    const delay = Math.min(LAST_RESTART_MS, FIRST_RESTART_MS * 2 ** Math.max(0, quickDeaths - 1))
    logger.log('warn', 'worker exited unexpectedly: starting it again', {
      worker: worker.number,
      pid: worker.proc.pid,
      code: exitCode,
      signal: signalCode,
      restart_in_ms: delay,
    })
    worker.restart = setTimeout(() => {
      if (stopping) return
      workers[worker.number - 1] = spawn(worker.number, quickDeaths)
    }, delay)
  }

  /** Signals every worker still running and waits for them all; true when each exited 0. */
  async function stopAll(signal: NodeJS.Signals): Promise<boolean> {
    for (const worker of workers) {
      clearTimeout(worker.restart)
      if (worker.proc.exitCode === null && worker.proc.signalCode === null) worker.proc.kill(signal)
    }
    // A worker ends its own stop at SHUTDOWN_TIMEOUT; one that hangs past that (and a margin) is killed.
    const killer = setTimeout(
      () => {
        for (const { proc } of workers) if (proc.exitCode === null) proc.kill('SIGKILL')
      },
      config.shutdownTimeout * 1000 + 5_000,
    )
    const codes = await Promise.all(workers.map((w) => (w.retired ? 0 : w.proc.exited)))
    await Promise.all(workers.map((w) => w.drained))
    clearTimeout(killer)
    return codes.every((code) => code === 0)
  }

  const { promise: stopped, resolve: exit } = Promise.withResolvers<number>()
  async function shutdown(signal: NodeJS.Signals): Promise<void> {
    if (stopping) return
    stopping = true
    logger.log('info', 'stopping', { signal, workers: config.workers })
    const clean = await stopAll(signal)
    logger.log(clean ? 'info' : 'error', 'stopped', clean ? {} : { error: 'a worker did not stop cleanly' })
    logger.flush()
    out.flush()
    exit(clean ? 0 : 1)
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))
  for (let number = 1; number <= config.workers; number++) workers.push(spawn(number, 0))
  const first = await Promise.race([allReady.then(() => null), startFailed, stopped])
  // A signal during the start: the workers were stopped with it.
  if (typeof first === 'number') return first
  if (first !== null) {
    stopping = true
    await stopAll('SIGTERM')
    await first.drained
    // The worker's own line (`catalogue: cannot listen ...`) says why; one line, as with one process.
    const reason = first.heldErrors.find((line) => line.startsWith('catalogue: '))
    console.error(
      reason ??
        `catalogue: worker ${first.number} exited (code ${first.proc.exitCode ?? first.proc.signalCode}) before it listened`,
    )
    return 2
  }
  started = true
  // Held back while the workers started, in case one failed: a start that succeeded shows them now.
  for (const worker of workers)
    if (worker.heldErrors.length > 0) process.stderr.write(`${worker.heldErrors.join('\n')}\n`)
  logger.log('info', 'listening', { ...listeningFields(config, url), workers: config.workers, pid: process.pid })

  return stopped
}
