import { openapi } from '@elysiajs/openapi'
import type { TSchema } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import { ATOMIC_EXT, JSON_API } from '../jsonapi/media-type'
import { humanize } from '../jsonapi/messages'
import {
  atomicRequestSchema,
  atomicResultsSchema,
  errorDocumentSchema,
  listDocumentSchema,
  relationshipDocumentSchema,
  relationshipRequestSchema,
  singleDocumentSchema,
  writeDocumentSchema,
  writtenDocumentSchema,
} from '../jsonapi/schemas'
import type { ResourceDescription } from '../resources/description'
import type { ResourceRegistry } from '../resources/registry'
import { send } from './responses'

export const DOCS_PATH = '/docs'
export const SPEC_PATH = '/api/v1/openapi.json'
/** As Elysia sends an object. */
const SPEC_CONTENT_TYPE = 'application/json;charset=utf-8'

function body(description: string, schema: TSchema) {
  return { description, content: { [JSON_API]: { schema } } }
}

function failure(description: string) {
  return body(description, errorDocumentSchema)
}

/** Conditional requests (docs/caching.md). */
const notModified = {
  304: { description: 'Not Modified: If-None-Match holds the ETag this answer would have; no body' },
}
const preconditions = {
  412: failure('If-Match holds no ETag of the current state (or If-None-Match one of it, or *): nothing was written'),
  428: failure('The service requires If-Match on this write (REQUIRE_IF_MATCH=true) and none was sent'),
}

const notFound = failure('No record has this id (a word, a negative or fractional number included): `{"errors": []}`')
const negotiation = {
  406: failure('The Accept header lists JSON:API only with parameters or extensions this server does not support'),
}
const writeFailures = {
  400: failure('The body is not JSON, not UTF-8, or not a JSON:API document with a data object'),
  403: failure('The document sets a client-generated id or a to-many relationship'),
  409: failure('data.type is not this resource type, or data.id does not match the path'),
  413: failure('The body is larger than the configured limit (1 MiB by default)'),
  415: failure('Content-Type is not application/vnd.api+json (or application/json), or carries unsupported parameters'),
  422: failure(
    "Validation failed; every failure is listed, missing related records first (`Author must exist`), then attributes in field order (`Name can't be blank`, `Name must be a string`, `Name is too long (maximum is 1000 characters)`, `<Attribute> is not a known attribute`)",
  ),
}

/** OpenAPI operation objects for the five operations of one resource type. */
export function operationDocs(registry: ResourceRegistry, resource: ResourceDescription) {
  const tags = [humanize(resource.type)]
  const plural = humanize(resource.type).toLowerCase()
  const single = humanize(resource.singular).toLowerCase()
  const included = resource.defaultInclude.join(' and ')
  const write = (update: boolean) => ({
    required: true,
    content: {
      [JSON_API]: { schema: writeDocumentSchema(registry, resource, update) },
      'application/json': { schema: writeDocumentSchema(registry, resource, update) },
    },
  })
  return {
    list: {
      tags,
      operationId: `list_${resource.type}`,
      summary: `List ${plural}`,
      description: `The ${plural}, in id order unless sorted. Without page[...] every record, streamed; with it a page, with links and meta.total. Relationships carry \`meta.included = false\` unless included.`,
      responses: {
        200: body(`All ${plural}`, listDocumentSchema(registry, resource)),
        ...notModified,
        400: failure(
          'An unknown or repeated query parameter, a malformed include, fields, sort, filter or page, or one over its limit (include paths and depth, search words, filter ids, page size)',
        ),
        ...negotiation,
      },
    },
    show: {
      tags,
      operationId: `get_${resource.singular}`,
      summary: `Get a ${single}`,
      description: `The ${single} with linkage for every relationship, and its ${included} in \`included\` (left out when there are none).`,
      responses: {
        200: body(`The ${single}`, singleDocumentSchema(registry, resource)),
        ...notModified,
        400: failure(
          'A malformed include or fields parameter, include over its limits, or a parameter a single record does not take',
        ),
        404: notFound,
        ...negotiation,
      },
    },
    create: {
      tags,
      operationId: `create_${resource.singular}`,
      summary: `Create a ${single}`,
      requestBody: write(false),
      responses: {
        201: {
          ...body(`The new ${single}`, writtenDocumentSchema(registry, resource)),
          headers: { Location: { description: `The new ${single}'s URL`, schema: { type: 'string' as const } } },
        },
        ...writeFailures,
        ...negotiation,
      },
    },
    update: {
      tags,
      operationId: `update_${resource.singular}`,
      summary: `Update a ${single} (PUT and PATCH alike: absent fields are left as they are)`,
      requestBody: write(true),
      responses: {
        200: body(`The updated ${single}`, writtenDocumentSchema(registry, resource)),
        ...writeFailures,
        ...preconditions,
        403: failure('The document sets a to-many relationship'),
        404: notFound,
        ...negotiation,
      },
    },
    remove: {
      tags,
      operationId: `delete_${resource.singular}`,
      summary: `Delete a ${single}`,
      responses: {
        204: { description: 'Deleted; no body' },
        400: failure('A body was sent that is not JSON (a DELETE needs none)'),
        404: notFound,
        409: failure('Other records still need this one (an author who still has books)'),
        ...preconditions,
        413: writeFailures[413],
        415: failure('A body was sent with a Content-Type other than JSON (a DELETE needs none)'),
        ...negotiation,
      },
    },
  }
}

/** OpenAPI operation objects for the endpoints of one relationship of one type. */
export function relationshipDocs(registry: ResourceRegistry, resource: ResourceDescription, name: string) {
  const relationship = resource.relationships[name]
  if (!relationship) throw new Error(`${resource.type} has no relationship ${name}`)
  const target = registry.get(relationship.target)
  const tags = [humanize(resource.type)]
  const owner = humanize(resource.singular).toLowerCase()
  const what = name.replaceAll('_', ' ')
  const toMany = relationship.kind === 'to-many'
  const document = body(`The ${what} linkage of the ${owner}, with links`, relationshipDocumentSchema(target, toMany))
  const request = {
    required: true,
    content: {
      [JSON_API]: { schema: relationshipRequestSchema(target, toMany) },
      'application/json': { schema: relationshipRequestSchema(target, toMany) },
    },
  }
  const missing = failure(`No ${owner} has this id (\`{"errors": []}\`), or a related record named does not exist`)
  const linkWrites = {
    400: failure('The body is not a relationship document of the right shape, or names more records than allowed'),
    409: failure(`A resource identifier is not of type ${target.type}`),
    413: writeFailures[413],
    415: writeFailures[415],
    422: failure(`The ${what} cannot be null: \`${humanize(name)} must exist\``),
    404: missing,
    ...negotiation,
  }
  const inverse = toMany ? registry.inverseOf(resource, name) : null
  const removable = !inverse?.required
  const refused = failure(`${humanize(target.type)} cannot be taken from their ${owner}: each needs one`)
  const change = (verb: string, summary: string) => {
    // Taking books from their author is always refused: that operation answers 403 and nothing else.
    const responses: Record<string, typeof document> =
      !removable && verb !== 'add'
        ? { 403: refused, 404: notFound, ...negotiation }
        : { 200: document, ...linkWrites, ...(verb === 'add' ? { 412: preconditions[412] } : preconditions) }
    return { tags, operationId: `${verb}_${resource.singular}_${name}`, summary, requestBody: request, responses }
  }
  return {
    related: {
      tags,
      operationId: `get_${resource.singular}_${name}`,
      summary: `The ${what} of a ${owner}, as ${target.type} endpoints answer (same fetching parameters)`,
      responses: {
        200: toMany
          ? body(`The ${what}`, listDocumentSchema(registry, target))
          : body(`The ${what}, or data null`, singleDocumentSchema(registry, target, !relationship.required)),
        ...notModified,
        400: failure('A malformed or unsupported query parameter, or one over its limit'),
        404: notFound,
        ...negotiation,
      },
    },
    linkage: {
      tags,
      operationId: `get_${resource.singular}_${name}_relationship`,
      summary: `The ${what} linkage of a ${owner}`,
      responses: {
        200: document,
        ...notModified,
        400: failure('A query parameter was given'),
        404: notFound,
        ...negotiation,
      },
    },
    replace: change(
      toMany ? 'replace' : 'set',
      toMany ? `Replace the ${what} of a ${owner}` : `Set the ${what} of a ${owner}`,
    ),
    add: change('add', `Add ${what} to a ${owner}`),
    remove: change('remove', `Remove ${what} from a ${owner}`),
  }
}

/** The OpenAPI operation object of POST /api/v1/operations. */
export function operationsDocs() {
  const atomic = `application/vnd.api+json; ext="${ATOMIC_EXT}"`
  const document = (description: string, schema: TSchema) => ({ description, content: { [atomic]: { schema } } })
  return {
    tags: ['Atomic operations'],
    operationId: 'atomic_operations',
    summary: 'Run several operations atomically (JSON:API Atomic Operations extension)',
    description:
      'add, update and remove of records and relationships, in order, in one transaction: all are stored or none. `lid` names a record added earlier in the same request. An error points at its operation: `/atomic:operations/N/...`.',
    requestBody: { required: true, content: { [atomic]: { schema: atomicRequestSchema } } },
    responses: {
      200: document(
        'One result per operation, in order: `{"data": ...}` for added or updated records, `{}` otherwise',
        atomicResultsSchema,
      ),
      400: failure(
        'Not an atomic document, a malformed operation, an unknown lid, or more operations or relationship members than allowed',
      ),
      403: failure('An operation removes books from their author'),
      404: failure('An operation names a record that does not exist'),
      409: failure('A type does not match, or a record cannot be removed while others need it'),
      413: writeFailures[413],
      415: failure(`Content-Type is not ${atomic}`),
      422: failure('Validation failed in an operation'),
      ...negotiation,
    },
  }
}

/** The OpenAPI 3.1 document at SPEC_PATH and the docs page at DOCS_PATH. */
export function apiDocs(version: string) {
  const docs = openapi({
    path: DOCS_PATH,
    specPath: SPEC_PATH,
    documentation: {
      info: {
        title: 'Library catalogue',
        version,
        description:
          'A JSON:API service for authors, book collections and books. Requests and responses use `application/vnd.api+json`; every error is a JSON:API error document.',
      },
    },
    exclude: { paths: [DOCS_PATH, SPEC_PATH] },
  })
  // The plugin builds the document once and hands the same object back: its text is kept too.
  const texts = new WeakMap<object, string>()
  // A hook of this instance only: it sees the plugin's two routes and no other. The document
  // (250 KB) gets an ETag and is compressed as any answer of the API is; the page is left alone.
  return new Elysia({ name: 'api-docs' })
    .onAfterHandle(({ request, set, responseValue }) => {
      if (typeof responseValue !== 'object' || responseValue === null || responseValue instanceof Response) return
      let text = texts.get(responseValue)
      if (text === undefined) {
        text = JSON.stringify(responseValue)
        texts.set(responseValue, text)
      }
      return send(set, { status: 200, body: text, headers: { 'content-type': SPEC_CONTENT_TYPE } }, request)
    })
    .use(docs)
}
