import { Elysia, t } from 'elysia'
import type { ResourceRegistry } from '../resources/registry'
import type { Store } from '../store/store'
import { operationDocs } from './openapi'
import { ResourceController } from './resource-controller'

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
      .get(collection, ({ request }) => controller.list({ url: request.url }), { detail: docs.list })
      .get(member, ({ request, params }) => controller.show({ url: request.url, id: params.id }), {
        params,
        detail: docs.show,
      })
      .post(collection, ({ request, body }) => controller.create({ url: request.url, body }), { detail: docs.create })
      .put(member, ({ request, params, body }) => controller.update({ url: request.url, id: params.id, body }), {
        params,
        detail: docs.update,
      })
      .patch(member, ({ request, params, body }) => controller.update({ url: request.url, id: params.id, body }), {
        params,
        detail: { ...docs.update, operationId: `patch_${resource.singular}` },
      })
      .delete(member, ({ request, params }) => controller.remove({ url: request.url, id: params.id }), {
        params,
        detail: docs.remove,
      })
  }
  return api
}
