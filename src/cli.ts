#!/usr/bin/env bun
import { ConfigError, helpText, parseConfig } from './config'
import { createApp } from './http/app'
import { createLogger } from './logger'
import { resources } from './resources/registry'
import { openStore } from './store/open'

/** A start-up failure: one line on stderr and exit code 2, never a stack trace. */
function fail(message: string): never {
  console.error(`catalogue: ${message}`)
  process.exit(2)
}

const parsed = (() => {
  try {
    return parseConfig(Bun.argv.slice(2), process.env)
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message)
    throw error
  }
})()
if (parsed === 'help') {
  console.log(helpText)
  process.exit(0)
}
const config = parsed
const logger = createLogger(config.logLevel)

const store = await openStore(config.database, resources).catch((error: Error) =>
  fail(`cannot open the database at ${config.databaseUrl}: ${error.message}`),
)
const app = createApp({
  store,
  logger,
  maxBodyBytes: config.maxBodyBytes,
  maxPageSize: config.maxPageSize,
  maxOperations: config.maxOperations,
  limits: {
    maxSearchWords: config.maxSearchWords,
    maxIncludeDepth: config.maxIncludeDepth,
    maxIncludePaths: config.maxIncludePaths,
    maxFilterIds: config.maxFilterIds,
    maxRelationshipIds: config.maxRelationshipIds,
    maxErrors: config.maxErrors,
  },
})

let stopping = false
async function shutdown(signal: string): Promise<void> {
  if (stopping) return
  stopping = true
  logger.log('info', 'stopping', { signal })
  // Stop accepting, let the requests in flight finish, then close the database.
  await app.stop(false)
  // Elysia logs a request after its response, a turn later: let those lines out first.
  await new Promise((resolve) => setImmediate(resolve))
  await store.close()
  logger.log('info', 'stopped')
  logger.flush()
  process.exit(0)
}
// Before listening: a signal that arrives the moment the port opens still shuts down cleanly.
process.on('SIGTERM', () => void shutdown('SIGTERM'))
process.on('SIGINT', () => void shutdown('SIGINT'))

try {
  // Bun's own cap would answer 413 without a JSON:API body; the body parser enforces the limit
  // instead, from Content-Length before reading and byte by byte for chunked bodies.
  app.listen({ port: config.port, hostname: config.host, maxRequestBodySize: Number.MAX_SAFE_INTEGER })
} catch (error) {
  await store.close()
  fail(`cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`)
}
logger.log('info', 'listening', { url: app.server?.url.href, database: config.databaseUrl })
