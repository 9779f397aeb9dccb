import { Elysia, t } from 'elysia'
import type { ResourceRegistry } from '../resources/registry'
import type { Store } from '../store/store'
import { operationDocs } from './openapi'
import { ResourceController } from './resource-controller'
import { send } from './responses'

/** Registers list, get, create, update (PUT and PATCH) and delete for every described resource. */
export function resourceRoutes(registry: ResourceRegistry, store: Store, prefix: string) {
  const api = new Elysia({ prefix })
  for (const resource of registry.all) {
    const controller = new ResourceController(resource, registry, store, prefix)
    const docs = operationDocs(registry, resource)
    const collection = `/${resource.type}`
    const member = `${collection}/:id`
    const params = t.Object({ id: t.String({ description: `The ${resource.singular}'s id` }) })
    api
      .get(collection, async ({ request, set }) => send(set, await controller.list({ url: request.url })), {
        detail: docs.list,
      })
      .get(
        member,
        async ({ request, params, set }) => send(set, await controller.show({ url: request.url, id: params.id })),
        {
          params,
          detail: docs.show,
        },
      )
      .post(
        collection,
        async ({ request, body, set }) => send(set, await controller.create({ url: request.url, body })),
        { detail: docs.create },
      )
      .put(
        member,
        async ({ request, params, body, set }) =>
          send(set, await controller.update({ url: request.url, id: params.id, body })),
        {
          params,
          detail: docs.update,
        },
      )
      .patch(
        member,
        async ({ request, params, body, set }) =>
          send(set, await controller.update({ url: request.url, id: params.id, body })),
        {
          params,
          detail: { ...docs.update, operationId: `patch_${resource.singular}` },
        },
      )
      .delete(
        member,
        async ({ request, params, set }) => send(set, await controller.remove({ url: request.url, id: params.id })),
        {
          params,
          detail: docs.remove,
        },
      )
  }
  return api
}
