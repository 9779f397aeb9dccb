import { Elysia } from 'elysia'
import type { Logger } from '../../logger'
import { StoreUnavailableError } from '../../store/faults'
import type { ReadRouting } from '../../store/read-routing'
import type { Store } from '../../store/store'

export const HEALTH_PATH = '/health'
export const READY_PATH = '/ready'

/** Probes are plain JSON, not JSON:API: load balancers and orchestrators read them. */
const JSON_TYPE = 'application/json'
/** How soon to ask /ready again when the service stops or its schema is behind. */
const NOT_READY_RETRY_SECONDS = 5

const healthy = JSON.stringify({ status: 'ok' })
const ready = JSON.stringify({ status: 'ready' })
const stoppingBody = JSON.stringify({
  status: 'stopping',
  detail: 'The service is stopping; send requests to another instance',
})

/**
 * The read replicas as /ready shows them: each one's state, lag and reads. A replica that is down
 * or behind leaves the service ready, since the primary answers its reads.
 */
function replicasOf(
  routing: ReadRouting,
): { replica: string; state: string; lag_seconds: number | null; reads: number }[] {
  return routing.replicas().map((replica) => ({
    replica: replica.name,
    state: replica.state,
    lag_seconds: replica.lagSeconds,
    reads: replica.reads,
  }))
}

/** Why the store is not ready, in the words of the fault. */
function notReady(error: unknown): { reason: string; code: string; detail: string; retryAfter: number } {
  if (error instanceof StoreUnavailableError) {
    return {
      reason: error.reason,
      code: error.code,
      detail: `The database is not ready: ${error.message}`,
      retryAfter: error.retryAfterSeconds,
    }
  }
  const message = error instanceof Error ? error.message : String(error)
  return {
    reason: 'unavailable',
    code: 'ERROR',
    detail: `The database is not ready: ${message}`,
    retryAfter: NOT_READY_RETRY_SECONDS,
  }
}

/**
 * GET /health: 200 whenever the process answers (liveness). GET /ready: 200 when the database
 * answers a trivial read and its migrations are done, else 503 with Retry-After; also 503 while
 * the service is stopping, so that a load balancer drains it (readiness). Logged only when
 * readiness changes, so a probe every few seconds does not fill the log. With read replicas, both
 * answers also list them (`replicas`), whatever their state.
 */
export function healthRoutes(store: Store, stopping: () => boolean, logger: Logger) {
  let wasReady = true
  const routing = store.routing ?? null
  return new Elysia()
    .get(
      HEALTH_PATH,
      ({ set }) => {
        set.headers['content-type'] = JSON_TYPE
        return healthy
      },
      { detail: { hide: true } },
    )
    .get(
      READY_PATH,
      async ({ set }) => {
        set.headers['content-type'] = JSON_TYPE
        if (stopping()) {
          set.status = 503
          set.headers['retry-after'] = String(NOT_READY_RETRY_SECONDS)
          return stoppingBody
        }
        try {
          await store.ready()
        } catch (error) {
          const why = notReady(error)
          if (wasReady) logger.log('warn', 'not ready', { reason: why.reason, code: why.code, detail: why.detail })
          wasReady = false
          set.status = 503
          set.headers['retry-after'] = String(why.retryAfter)
          const replicas = routing ? replicasOf(routing) : undefined
          return JSON.stringify({ status: 'unavailable', reason: why.reason, detail: why.detail, replicas })
        }
        if (!wasReady) logger.log('info', 'ready again')
        wasReady = true
        return routing ? JSON.stringify({ status: 'ready', replicas: replicasOf(routing) }) : ready
      },
      { detail: { hide: true } },
    )
}
