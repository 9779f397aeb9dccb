import type { Server } from 'bun'
import { Elysia, t } from 'elysia'
import { requestedCursorProfile } from '../jsonapi/media-type'
import type { ResourceRegistry } from '../resources/registry'
import type { Store } from '../store/store'
import type { RequestRouting } from './access/client-key'
import { holdsWeakTag, unchangedSinceStreamed, WritePreconditions } from './conditional'
import { type DocumentedLimits, operationDocs, relationshipDocs } from './openapi/openapi'
import type { OffloadedRead, OffloadOptions, ReadOffload } from './read-threads/read-calls'
import type { ReadPool } from './read-threads/read-pool'
import { RelationshipController } from './relationship-controller'
import { type HandlerInput, ResourceController } from './resource-controller'
import { type ApiResponse, type ResponseSettings, send } from './responses'
import type { SearchLanes } from './search-lanes'
import { heldUntilSent, type LongAnswers } from './streaming/long-answers'

/** The part of Elysia's context an operation reads and answers through. */
interface OperationContext {
  readonly request: Request
  /** Absent on routes without path parameters. */
  readonly params?: Readonly<Record<string, string | undefined>>
  readonly body: unknown
  readonly set: ResponseSettings
  /** Null when the app answers app.handle() directly. */
  readonly server: Server<unknown> | null
}

type Operation = (input: HandlerInput) => Promise<ApiResponse>

/**
 * Adapts a read to an Elysia handler: a weak If-None-Match tag still current answers 304 before
 * anything is read, and the answer is tagged and compressed on its way out (see responses.ts). A
 * long answer holds one of the slots of `longAnswers` until it has been sent (503 when none is
 * left). Elysia reads a handler's source to decide what each request needs prepared, so the
 * handlers of operations without a request document never name it: it makes GET measurably cheaper.
 *
 * With read replicas (`routing`), each handler runs as its client's (see ReadRouting): a read's
 * store calls go to one node, a write's to the primary, whose commit the client's next reads then
 * wait for. Without them, the handler alone: nothing more per request.
 */
function reading(
  operation: Operation,
  store: Store,
  longAnswers: LongAnswers | null,
  list = false,
  routing: RequestRouting | null = null,
) {
  const read = async ({ request, params, set, server }: Omit<OperationContext, 'body'>) => {
    const noneMatch = request.headers.get('if-none-match')
    if (holdsWeakTag(noneMatch) && (await unchangedSinceStreamed(store, request, noneMatch, set))) return null
    const acceptEncoding = request.headers.get('accept-encoding')
    // A list (or a to-many related resource) also follows the cursor pagination profile when Accept asks for it.
    const cursorProfile = list ? requestedCursorProfile(request.headers.get('accept')) : null
    const response = await operation({
      url: request.url,
      id: params?.id,
      acceptEncoding,
      cursorProfile,
      request,
      server,
    })
    // Before send sets the answer's headers: a refusal is answered with the error's own.
    const release = response.release ?? longAnswers?.admit(response, request, server) ?? null
    const sent = send(set, response, request)
    return release ? heldUntilSent(sent, release) : sent
  }
  if (!routing) return read
  return ({ request, params, set, server }: Omit<OperationContext, 'body'>) =>
    routing(request, server, 'read', () => read({ request, params, set, server }))
}

/**
 * How a write treats If-Match: `guarded` checks it when sent, and requires it when the service is
 * set to (REQUIRE_IF_MATCH), since the write can overwrite what another client wrote (a to-many
 * POST too: it takes records from their owner); `none` for a create, which has nothing to compare with.
 */
type WriteGuard = 'none' | 'guarded'

function preconditionsOf(request: Request, guard: WriteGuard, requireIfMatch: boolean) {
  return guard === 'none' ? undefined : WritePreconditions.of(request.headers, requireIfMatch)
}

/** A write without a request document (DELETE of a record). */
function deleting(operation: Operation, requireIfMatch: boolean, routing: RequestRouting | null) {
  const remove = async ({ request, params, set }: Omit<OperationContext, 'body' | 'server'>) => {
    const preconditions = preconditionsOf(request, 'guarded', requireIfMatch)
    return send(set, await operation({ url: request.url, id: params?.id, preconditions }), request)
  }
  if (!routing) return remove
  return ({ request, params, set, server }: Omit<OperationContext, 'body'>) =>
    routing(request, server, 'write', () => remove({ request, params, set }))
}

function writing(operation: Operation, guard: WriteGuard, requireIfMatch: boolean, routing: RequestRouting | null) {
  const write = async ({ request, params, body, set }: Omit<OperationContext, 'server'>) => {
    const preconditions = preconditionsOf(request, guard, requireIfMatch)
    return send(set, await operation({ url: request.url, id: params?.id, body, preconditions }), request)
  }
  if (!routing) return write
  return ({ request, params, body, set, server }: OperationContext) =>
    routing(request, server, 'write', () => write({ request, params, body, set }))
}

/**
 * Registers list, get, create, update (PUT and PATCH) and delete for every described resource, and
 * the related-resource and relationship endpoints of each of its relationships.
 */
export function resourceRoutes(
  registry: ResourceRegistry,
  store: Store,
  prefix: string,
  limits: DocumentedLimits,
  reads: ReadPool | null,
  /** REQUIRE_IF_MATCH: every write but a create needs If-Match (428 without). */
  requireIfMatch = false,
  /** The cores the process may run on (AppOptions.cores). */
  cores = 2,
  /** The caps on long answers in flight; none without it. */
  longAnswers: LongAnswers | null = null,
  /** Read replicas: each request run as its client's (see reading). */
  routing: RequestRouting | null = null,
  /** Where searches run by what they cost (see search-lanes.ts); none without it. */
  searchLanes: SearchLanes | null = null,
) {
  const api = new Elysia({ prefix })
  const offload: ReadOffload | undefined = reads
    ? { run: (read: OffloadedRead, options?: OffloadOptions) => reads.run(read, options), oneCore: cores < 2 }
    : undefined
  const controllers = new Map(
    registry.all.map((resource) => [
      resource.type,
      new ResourceController(
        resource,
        registry,
        store,
        prefix,
        limits,
        offload,
        longAnswers ?? undefined,
        searchLanes ?? undefined,
      ),
    ]),
  )
  const controllerOf = (type: string) => controllers.get(type) as ResourceController
  for (const resource of registry.all) {
    const controller = controllerOf(resource.type)
    const docs = operationDocs(registry, resource, limits)
    const collection = `/${resource.type}`
    const member = `${collection}/:id`
    const params = t.Object({ id: t.String({ description: `The ${resource.singular}'s id` }) })
    const update = writing((input) => controller.update(input), 'guarded', requireIfMatch, routing)
    api
      .get(
        collection,
        reading((input) => controller.list(input), store, longAnswers, true, routing),
        // No query validator: the controller reads the raw query itself; `detail` documents it.
        { detail: docs.list },
      )
      .get(
        member,
        reading((input) => controller.show(input), store, longAnswers, false, routing),
        { params, detail: docs.show },
      )
      .post(
        collection,
        writing((input) => controller.create(input), 'none', requireIfMatch, routing),
        { detail: docs.create },
      )
      .put(member, update, { params, detail: docs.update })
      .patch(member, update, { params, detail: { ...docs.update, operationId: `patch_${resource.singular}` } })
      .delete(
        member,
        deleting((input) => controller.remove(input), requireIfMatch, routing),
        { params, detail: docs.remove },
      )

    for (const [name, relationship] of Object.entries(resource.relationships)) {
      const related = new RelationshipController(
        resource,
        name,
        registry,
        store,
        controllerOf,
        prefix,
        limits.maxRelationshipIds,
      )
      const endpoints = relationshipDocs(registry, resource, name, limits)
      const self = `${member}/relationships/${name}`
      api
        .get(
          `${member}/${name}`,
          reading((input) => related.related(input), store, longAnswers, true, routing),
          { params, detail: endpoints.related },
        )
        .get(
          self,
          reading((input) => related.linkage(input), store, longAnswers, false, routing),
          { params, detail: endpoints.linkage },
        )
        .patch(
          self,
          writing((input) => related.replace(input), 'guarded', requireIfMatch, routing),
          { params, detail: endpoints.replace },
        )
      if (relationship.kind === 'to-many') {
        api
          .post(
            self,
            writing((input) => related.add(input), 'guarded', requireIfMatch, routing),
            { params, detail: endpoints.add },
          )
          .delete(
            self,
            writing((input) => related.remove(input), 'guarded', requireIfMatch, routing),
            { params, detail: endpoints.remove },
          )
      }
    }
  }
  return api
}
