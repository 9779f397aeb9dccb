import { toOpenAPISchema } from '@elysiajs/openapi'
import { type AnyElysia, Elysia } from 'elysia'
import { send } from '../responses'
import { DOCS_PATH, SPEC_CONTENT_TYPE, SPEC_PATH } from './openapi'

/** How the service lets clients in, for the document's security schemes and requirements. */
export interface DocumentedAccess {
  /** Whether the service asks for API tokens; without them it is open to anyone. */
  readonly tokens: boolean
  /** With tokens: whether reads need none. */
  readonly publicRead: boolean
}

export interface ApiDocumentOptions {
  readonly version: string
  /** Open to anyone unless given. */
  readonly access?: DocumentedAccess
}

const TOKEN_SCHEME = 'apiToken'
const OPENAPI_VERSION = '3.1.1'
const READS: ReadonlySet<string> = new Set(['get', 'head', 'options'])

type SecurityRequirement = Record<string, string[]>
interface Parameter {
  readonly name: string
  readonly in: string
}
type Operation = Record<string, unknown> & { parameters?: Parameter[]; security?: SecurityRequirement[] }

/** What an operation asks for: `{}` is "nothing", a role in the list is the token's scope. */
function securityOf(method: string, access: DocumentedAccess | undefined): SecurityRequirement[] {
  if (!access?.tokens) return [{}]
  if (!READS.has(method)) return [{ [TOKEN_SCHEME]: ['write'] }]
  return access.publicRead ? [{}, { [TOKEN_SCHEME]: [] }] : [{ [TOKEN_SCHEME]: [] }]
}

/**
 * The parameters Elysia's plugin derived from a route's validators (path parameters), with those its
 * `detail` declares laid over them: the controllers read the query themselves, so the documented
 * query parameters (query-parameters.ts) and the stricter `{id}` live in `detail` only.
 */
function mergeParameters(derived: readonly Parameter[], declared: readonly Parameter[]): Parameter[] {
  const key = (p: Parameter) => `${p.in}:${p.name}`
  const own = new Map(declared.map((p) => [key(p), p]))
  const merged = derived.map((p) => own.get(key(p)) ?? p)
  const seen = new Set(merged.map(key))
  return [...merged, ...declared.filter((p) => !seen.has(key(p)))]
}

/** The whole document, from every route of the app `plugin` belongs to. */
function buildDocument(plugin: AnyElysia, { version, access }: ApiDocumentOptions) {
  // Paths with a dot (the document itself, /docs/scalar.js) are left out as static files.
  const generated = toOpenAPISchema(
    plugin,
    { paths: [DOCS_PATH, `${DOCS_PATH}/`] },
    undefined,
    undefined,
    OPENAPI_VERSION,
  )
  // Protected in Elysia's types; the plugin reads it the same way.
  const routes = (plugin as unknown as { getGlobalRoutes(): AnyElysia['routes'] }).getGlobalRoutes()
  const paths = generated.paths as Record<string, Record<string, Operation>>
  for (const [path, item] of Object.entries(paths)) {
    const elysiaPath = path.replace(/\{(\w+)\}/g, ':$1')
    for (const [method, operation] of Object.entries(item)) {
      const route = routes.find((r) => r.path === elysiaPath && r.method.toLowerCase() === method)
      const declared = (route?.hooks?.detail as Operation | undefined)?.parameters
      if (declared) operation.parameters = mergeParameters(operation.parameters ?? [], declared)
      operation.security ??= securityOf(method, access)
    }
  }
  const securitySchemes = access?.tokens
    ? {
        [TOKEN_SCHEME]: {
          type: 'http',
          scheme: 'bearer',
          description: 'An API token: `Authorization: Bearer <token>`. Writes need a token with the `write` scope.',
        },
      }
    : undefined
  return {
    openapi: OPENAPI_VERSION,
    info: {
      title: 'Library catalogue',
      version,
      description:
        'A JSON:API service for authors, book collections and books. Requests and responses use `application/vnd.api+json`; every error is a JSON:API error document.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    // Relative: the document describes the service that serves it, under whatever name it is reached.
    servers: [{ url: '/', description: 'The service that serves this document' }],
    paths,
    components: { schemas: generated.components.schemas ?? {}, ...(securitySchemes ? { securitySchemes } : {}) },
  }
}

/**
 * The OpenAPI 3.1 document at SPEC_PATH, of every route of the app this plugin is used in: built
 * on the first request, once all routes are in place, then served as the same bytes.
 */
export function apiDocument(options: ApiDocumentOptions) {
  const plugin = new Elysia()
  let json: string | undefined
  return plugin.get(
    SPEC_PATH,
    ({ request, set }) => {
      json ??= JSON.stringify(buildDocument(plugin, options))
      // With an ETag and compressed, as any answer of the API (300 KB, 30 KB gzipped).
      return send(set, { status: 200, body: json, headers: { 'content-type': SPEC_CONTENT_TYPE } }, request)
    },
    { detail: { hide: true } },
  )
}
