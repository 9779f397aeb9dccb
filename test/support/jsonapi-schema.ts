import Ajv2020, { type ErrorObject } from 'ajv/dist/2020'
import addFormats from 'ajv-formats'
import official from './jsonapi-1.1.schema.json'

/*
 * Every JSON:API answer of the HTTP tests, checked against the JSON:API 1.1 schema of the
 * json-api/json-api repository (jsonapi-1.1.schema.json: where it comes from is its first line)
 * and the media type rules of JSON:API 1.1 ("Media Type Parameter Rules"). The harness calls
 * checkJsonApiAnswer on every answer it hands a test (harness.ts, `send`).
 */

/**
 * What the service answers otherwise than JSON:API 1.1 or its schema has it, each because the
 * project's seed interface (docs/spec/interface.md, docs/spec/contract.md) dictates it, or where
 * the schema is stricter than the specification. Nothing else is let through.
 */
export const ACCEPTED = {
  /**
   * interface.md §1: every response with a body says `application/vnd.api+json; charset=utf-8`.
   * JSON:API 1.1 allows only `ext` and `profile` on its media type.
   */
  charset: 'utf-8',
  /**
   * interface.md §7: a validation error's `source.pointer` is `data/attributes/<field>`, without
   * the leading `/` of a JSON Pointer (RFC 6901) that JSON:API asks for. The 422 of a relationship
   * the type does not have is written the same way (`data/relationships/<name>`), so that a
   * client reads every field error of a document alike.
   */
  pointerWithoutSlash: /^data\/(?:attributes|relationships)\/(?:[^~/]|~0|~1)+$/,
  /**
   * interface.md §4: `data.type` is singular in request documents. Only answers are checked here:
   * nothing to let through.
   */
  singularTypeInRequests: null,
  /**
   * interface.md §2 and §7: a create naming an author that does not exist is a 422 (`Author must
   * exist`) where JSON:API has 404 for a related resource that does not exist. The schema checks
   * no status: nothing to let through.
   */
  unprocessableMissingRelated: null,
  /**
   * docs/api.md ("Links"): links are relative. JSON:API 1.1 ("Links")
   * allows any URI-reference (RFC 3986 §4.1), but the schema's `linkUrl` says `format: uri`, which
   * only an absolute URI meets: links are checked as URI-references, which still refuses what RFC
   * 3986 does not allow (an unencoded `[` in a query, say).
   */
  relativeLinks: 'uri-reference',
  /**
   * docs/api.md ("The index"): `GET /` is a JSON:API document whose top-level `links` are `self`, `authors`,
   * `book_collections`, `books`, `describedby` and `docs`. JSON:API 1.1 lists the members the
   * top-level links object MAY contain (self, related, describedby, pagination) and says of the
   * objects it defines that they MUST NOT contain others "unless otherwise noted"; the schema
   * refuses them. The index alone may have these four.
   */
  indexLinks: ['authors', 'book_collections', 'books', 'docs'],
} as const

/**
 * The schema as published, with the changes ACCEPTED names made to a copy of it; and one more, for
 * time alone: `uniqueItems` on primary data and `included` compares every pair of records (some 50
 * million for a list of 10,000), so duplicates are found instead as JSON:API states the rule, by
 * type and id across data and included (duplicateRecords), which also finds any the schema would.
 */
function acceptedSchema(): Record<string, unknown> {
  const schema = structuredClone(official) as unknown as { definitions: Record<string, Record<string, unknown>> }
  const { definitions } = schema
  const source = definitions.errorSource?.properties as Record<string, { pattern: string }>
  const pointer = source.pointer as { pattern: string }
  pointer.pattern = `(?:${pointer.pattern})|${ACCEPTED.pointerWithoutSlash.source}`
  ;(definitions.linkUrl as { format: string }).format = ACCEPTED.relativeLinks
  for (const name of ['resourceCollection', 'included']) delete definitions[name]?.uniqueItems
  return schema
}

/** Records given twice (JSON:API 1.1, "Compound Documents": one resource object per type and id). */
function duplicateRecords(document: unknown): string[] {
  if (typeof document !== 'object' || document === null) return []
  const { data, included } = document as { data?: unknown; included?: unknown }
  const records = [...(Array.isArray(data) ? data : [data]), ...(Array.isArray(included) ? included : [])]
  const seen = new Set<string>()
  const twice: string[] = []
  for (const record of records) {
    if (typeof record !== 'object' || record === null) continue
    const key = `${(record as { type?: unknown }).type}/${(record as { id?: unknown }).id}`
    if (seen.has(key)) twice.push(`${key} is given more than once in data and included`)
    seen.add(key)
  }
  return twice
}

/** The members of the index's links that ACCEPTED.indexLinks names, each a link. */
const indexLinksSchema = {
  type: 'object',
  properties: Object.fromEntries(ACCEPTED.indexLinks.map((name) => [name, { $ref: 'jsonapi#/definitions/link' }])),
  additionalProperties: false,
}

/**
 * The Atomic Operations extension's results document (https://jsonapi.org/ext/atomic, "Result
 * Objects"), which the 1.1 schema knows nothing of (an extension's members): `atomic:results`, each
 * result an object with `data` (the schema's primary data) or `meta`, or empty. Its errors are
 * plain error documents, checked by the schema itself.
 */
const atomicResultsSchema = {
  $id: 'atomic-results',
  type: 'object',
  required: ['atomic:results'],
  properties: {
    'atomic:results': {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        properties: { data: { $ref: 'jsonapi#/definitions/data' }, meta: { $ref: 'jsonapi#/definitions/meta' } },
        additionalProperties: false,
      },
    },
    jsonapi: { $ref: 'jsonapi#/definitions/jsonapi' },
    meta: { $ref: 'jsonapi#/definitions/meta' },
    links: { $ref: 'jsonapi#/definitions/topLevelLinks' },
  },
  additionalProperties: false,
}

const ajv = new Ajv2020({ allErrors: true })
addFormats(ajv)
ajv.addSchema({ ...acceptedSchema(), $id: 'jsonapi' })
const validators = {
  document: ajv.compile({ $ref: 'jsonapi' }),
  indexLinks: ajv.compile(indexLinksSchema),
  atomic: ajv.compile(atomicResultsSchema),
}

/**
 * The index (`GET /`) checked as the schema has it once the links ACCEPTED.indexLinks names are
 * taken out of its top-level links, and those checked as links; any other document as it is.
 */
function schemaErrors(path: string, document: unknown, atomic: boolean): ErrorObject[] {
  const validate = atomic ? validators.atomic : validators.document
  if (path.split('?')[0] !== '/' || typeof document !== 'object' || document === null || !('links' in document)) {
    return validate(document) ? [] : (validate.errors ?? [])
  }
  const links = { ...(document.links as Record<string, unknown>) }
  const named: Record<string, unknown> = {}
  for (const name of ACCEPTED.indexLinks) {
    if (name in links) named[name] = links[name]
    delete links[name]
  }
  const errors = validators.indexLinks(named) ? [] : [...(validators.indexLinks.errors ?? [])]
  if (!validate({ ...document, links })) errors.push(...(validate.errors ?? []))
  return errors
}

const ATOMIC_EXT = 'https://jsonapi.org/ext/atomic'

/** An answer as the harness read it. */
export interface CheckedAnswer {
  readonly method: string
  readonly path: string
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

/** `type/subtype` and the parameters of a Content-Type, names lower-cased, values unquoted. */
function mediaType(value: string): { type: string; parameters: Map<string, string> } {
  const [type = '', ...rest] = value.split(';')
  const parameters = new Map<string, string>()
  for (const part of rest) {
    const at = part.indexOf('=')
    const name = part.slice(0, at).trim().toLowerCase()
    parameters.set(
      name,
      part
        .slice(at + 1)
        .trim()
        .replace(/^"(.*)"$/, '$1'),
    )
  }
  return { type: type.trim().toLowerCase(), parameters }
}

/**
 * Throws, with what is wrong and the request, if an answer with the JSON:API media type breaks
 * JSON:API 1.1's media type rules or the schema (less what ACCEPTED lets through). Answers of
 * another type, without a body (HEAD, 204, 304), or still content-coded are not checked.
 */
export function checkJsonApiAnswer(answer: CheckedAnswer): void {
  const contentType = answer.headers.get('content-type')
  if (contentType === null || answer.text === '' || answer.headers.get('content-encoding') !== null) return
  const { type, parameters } = mediaType(contentType)
  if (type !== 'application/vnd.api+json') return
  const problems: string[] = []
  for (const [name, value] of parameters) {
    if (name === 'ext' || name === 'profile') continue
    if (name === 'charset' && value.toLowerCase() === ACCEPTED.charset) continue
    problems.push(`Content-Type has the parameter ${name}=${value}, which JSON:API 1.1 does not allow`)
  }
  let document: unknown
  try {
    document = JSON.parse(answer.text)
  } catch (error) {
    problems.push(`the body is not JSON: ${(error as Error).message}`)
  }
  if (problems.length === 0) {
    const atomic = parameters.get('ext')?.split(' ').includes(ATOMIC_EXT) === true && answer.status < 300
    problems.push(...schemaErrors(answer.path, document, atomic).slice(0, 20).map(describeError))
    if (!atomic) problems.push(...duplicateRecords(document).slice(0, 20))
  }
  if (problems.length === 0) return
  const body = answer.text.length > 2000 ? `${answer.text.slice(0, 2000)}...` : answer.text
  throw new Error(
    `${answer.method} ${answer.path} answered ${answer.status} with a document that is not JSON:API 1.1:\n` +
      `${problems.map((problem) => `  - ${problem}`).join('\n')}\nContent-Type: ${contentType}\n${body}`,
  )
}

function describeError(error: ErrorObject): string {
  return `${error.instancePath || '(document)'} ${error.message ?? error.keyword} ${JSON.stringify(error.params)} (${error.schemaPath})`
}
