import { Elysia, t } from 'elysia'
import { requestedCursorProfile } from '../jsonapi/media-type'
import type { FetchLimits } from '../jsonapi/query'
import { fetchQuerySchema } from '../jsonapi/schemas'
import type { ResourceRegistry } from '../resources/registry'
import type { Store } from '../store/store'
import { operationDocs, relationshipDocs } from './openapi'
import type { OffloadedRead } from './read-calls'
import type { ReadPool } from './read-pool'
import { RelationshipController } from './relationship-controller'
import { type HandlerInput, ResourceController } from './resource-controller'
import { type ApiResponse, type ResponseSettings, send } from './responses'

/** The part of Elysia's context an operation reads and answers through. */
interface OperationContext {
  readonly request: Request
  /** Absent on routes without path parameters. */
  readonly params?: Readonly<Record<string, string | undefined>>
  readonly body: unknown
  readonly set: ResponseSettings
}

type Operation = (input: HandlerInput) => Promise<ApiResponse>

/**
 * Adapts a controller operation to an Elysia handler. Elysia reads a handler's source to decide
 * what each request needs prepared, so a handler that never names `body` is kept for the
 * operations without one: it makes GET measurably cheaper.
 */
function withoutBody(operation: Operation) {
  return async ({ request, params, set }: Omit<OperationContext, 'body'>) =>
    send(set, await operation({ url: request.url, id: params?.id }))
}

/** For a list (or a to-many related resource): also whether Accept asks for the cursor pagination profile. */
function listing(operation: Operation) {
  return async ({ request, params, set }: Omit<OperationContext, 'body'>) =>
    send(
      set,
      await operation({
        url: request.url,
        id: params?.id,
        cursorProfile: requestedCursorProfile(request.headers.get('accept')),
      }),
    )
}

function withBody(operation: Operation) {
  return async ({ request, params, body, set }: OperationContext) =>
    send(set, await operation({ url: request.url, id: params?.id, body }))
}

/**
 * Registers list, get, create, update (PUT and PATCH) and delete for every described resource, and
 * the related-resource and relationship endpoints of each of its relationships.
 */
export function resourceRoutes(
  registry: ResourceRegistry,
  store: Store,
  prefix: string,
  limits: FetchLimits & { readonly maxRelationshipIds: number },
  reads: ReadPool | null,
) {
  const api = new Elysia({ prefix })
  const offload = reads ? (read: OffloadedRead) => reads.run(read) : undefined
  const controllers = new Map(
    registry.all.map((resource) => [
      resource.type,
      new ResourceController(resource, registry, store, prefix, limits, offload),
    ]),
  )
  const controllerOf = (type: string) => controllers.get(type) as ResourceController
  for (const resource of registry.all) {
    const controller = controllerOf(resource.type)
    const docs = operationDocs(registry, resource)
    const collection = `/${resource.type}`
    const member = `${collection}/:id`
    const params = t.Object({ id: t.String({ description: `The ${resource.singular}'s id` }) })
    const update = withBody((input) => controller.update(input))
    api
      .get(
        collection,
        listing((input) => controller.list(input)),
        // For the OpenAPI document: the controller reads the raw query itself, and these all pass.
        { query: fetchQuerySchema(registry, resource, 'list'), detail: docs.list },
      )
      .get(
        member,
        withoutBody((input) => controller.show(input)),
        { params, query: fetchQuerySchema(registry, resource, 'record'), detail: docs.show },
      )
      .post(
        collection,
        withBody((input) => controller.create(input)),
        { detail: docs.create },
      )
      .put(member, update, { params, detail: docs.update })
      .patch(member, update, { params, detail: { ...docs.update, operationId: `patch_${resource.singular}` } })
      .delete(
        member,
        withoutBody((input) => controller.remove(input)),
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
      const endpoints = relationshipDocs(registry, resource, name)
      const target = registry.get(relationship.target)
      const self = `${member}/relationships/${name}`
      api
        .get(
          `${member}/${name}`,
          listing((input) => related.related(input)),
          {
            params,
            query: fetchQuerySchema(registry, target, relationship.kind === 'to-many' ? 'list' : 'record'),
            detail: endpoints.related,
          },
        )
        .get(
          self,
          withoutBody((input) => related.linkage(input)),
          { params, detail: endpoints.linkage },
        )
        .patch(
          self,
          withBody((input) => related.replace(input)),
          { params, detail: endpoints.replace },
        )
      if (relationship.kind === 'to-many') {
        api
          .post(
            self,
            withBody((input) => related.add(input)),
            { params, detail: endpoints.add },
          )
          .delete(
            self,
            withBody((input) => related.remove(input)),
            { params, detail: endpoints.remove },
          )
      }
    }
  }
  return api
}
