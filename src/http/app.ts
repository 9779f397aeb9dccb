import { availableParallelism } from 'node:os'
import { Elysia } from 'elysia'
import packageJson from '../../package.json'
import { DEFAULT_LIMITS, type RequestLimits } from '../jsonapi/limits'
import type { Logger } from '../logger'
import { type ResourceRegistry, resources } from '../resources/registry'
import { ChangeHub } from '../service/change-hub'
import { DEFAULT_CHANGES_RETENTION_SECONDS, startPruning } from '../service/change-pruning'
import type { Store } from '../store/store'
import { timedStore } from '../store/timed-store'
import { accessControl } from './access/access-control'
import type { TokenSet } from './access/api-tokens'
import { ClientAddresses } from './access/client-address'
import { requestRouting } from './access/client-key'
import { type CorsOrigins, cors } from './access/cors'
import { RateLimiter, type RateLimitOptions } from './access/rate-limiter'
import { securityHeaders } from './access/security-headers'
import { SharedRateLimit } from './access/shared-rate-limit'
import { TrustedProxies } from './access/trusted-proxies'
import { apiIndex } from './api-index'
import { AppFiles, appRoutes } from './app-page'
import { jsonApiBodyParser } from './body-parser'
import { changeRoutes } from './changes/change-routes'
import { type ChangeStreamLimits, ChangeStreams, DEFAULT_CHANGE_STREAM_LIMITS } from './changes/change-streams'
import { errorAnswers } from './error-handler'
import { acceptNegotiation } from './negotiation'
import { healthRoutes } from './observability/health'
import { type DatabaseOperation, ServiceMetrics } from './observability/metrics'
import { RequestLog } from './observability/request-log'
import { docsPage, ViewerScript } from './openapi/docs-page'
import { operationsDocs } from './openapi/openapi'
import { apiDocument } from './openapi/openapi-document'
import { OperationsController } from './operations-controller'
import { ReadPool } from './read-threads/read-pool'
import { requestLifecycle } from './request-lifecycle'
import { resourceRoutes } from './resource-routes'
import { type ResponseSettings, send } from './responses'
import { RouteTable } from './route-table'
import { SearchLanes } from './search-lanes'
import { DEFAULT_LONG_ANSWERS, type LongAnswerLimits, LongAnswers } from './streaming/long-answers'
import { warmUp } from './warm-up'

export const API_PREFIX = '/api/v1'
/** 1 MiB, the default limit on a request body. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024
/** Page sizes: 20 when a client asks for a page without a size; 100 at most by default. */
export const DEFAULT_PAGE_SIZE = 20
export const DEFAULT_MAX_PAGE_SIZE = 100
/** The most operations one atomic request may carry. */
export const DEFAULT_MAX_OPERATIONS = 100

export interface AppOptions {
  readonly store: Store
  readonly logger: Logger
  readonly maxBodyBytes?: number
  readonly maxPageSize?: number
  readonly maxOperations?: number
  /** Any limit not given keeps its default. */
  readonly limits?: Partial<RequestLimits>
  readonly registry?: ResourceRegistry
  /** True once the service is stopping: every answer then carries `Connection: close`. */
  readonly stopping?: () => boolean
  /**
   * Read workers for the reads whose cost grows with the data (see read-pool.ts); without them
   * those reads run on the main thread. Each opens the database at `databaseUrl` read-only.
   */
  readonly readWorkers?: { readonly count: number; readonly databaseUrl: string; readonly busyTimeoutMs?: number }
  /** API tokens (API_TOKENS_FILE); without them the service is open. See access-control.ts. */
  readonly tokens?: TokenSet
  /** With tokens: reads need none (PUBLIC_READ). */
  readonly publicRead?: boolean
  /**
   * Requests a minute per token or client address (RATE_LIMIT); off without it. Counted in this
   * process, or, for a worker of several, by their supervisor (a SharedRateLimit).
   */
  readonly rateLimit?: RateLimitOptions | SharedRateLimit
  /**
   * The reverse proxies whose forwarding headers name a request's client (TRUSTED_PROXIES):
   * addresses or CIDR ranges. Without them the client is the TCP peer. See client-address.ts.
   */
  readonly trustedProxies?: readonly string[]
  /** Origins browsers may call from (CORS_ORIGINS); no CORS headers without them. */
  readonly corsOrigins?: CorsOrigins
  /** Writes that change stored records without If-Match get 428 (docs/caching.md): all but creates. */
  readonly requireIfMatch?: boolean
  /** GET /metrics and the hooks that feed it; true by default. Off, neither costs anything. */
  readonly metrics?: boolean
  /**
   * The cores this process may run on: by default os.availableParallelism(), which follows its
   * CPU affinity (`taskset`, a container's cpuset). With one, unpaginated lists of up to 10,000
   * records are streamed by the main thread, not a read worker (see ReadOffload).
   */
  readonly cores?: number
  /**
   * Long answers (whole lists, records with all their related ids) in flight at once, in all and
   * per client (MAX_LONG_ANSWERS, MAX_LONG_ANSWERS_PER_CLIENT); see long-answers.ts.
   */
  readonly longAnswers?: LongAnswerLimits
  /**
   * The change feed (docs/changes.md): how long changes are kept (CHANGES_RETENTION, seconds) and
   * the limits of its live streams (MAX_CHANGE_STREAMS, MAX_CHANGE_STREAMS_PER_CLIENT,
   * CHANGE_STREAM_HEARTBEAT).
   */
  readonly changes?: { readonly retentionSeconds?: number } & Partial<ChangeStreamLimits>
  /**
   * Run what a client's first search would find cold (warm-up.ts), begun here so that the read
   * threads start while the routes are built; `warmedUp` settles when it is done. The service
   * listens after it; tests leave it off.
   */
  readonly warmUp?: boolean
  /** The cost (ms) from which a search runs in the heavy lane (src/http/search-lanes.ts); tests set their own. */
  readonly heavySearchMs?: number
}

/** Two read workers: the machines this service is sized for have two cores. */
export const DEFAULT_READ_WORKERS = 2

/** The whole HTTP service, ready for `app.handle(request)` or `app.listen(...)`. */
export function createApp({
  store,
  logger,
  maxBodyBytes = DEFAULT_MAX_BODY_BYTES,
  maxPageSize = DEFAULT_MAX_PAGE_SIZE,
  maxOperations = DEFAULT_MAX_OPERATIONS,
  limits: given = {},
  registry = resources,
  stopping = () => false,
  readWorkers,
  tokens,
  publicRead,
  rateLimit,
  trustedProxies = [],
  corsOrigins,
  requireIfMatch = false,
  metrics: metricsOn = true,
  cores = availableParallelism(),
  longAnswers: longAnswerLimits = DEFAULT_LONG_ANSWERS,
  changes = {},
  warmUp: warming = false,
  heavySearchMs,
}: AppOptions) {
  // Read replicas (PostgreSQL): each API request is run as its client's; none, no cost.
  const routing = store.routing ?? null
  // Whose each request is: for the log, the rate limit, the long answers' cap and the replicas.
  const addresses = new ClientAddresses(trustedProxies.length > 0 ? new TrustedProxies(trustedProxies) : null)
  const routeRequest = requestRouting(routing, addresses)
  const metrics = metricsOn ? new ServiceMetrics(packageJson.version, routing) : null
  const log = new RequestLog(logger)
  // Each store call and read-worker round trip, timed for the metrics and, at debug, logged.
  const databaseTimers = [metrics?.storeCall, log.debug ? log.databaseCall : undefined].filter((f) => f !== undefined)
  const databaseTimer =
    databaseTimers.length < 2
      ? databaseTimers[0]
      : (operation: DatabaseOperation, seconds: number) => {
          for (const timer of databaseTimers) timer(operation, seconds)
        }
  // What the requests use; /ready asks the store itself, so its probes are not database time.
  const timed = databaseTimer ? timedStore(store, databaseTimer) : store
  const limits: RequestLimits = { ...DEFAULT_LIMITS, ...given }
  const pageLimits = { defaultSize: Math.min(DEFAULT_PAGE_SIZE, maxPageSize), maxSize: maxPageSize }
  const fetchLimits = { ...pageLimits, ...limits }
  const reads =
    readWorkers && readWorkers.count > 0
      ? new ReadPool(
          {
            databaseUrl: readWorkers.databaseUrl,
            // Started with the first long read, perhaps after the file was replaced: not on the new one.
            sameDatabaseAs: store.identity,
            busyTimeoutMs: readWorkers.busyTimeoutMs ?? 5000,
            descriptions: registry.all,
            prefix: API_PREFIX,
            limits: fetchLimits,
          },
          readWorkers.count,
          databaseTimer && ((seconds: number) => databaseTimer('read_worker', seconds)),
        )
      : null
  const warmedUp = warming ? warmUp(registry, store, API_PREFIX, fetchLimits, reads) : Promise.resolve()
  // Awaited by whoever listens; until then, a failure is not an unhandled one.
  warmedUp.catch(() => {})
  const longAnswers = new LongAnswers(longAnswerLimits, addresses)
  const searchLanes = new SearchLanes(1, heavySearchMs)
  const viewerScript = new ViewerScript()
  const appFiles = new AppFiles()
  const api = resourceRoutes(
    registry,
    timed,
    API_PREFIX,
    fetchLimits,
    reads,
    requireIfMatch,
    cores,
    longAnswers,
    routeRequest,
    searchLanes,
  )
  const atomicLimits = {
    maxOperations,
    maxRelationshipIds: limits.maxRelationshipIds,
    maxAtomicIds: limits.maxAtomicIds,
  }
  const operations = new OperationsController(registry, timed, atomicLimits, requireIfMatch)
  const runOperations = async ({ request, body, set }: { request: Request; body: unknown; set: ResponseSettings }) =>
    send(set, await operations.run(request.url, request.headers, body), request)
  api.post(
    '/operations',
    routeRequest
      ? ({ request, body, set, server }) =>
          routeRequest(request, server, 'write', () => runOperations({ request, body, set }))
      : runOperations,
    {
      detail: operationsDocs(registry, atomicLimits),
    },
  )
  // The change feed's live side: one hub and its streams per process, and the pruning of old changes.
  const onFeedError = (error: unknown) =>
    logger.log('warn', 'change feed read failed; trying again', { error: (error as Error).message })
  const { retentionSeconds = DEFAULT_CHANGES_RETENTION_SECONDS, ...streamLimits } = changes
  const changeStreams = new ChangeStreams(new ChangeHub(store.changes, onFeedError), {
    maxStreams: streamLimits.maxStreams ?? DEFAULT_CHANGE_STREAM_LIMITS.maxStreams,
    maxStreamsPerClient: streamLimits.maxStreamsPerClient ?? DEFAULT_CHANGE_STREAM_LIMITS.maxStreamsPerClient,
    heartbeatMs: streamLimits.heartbeatMs ?? DEFAULT_CHANGE_STREAM_LIMITS.heartbeatMs,
    stallMs: streamLimits.stallMs ?? DEFAULT_CHANGE_STREAM_LIMITS.stallMs,
  })
  metrics?.countChangeStreams(() => changeStreams.count)
  const stopPruning = startPruning(store.changes, retentionSeconds, onFeedError)
  const rateLimiter =
    rateLimit instanceof SharedRateLimit
      ? rateLimit
      : rateLimit && rateLimit.perMinute > 0
        ? new RateLimiter(rateLimit)
        : undefined
  // Every route, read once all are in place: a 405 names the methods of any path the app serves
  // (the API's, the probes', /, /docs), and a request refused before routing is counted under its own.
  const app = new Elysia()
  let everyRoute: RouteTable | undefined
  const routes = (): RouteTable => {
    everyRoute ??= new RouteTable(app.routes)
    return everyRoute
  }
  const errors = errorAnswers(logger, (path) => routes().methods(path), limits.maxErrors)
  const routeOf = (method: string, path: string): string | undefined => routes().template(method, path)
  const server = () => app.server
  app.use(requestLifecycle({ log, metrics, errors, stopping, routeOf, server, addresses })).use(securityHeaders)
  // Each only when set, so that a feature left off costs nothing per request. CORS answers
  // preflights before any token is asked for; tokens and rate limits come before the Accept check.
  if (corsOrigins) app.use(cors(corsOrigins))
  if (tokens || rateLimiter)
    app.use(accessControl({ tokens, publicRead, rateLimiter, addresses, corsPreflights: corsOrigins !== undefined }))
  return app
    .use(acceptNegotiation)
    .use(jsonApiBodyParser({ maxBytes: maxBodyBytes, maxMembers: limits.maxBodyMembers }))
    .use(healthRoutes(store, stopping, logger))
    .use(metrics ? metrics.routes() : new Elysia())
    .use(
      apiDocument({
        version: packageJson.version,
        access: { tokens: tokens !== undefined, publicRead: publicRead ?? false },
      }),
    )
    .use(docsPage(viewerScript))
    .use(appRoutes(appFiles))
    .use(apiIndex(registry, API_PREFIX, packageJson.version))
    .use(api)
    .use(
      changeRoutes({
        registry,
        store: timed,
        prefix: API_PREFIX,
        maxPageSize,
        streams: changeStreams,
        addresses,
        longAnswers,
      }),
    )
    .decorate('reads', reads)
    .decorate('changeFeed', {
      streams: changeStreams,
      /** Ends the streams and the pruning: the service is stopping. */
      close: () => {
        stopPruning()
        changeStreams.closeAll()
      },
    })
    .decorate('longAnswers', longAnswers)
    .decorate('searchLanes', searchLanes)
    .decorate('viewerScript', viewerScript)
    .decorate('appFiles', appFiles)
    .decorate('warmedUp', warmedUp)
}

export type App = ReturnType<typeof createApp>
