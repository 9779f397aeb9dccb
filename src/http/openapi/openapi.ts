import type { TSchema } from '@sinclair/typebox'
import { ATOMIC_EXT, JSON_API } from '../../jsonapi/media-type'
import { humanize, withArticle, words } from '../../jsonapi/messages'
import type { FetchLimits } from '../../jsonapi/query'
import { fetchParameters, type ParameterDoc } from '../../jsonapi/query-parameters'
import {
  type AtomicLimitsDoc,
  atomicExample,
  atomicRequestSchema,
  EXAMPLE_ID,
  relationshipExample,
  relationshipRequestSchema,
  writeDocumentSchema,
  writeExample,
} from '../../jsonapi/request-schemas'
import {
  atomicResultsSchema,
  errorDocumentSchema,
  listDocumentSchema,
  relationshipDocumentSchema,
  singleDocumentSchema,
  writtenDocumentSchema,
} from '../../jsonapi/schemas'
import type { ResourceDescription } from '../../model/description'
import type { ResourceRegistry } from '../../resources/registry'

export const DOCS_PATH = '/docs'
export const SPEC_PATH = '/api/v1/openapi.json'
/** The document's media type, as Elysia sends an object. */
export const SPEC_CONTENT_TYPE = 'application/json;charset=utf-8'

function body(description: string, schema: TSchema) {
  return { description, content: { [JSON_API]: { schema } } }
}

function failure(description: string) {
  return body(description, errorDocumentSchema)
}

/** A request body, the same under both media types a write takes. */
function requestBody(schema: TSchema, example: unknown) {
  const media = { schema, example }
  return { required: true, content: { [JSON_API]: media, 'application/json': media } }
}

/**
 * The `{id}` of a record's path: ids that are not positive integers answer 404. A DELETE's is left
 * for the user to fill in (`example` false): the docs page's "Test Request" would otherwise delete
 * (or unlink) record 1 as soon as it is sent.
 */
function idParameter(resource: ResourceDescription, example = true): ParameterDoc {
  return {
    name: 'id',
    in: 'path',
    required: true,
    description: `The ${humanize(resource.singular).toLowerCase()}'s id`,
    schema: { type: 'string', pattern: '^[1-9][0-9]{0,14}$' },
    ...(example ? { example: EXAMPLE_ID } : {}),
  }
}

/** "an author", "a book collection". */
function aOne(resource: ResourceDescription): string {
  return withArticle(words(resource.singular))
}

/** The limits the documented schemas state: those the service was started with. */
export interface DocumentedLimits extends FetchLimits {
  readonly maxRelationshipIds: number
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
  413: failure(
    'The body is larger than the configured limit (1 MiB by default), as sent or once decoded, or holds more object members than its limit (20,000 by default)',
  ),
  415: failure(
    'Content-Type is not application/vnd.api+json (or application/json), or carries unsupported parameters; or Content-Encoding is not gzip, deflate, br or zstd (the answer lists them in Accept-Encoding)',
  ),
  422: failure(
    "Validation failed; every failure is listed, missing related records first (`Author must exist`), then attributes in field order (`Name can't be blank`, `Name must be a string`, `Name is too long (maximum is 1000 characters)`, `<Attribute> is not a known attribute`)",
  ),
}

/** OpenAPI operation objects for the five operations of one resource type. */
export function operationDocs(registry: ResourceRegistry, resource: ResourceDescription, limits: DocumentedLimits) {
  const tags = [humanize(resource.type)]
  const plural = humanize(resource.type).toLowerCase()
  const single = humanize(resource.singular).toLowerCase()
  const included = resource.defaultInclude.join(' and ')
  const write = (update: boolean) =>
    requestBody(writeDocumentSchema(registry, resource, update), writeExample(registry, resource, update))
  const id = [idParameter(resource)]
  return {
    list: {
      tags,
      operationId: `list_${resource.type}`,
      summary: `List ${plural}`,
      parameters: fetchParameters(registry, resource, 'list', limits),
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
      summary: `Get ${aOne(resource)}`,
      parameters: [...id, ...fetchParameters(registry, resource, 'record', limits)],
      description: `The ${single} with linkage for every relationship, and its ${included} in \`included\` (left out when there are none, unless the request names \`include\`).`,
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
      summary: `Create ${aOne(resource)}`,
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
      summary: `Update ${aOne(resource)}`,
      description: 'PUT and PATCH alike: attributes and relationships left out are left as they are.',
      parameters: id,
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
      summary: `Delete ${aOne(resource)}`,
      parameters: [idParameter(resource, false)],
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
export function relationshipDocs(
  registry: ResourceRegistry,
  resource: ResourceDescription,
  name: string,
  limits: DocumentedLimits,
) {
  const relationship = resource.relationships[name]
  if (!relationship) throw new Error(`${resource.type} has no relationship ${name}`)
  const target = registry.get(relationship.target)
  const tags = [humanize(resource.type)]
  const owner = humanize(resource.singular).toLowerCase()
  const ofOne = aOne(resource)
  const what = name.replaceAll('_', ' ')
  const toMany = relationship.kind === 'to-many'
  const id = [idParameter(resource)]
  const document = body(`The ${what} linkage of the ${owner}, with links`, relationshipDocumentSchema(target, toMany))
  const required = relationship.kind === 'to-one' && relationship.required
  const request = requestBody(
    relationshipRequestSchema(target, { toMany, required, maxIds: limits.maxRelationshipIds }),
    relationshipExample(target, toMany),
  )
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
    const parameters = verb === 'remove' ? [idParameter(resource, false)] : id
    const operation = { tags, operationId: `${verb}_${resource.singular}_${name}`, summary, parameters }
    if (removable || verb === 'add') {
      return { ...operation, requestBody: request, responses: { 200: document, ...linkWrites, ...preconditions } }
    }
    // Taking books from their author is always refused (403): no client can use the operation, so
    // the document leaves it out; the linkage GET says so.
    return { ...operation, hide: true, responses: { 403: refused, 404: notFound, ...negotiation } }
  }
  const fixed = removable
    ? ''
    : ` ${humanize(target.type)} cannot be taken from their ${owner}: PATCH and DELETE on this relationship answer 403; give them another ${owner} instead.`
  return {
    related: {
      tags,
      operationId: `get_${resource.singular}_${name}`,
      summary: `The ${what} of ${ofOne}, as ${target.type} endpoints answer (same fetching parameters)`,
      parameters: [...id, ...fetchParameters(registry, target, toMany ? 'list' : 'record', limits)],
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
      summary: `The ${what} linkage of ${ofOne}`,
      description: `Linkage and links, no records.${fixed}`,
      parameters: id,
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
      toMany ? `Replace the ${what} of ${ofOne}` : `Set the ${what} of ${ofOne}`,
    ),
    add: change('add', `Add ${what} to ${ofOne}`),
    remove: change('remove', `Remove ${what} from ${ofOne}`),
  }
}

/** The OpenAPI operation object of POST /api/v1/operations. */
export function operationsDocs(registry: ResourceRegistry, limits: AtomicLimitsDoc) {
  const atomic = `application/vnd.api+json; ext="${ATOMIC_EXT}"`
  const document = (description: string, schema: TSchema) => ({ description, content: { [atomic]: { schema } } })
  return {
    tags: ['Atomic operations'],
    operationId: 'atomic_operations',
    summary: 'Run several operations atomically (JSON:API Atomic Operations extension)',
    description:
      'add, update and remove of records and relationships, in order, in one transaction: all are stored or none. `lid` names a record added earlier in the same request. An error points at its operation: `/atomic:operations/N/...`. `If-Match` and `If-None-Match` apply to every record (or to-many relationship) stored before the request that its operations change, each compared with its stored state in the transaction, before any operation runs: `If-Match` lists one ETag per record (`"tag-of-book-1", "tag-of-book-2"`), or `*`.',
    requestBody: {
      required: true,
      content: { [atomic]: { schema: atomicRequestSchema(registry, limits), example: atomicExample(registry) } },
    },
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
      412: failure(
        'If-Match holds no ETag of the current state of a record (or to-many relationship) stored before the request that an operation changes, or If-None-Match one of it (or *): nothing of the request was written. `source.header` names the header, the detail the first such record, `meta.operation` its operation',
      ),
      422: failure('Validation failed in an operation'),
      428: failure(
        'The service requires If-Match (REQUIRE_IF_MATCH=true) and an operation changes a record stored before the request, or takes in a stored record no ETag in If-Match covers; If-Match: * lets it through',
      ),
      ...negotiation,
    },
  }
}
