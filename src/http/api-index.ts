import { Elysia } from 'elysia'
import type { ResourceRegistry } from '../resources/registry'
import { APP_PATH, wantsPage } from './app-page'
import { DOCS_PATH, SPEC_PATH } from './openapi/openapi'
import { jsonApiResponse, send } from './responses'

/** The service's front door: where a client or a person who knows only the host name starts. */
export const INDEX_PATH = '/'

/**
 * GET / (and HEAD): for a browser asking for a page, a 303 to the app (/app/); else a JSON:API document of links, relative as every link the service gives, to
 * each collection, the OpenAPI document (`describedby`, as JSON:API names it) and the docs page.
 * `meta` names the service, since a document needs data, errors or meta. Public, as the OpenAPI
 * document is (access-control.ts): it says nothing that one does not. Not in the OpenAPI
 * document: outside the versioned API, it would stay where it is when a /api/v2 came.
 */
export function apiIndex(registry: ResourceRegistry, prefix: string, version: string) {
  const collections = Object.fromEntries(registry.all.map((resource) => [resource.type, `${prefix}/${resource.type}`]))
  const document = {
    meta: { name: 'Library catalogue', version },
    links: { self: INDEX_PATH, ...collections, describedby: SPEC_PATH, docs: DOCS_PATH },
  }
  // A person's browser is sent to the app (app-page.ts), a program gets the document.
  const toApp = new Response(null, { status: 303, headers: { location: `${APP_PATH}/`, vary: 'accept' } })
  return new Elysia().get(
    INDEX_PATH,
    ({ request, set }) =>
      wantsPage(request.headers.get('accept')) ? toApp.clone() : send(set, jsonApiResponse(200, document), request),
    { detail: { hide: true } },
  )
}
