import { ConfigError, helpText, parseConfig } from '../config'
import { readTokenFile, TokenFileError, TokenSet } from '../http/access/api-tokens'
import { supervisedRateLimit } from '../http/access/shared-rate-limit'
import { createApp } from '../http/app'
import { stopServer } from '../http/shutdown'
import { createLogger, withFields } from '../logger'
import { resources } from '../resources/registry'
import { openStore, servedByReadWorkers, shownDatabaseUrl } from '../store/open'
import type { Command } from './command'
import { noteDotenvFiles } from './dotenv-files'
import { listeningFields } from './listening-line'
import { reloadOnHangup } from './reload'
import { runSupervisor, workerSlot } from './serve-supervisor'
import { fail, listenFailure } from './start-failure'
import { logFeedRestart, logIndexBuilt, logMigration } from './store-log'
import { warnOfWideTrustedProxies } from './trusted-proxies-warning'

/** Whether `host` is reachable only from this machine. */
function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host)
}

/** The tokens of API_TOKENS_FILE; null without one. A file that cannot be used stops the start. */
function loadTokens(path: string | null): TokenSet | null {
  if (path === null) return null
  try {
    return new TokenSet(readTokenFile(path))
  } catch (error) {
    if (error instanceof TokenFileError) fail(`API_TOKENS_FILE: ${error.message}`)
    throw error
  }
}

/** Starts the service; resolves to the exit code once a signal has stopped it. */
async function serve(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<number> {
  const parsed = (() => {
    try {
      return parseConfig(argv, env)
    } catch (error) {
      if (error instanceof ConfigError) fail(error.message)
      throw error
    }
  })()
  if (parsed === 'help') {
    console.log(helpText)
    return 0
  }
  const config = parsed
  // Several processes: this one, started without a slot, only runs the others (serve-supervisor.ts).
  const slot = workerSlot(env)
  if (config.workers > 1 && slot === null) return runSupervisor(config, argv, env)
  const logger = slot
    ? withFields(createLogger(config.logLevel), { worker: slot.number, pid: process.pid })
    : createLogger(config.logLevel)
  if (slot === null) {
    noteDotenvFiles(logger, env)
    warnOfWideTrustedProxies(logger, config.trustedProxies)
  }
  const tokens = loadTokens(config.apiTokensFile)
  // From here on SIGHUP reloads (reload.ts): it never stops the service, not even while it starts.
  reloadOnHangup(logger, tokens, config.apiTokensFile)

  const store = await openStore(config.database, resources, {
    busyTimeoutMs: config.busyTimeoutMs,
    poolSize: config.databasePoolSize,
    connectTimeoutSeconds: config.databaseConnectTimeout,
    statementTimeoutMs: config.statementTimeoutMs,
    preparedStatements: config.databasePreparedStatements,
    replicaUrls: config.databaseReplicaUrl,
    replicaMaxLagMs: config.replicaMaxLag * 1000,
    // The change feed's wake-ups from other instances: a direct connection, or polling alone.
    listenUrl:
      config.databaseListenUrl === 'off'
        ? null
        : config.databaseListenUrl === ''
          ? undefined
          : config.databaseListenUrl,
    onListenWarning: (message, fields) => logger.log('warn', message, fields),
    onReplicaState: (replica, previous) => {
      const level = replica.state === 'streaming' ? 'info' : 'warn'
      logger.log(level, `read replica ${replica.state}`, {
        replica: replica.name,
        was: previous,
        lag_seconds: replica.lagSeconds ?? undefined,
        // A foreign one: the database its URL reaches, and the primary's it should.
        database: replica.foreign?.database,
        expected_database: replica.foreign?.expected,
      })
    },
    onFeedRestart: logFeedRestart(logger),
    // A worker's supervisor drew it already; a worker started again must not void the tags.
    newGeneration: slot === null,
    // A worker finds the schema its supervisor migrated: only a process started alone applies any.
    onMigration: logMigration(logger),
    onIndexBuilt: logIndexBuilt(logger),
    // A worker started (again) after the file was replaced must not open the new one.
    sameDatabaseAs: slot?.database,
    durability: config.durability,
    // The service writes for every request on its main thread: checkpoints go elsewhere.
    offloadDiskWaits: true,
  }).catch((error: Error) =>
    fail(`cannot open the database at ${shownDatabaseUrl(config.databaseUrl)}: ${error.message}`),
  )
  let stopping = false
  const app = createApp({
    store,
    logger,
    maxBodyBytes: config.maxBodyBytes,
    maxPageSize: config.maxPageSize,
    maxOperations: config.maxOperations,
    stopping: () => stopping,
    requireIfMatch: config.requireIfMatch,
    metrics: config.metrics,
    // The config is a RequestLimits too: each limit is a setting.
    limits: config,
    readWorkers: servedByReadWorkers(config.database)
      ? { count: config.readWorkers, databaseUrl: config.databaseUrl, busyTimeoutMs: config.busyTimeoutMs }
      : undefined,
    tokens: tokens ?? undefined,
    publicRead: config.publicRead,
    // A worker's requests are counted by its supervisor, with the other workers' (shared-rate-limit.ts).
    rateLimit:
      config.rateLimit === 0
        ? undefined
        : slot
          ? supervisedRateLimit(config.rateLimit)
          : { perMinute: config.rateLimit },
    trustedProxies: config.trustedProxies,
    corsOrigins: config.corsOrigins ?? undefined,
    longAnswers: { total: config.maxLongAnswers, perClient: config.maxLongAnswersPerClient },
    warmUp: true,
    changes: {
      retentionSeconds: config.changesRetention,
      maxStreams: config.maxChangeStreams,
      maxStreamsPerClient: config.maxChangeStreamsPerClient,
      heartbeatMs: config.changeStreamHeartbeat * 1000,
    },
  })

  const { promise: stopped, resolve: exit } = Promise.withResolvers<number>()
  async function shutdown(signal: string): Promise<void> {
    if (stopping) return
    stopping = true
    logger.log('info', 'stopping', { signal })
    // Change streams never finish by themselves: they end now, and their clients resume elsewhere.
    app.decorator.changeFeed.close()
    // Stop accepting and let the requests in flight finish, but no longer than SHUTDOWN_TIMEOUT.
    if (app.server) {
      const outcome = await stopServer(app.server, config.shutdownTimeout * 1000)
      if (outcome.forced) {
        logger.log('warn', 'shutdown timeout reached: closed the connections still open', {
          shutdown_timeout_s: config.shutdownTimeout,
          open_requests: outcome.openRequests,
        })
      }
    }
    // Elysia logs a request after its response, a turn later: let those lines out first. No write
    // is in progress here (each one runs whole within a turn); close() commits those still queued.
    await new Promise((resolve) => setImmediate(resolve))
    let code = 0
    try {
      await app.decorator.reads?.close()
      await store.close()
    } catch (error) {
      logger.log('error', 'cannot close the database', { error: (error as Error).message })
      code = 1
    }
    logger.log('info', 'stopped')
    logger.flush()
    exit(code)
  }
  // Before listening: a signal that arrives the moment the port opens still shuts down cleanly.
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))
  // A worker whose supervisor is gone (killed, say) stops too, rather than hold the port alone.
  if (slot) process.on('disconnect', () => void shutdown('supervisor gone'))
  // What a client's first search would find cold (warm-up.ts), done before the service says it is up.
  await app.decorator.warmedUp.catch((error: Error) => logger.log('warn', 'warm-up failed', { error: error.message }))
  // Stopped meanwhile: the store is closed, there is nothing to listen for.
  if (stopping) return stopped
  try {
    // Bun's own cap would answer 413 without a JSON:API body; the body parser enforces the limit
    // instead, from Content-Length before reading and byte by byte for chunked bodies. Elysia
    // defaults to reusePort, with which a second instance on a taken port would listen too and
    // share its requests: without it, that start fails. Workers share their port on purpose; their
    // supervisor has made sure it was free (serve-supervisor.ts).
    app.listen({
      port: slot?.port ?? config.port,
      hostname: config.host,
      maxRequestBodySize: Number.MAX_SAFE_INTEGER,
      reusePort: slot !== null,
    })
  } catch (error) {
    // The read threads the warm-up started hold the file open too: closed first, as at a stop.
    await app.decorator.reads?.close()
    await store.close()
    fail(`cannot listen on ${config.host}:${config.port}: ${listenFailure(error as Error)}`)
  }
  // The API page's viewer, compressed now rather than by the first requests for it (docs-page.ts).
  app.decorator.viewerScript.prepare()
  if (slot) {
    // The supervisor logs `listening` once all its workers are.
    logger.log('info', 'worker listening', { url: app.server?.url.href })
    process.send?.({ kind: 'ready' })
  } else {
    logger.log('info', 'listening', listeningFields(config, app.server?.url.href))
  }
  if (tokens) {
    if (tokens.size === 0) {
      logger.log('warn', 'the API token file lists no tokens: every request that needs one is refused', {
        file: config.apiTokensFile,
      })
    } else {
      logger.log('info', 'API tokens loaded', { file: config.apiTokensFile, tokens: tokens.size })
    }
  } else if (!isLoopback(config.host)) {
    logger.log('warn', 'no API tokens: anyone who can reach this address can read and write (set API_TOKENS_FILE)', {
      host: config.host,
    })
  }
  return stopped
}

export const serveCommand: Command = {
  name: 'serve',
  summary: 'start the service (the default when no command is given)',
  help: helpText,
  run: serve,
}
