import { Elysia } from 'elysia'
import { Counter, collectDefaultMetrics, Gauge, type Metric, Registry } from 'prom-client'
import type { ReadRouting, ReplicaState } from '../../store/read-routing'
import { type StoreOperation, storeOperations } from '../../store/timed-store'
import { RequestLatency } from './latency-histogram'

export const METRICS_PATH = '/metrics'

/** The route label of a request no route matched (a 404, a 405, a 406 refused before routing). */
export const UNMATCHED_ROUTE = 'unmatched'
/** The method label of any method outside the usual ones. */
export const OTHER_METHOD = 'other'
const knownMethods: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])

/** From half a millisecond, where a GET of one record lies, to ten seconds, a very long list. */
const requestBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
/** What the database time is counted by: a store call, or a round trip to a read worker. */
export type DatabaseOperation = StoreOperation | 'read_worker'
/** Every operation, each once (timed-store.ts lists the store's so that the compiler finds one left out). */
const databaseOperations: readonly DatabaseOperation[] = [...storeOperations, 'read_worker']

/**
 * prom-client's default metrics that mean something under Bun (checked on 1.4): process CPU,
 * memory and file descriptors, the heap, and the event-loop lag, which Bun measures with
 * perf_hooks' monitorEventLoopDelay as Node does. Left out: the active handles, resources and
 * requests (Bun reports none), the V8 heap spaces (JavaScriptCore has none: all but one read 0),
 * the GC durations (Bun emits no gc performance entries) and nodejs_version_info (it would name
 * the Node version Bun emulates; catalogue_build_info names Bun's).
 */
const keptDefaults = [
  'process_cpu_user_seconds_total',
  'process_cpu_system_seconds_total',
  'process_cpu_seconds_total',
  'process_start_time_seconds',
  'process_resident_memory_bytes',
  'process_virtual_memory_bytes',
  'process_heap_bytes',
  'process_open_fds',
  'process_max_fds',
  'nodejs_eventloop_lag_seconds',
  'nodejs_eventloop_lag_min_seconds',
  'nodejs_eventloop_lag_max_seconds',
  'nodejs_eventloop_lag_mean_seconds',
  'nodejs_eventloop_lag_stddev_seconds',
  'nodejs_eventloop_lag_p50_seconds',
  'nodejs_eventloop_lag_p90_seconds',
  'nodejs_eventloop_lag_p99_seconds',
  'nodejs_heap_size_total_bytes',
  'nodejs_heap_size_used_bytes',
  'nodejs_external_memory_bytes',
]

const replicaStates: readonly ReplicaState[] = ['starting', 'streaming', 'lagging', 'down', 'not-standby', 'foreign']

/**
 * The read replicas, as they were at their last poll (src/store/postgres/replicas/replicas.ts): each one's
 * state (1 for the one it is in), lag, reads and reads given up there for the primary, and the
 * reads the primary answered. Labels are bounded: one `replica` per DATABASE_REPLICA_URL entry
 * (host:port/database, no user or password).
 */
function replicaMetrics(routing: ReadRouting, registers: Registry[]): void {
  new Gauge({
    name: 'catalogue_replica_state',
    help: "Each read replica's state, 1 for the one it is in: streaming (read from), starting, lagging (more than REPLICA_MAX_LAG behind), down, not-standby (not in recovery) or foreign (a standby of another cluster); only streaming ones are read from",
    labelNames: ['replica', 'state'],
    registers,
    collect() {
      this.reset()
      for (const replica of routing.replicas()) {
        for (const state of replicaStates) this.set({ replica: replica.name, state }, replica.state === state ? 1 : 0)
      }
    },
  })
  new Gauge({
    name: 'catalogue_replica_lag_seconds',
    help: 'How far each read replica was behind the primary at its last poll, about (absent while not known)',
    labelNames: ['replica'],
    registers,
    collect() {
      this.reset()
      for (const replica of routing.replicas()) {
        if (replica.lagSeconds !== null) this.set({ replica: replica.name }, replica.lagSeconds)
      }
    },
  })
  new Counter({
    name: 'catalogue_database_reads_total',
    help: 'Store reads by the node that answered them: primary, or a replica (host:port/database)',
    labelNames: ['node'],
    registers,
    collect() {
      this.reset()
      this.inc({ node: 'primary' }, routing.primaryReads())
      for (const replica of routing.replicas()) this.inc({ node: replica.name }, replica.reads)
    },
  })
  new Counter({
    name: 'catalogue_replica_fallbacks_total',
    help: 'Reads that failed on a replica and were read again on the primary, by replica',
    labelNames: ['replica'],
    registers,
    collect() {
      this.reset()
      for (const replica of routing.replicas()) this.inc({ replica: replica.name }, replica.fallbacks)
    },
  })
}

let processRegistry: Registry | undefined

/**
 * The metrics of the process, shared by every app in it: once per process, since each collection
 * of the defaults starts an event-loop monitor of its own that is never stopped.
 */
function processMetrics(): Registry {
  if (processRegistry) return processRegistry
  const all = new Registry()
  collectDefaultMetrics({ register: all })
  const kept = new Registry()
  for (const name of keptDefaults) {
    const metric = all.getSingleMetric(name)
    if (metric) kept.registerMetric(metric as Metric)
  }
  processRegistry = kept
  return kept
}

/**
 * The service's metrics in the Prometheus text format: requests by method, route template and
 * status, their latency, the requests in flight and the time spent in the database. Labels are
 * bounded: a route is the template it matched (`/api/v1/books/:id`), never the path a client sent.
 */
export class ServiceMetrics {
  private readonly registry = new Registry()
  private readonly latency: RequestLatency
  /**
   * Database time, summed here and handed to prom-client only when scraped: a store call (some
   * microseconds for a read of one record) then costs two additions, not a labelled observation.
   */
  private readonly database = new Map<DatabaseOperation, { seconds: number; calls: number }>(
    databaseOperations.map((operation) => [operation, { seconds: 0, calls: 0 }]),
  )
  /** Requests whose answer has not yet been sent whole. */
  private inFlight = 0

  /** `routing`: the store's read replicas, reported with the rest (see replicaMetrics). */
  constructor(version: string, routing: ReadRouting | null = null) {
    const registers = [this.registry]
    this.latency = new RequestLatency(
      'http_request_duration_seconds',
      'Requests by method, route template and status (_count), and the time from each to its answer sent whole (a streamed answer: until it ended or was cancelled)',
      requestBuckets,
    )
    this.registry.registerMetric(this.latency.asMetric())
    const inFlight = () => this.inFlight
    new Gauge({
      name: 'http_requests_in_flight',
      help: 'Requests begun whose answer has not been sent whole',
      registers,
      collect() {
        this.set(inFlight())
      },
    })
    const database = this.database
    const summed = (name: string, help: string, of: 'seconds' | 'calls') =>
      new Counter({
        name,
        help,
        labelNames: ['operation'],
        registers,
        collect() {
          this.reset()
          for (const [operation, totals] of database) if (totals.calls > 0) this.inc({ operation }, totals[of])
        },
      })
    summed(
      'catalogue_database_seconds_total',
      'Time spent in store calls, by operation (a stream: its batches), and in round trips to the read workers (read_worker)',
      'seconds',
    )
    summed('catalogue_database_calls_total', 'Store calls and round trips to the read workers, by operation', 'calls')
    new Gauge({
      name: 'catalogue_build_info',
      help: 'The version of the service and of Bun; always 1',
      labelNames: ['version', 'bun'],
      registers,
    }).set({ version, bun: Bun.version }, 1)
    if (routing) replicaMetrics(routing, registers)
    processMetrics()
  }

  /** The change feed's live streams open in this process (docs/changes.md), read at each scrape. */
  countChangeStreams(open: () => number): void {
    new Gauge({
      name: 'catalogue_change_streams',
      help: 'Change streams (GET /api/v1/changes as Server-Sent Events) open in this process',
      registers: [this.registry],
      collect() {
        this.set(open())
      },
    })
  }

  /** For timedStore, and for ReadPool as `read_worker`: one call's time. */
  readonly storeCall = (operation: DatabaseOperation, seconds: number): void => {
    const totals = this.database.get(operation)
    if (!totals) return
    totals.seconds += seconds
    totals.calls++
  }

  /** Everything, as Prometheus scrapes it. */
  async text(): Promise<{ contentType: string; body: string }> {
    const merged = Registry.merge([this.registry, processMetrics()])
    return { contentType: merged.contentType, body: await merged.metrics() }
  }

  /** GET /metrics, hidden from the OpenAPI document: it is not part of the API. */
  routes() {
    return new Elysia().get(
      METRICS_PATH,
      async ({ set }) => {
        const { contentType, body } = await this.text()
        set.headers['content-type'] = contentType
        return body
      },
      { detail: { hide: true } },
    )
  }

  /** A request has begun: it is in flight until it is answered (a streamed answer: when its body has ended). */
  begun(): void {
    this.inFlight++
  }

  /**
   * A request answered whole (a streamed answer: once its body has ended, failed or been
   * cancelled): counted by method, route template (none for a request no route matched) and
   * status, and timed from `start`, its performance.now() when it began.
   */
  answered(method: string, route: string | undefined, status: number, start: number): void {
    this.inFlight--
    this.latency.observe(
      knownMethods.has(method) ? method : OTHER_METHOD,
      route || UNMATCHED_ROUTE,
      status,
      (performance.now() - start) / 1000,
    )
  }
}
