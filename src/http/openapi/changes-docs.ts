import type { TSchema } from '@sinclair/typebox'
import { t } from 'elysia'
import { JSON_API } from '../../jsonapi/media-type'
import { errorDocumentSchema } from '../../jsonapi/schemas'
import type { ResourceRegistry } from '../../resources/registry'

/** A parameter of the feed, in the OpenAPI document's terms. */
interface FeedParameter {
  readonly name: string
  readonly in: 'query' | 'header'
  readonly required: false
  readonly description: string
  readonly schema: { readonly type: 'string' | 'integer'; readonly [key: string]: unknown }
  readonly example?: unknown
  readonly examples?: Readonly<Record<string, { summary: string; value: unknown; 'x-disabled': true }>>
}

/**
 * A parameter with its example: sent by the docs page's "Test Request", or for a filter only
 * offered (unticked), as the lists' filters are (jsonapi/query-parameters.ts).
 */
function parameter(
  name: string,
  where: 'query' | 'header',
  schema: FeedParameter['schema'],
  description: string,
  example?: { readonly value: unknown; readonly offered?: boolean },
): FeedParameter {
  const shown =
    example === undefined
      ? {}
      : example.offered
        ? {
            examples: {
              readme: { summary: 'Changes of books only', value: example.value, 'x-disabled': true as const },
            },
          }
        : { example: example.value }
  return { name, in: where, required: false, schema, description, ...shown }
}

const changeSchema = (types: readonly string[]) =>
  t.Object({
    type: t.Literal('changes'),
    id: t.String({ description: "The change's position in the feed: opaque, compare only for equality" }),
    attributes: t.Object({ op: t.Union([t.Literal('create'), t.Literal('update'), t.Literal('delete')]) }),
    relationships: t.Object({
      resource: t.Object({
        data: t.Object({ type: t.Union(types.map((type) => t.Literal(type))), id: t.String() }),
      }),
    }),
  })

function failure(description: string) {
  return { description, content: { [JSON_API]: { schema: errorDocumentSchema } } }
}

/** GET /api/v1/changes in the OpenAPI document (docs/changes.md says it all at length). */
export function changesDocs(registry: ResourceRegistry, maxPageSize: number) {
  const types = registry.all.map((r) => r.type)
  const page: TSchema = t.Object({
    data: t.Array(changeSchema(types)),
    included: t.Optional(t.Array(t.Object({ id: t.String(), type: t.String() }, { additionalProperties: true }))),
    links: t.Object({ next: t.String({ description: 'The URL to ask next; present also when nothing is new yet' }) }),
    meta: t.Object({
      latest: t.Union([t.String(), t.Null()], { description: 'The id of the newest change, or null' }),
    }),
  })
  return {
    tags: ['Change feed'],
    operationId: 'list_changes',
    summary: 'Every change to the catalogue, in order: a page, or a live stream (Server-Sent Events)',
    description: [
      "Each record created, updated or deleted, oldest first. A book moved to another author or collection is an `update` of the book; deleting a collection is its `delete` and an `update` of each of its books; an atomic batch's changes come together. Walk it by `links.next`: every change is seen once, and per record in the order made.",
      `With \`Accept: text/event-stream\` the same URL is a live stream: one event per change (\`id:\` the change's id, \`event: change\`, \`data:\` the change record), starting after \`page[after]\` or the \`Last-Event-ID\` header, else from now, and a comment line at least every 15 s.`,
      'Changes are kept for CHANGES_RETENTION seconds (7 days by default): a position older than that is 410 Gone, and the lists must be read again.',
    ].join('\n\n'),
    parameters: [
      parameter(
        'page[after]',
        'query',
        { type: 'string' },
        'The changes after this change id (default: from the oldest kept; a stream: from now)',
      ),
      parameter(
        'page[size]',
        'query',
        { type: 'integer', minimum: 1, maximum: maxPageSize, default: Math.min(100, maxPageSize) },
        'How many changes a page reads; a page of more than 1,000 is streamed, and counts as a long answer',
        { value: 10 },
      ),
      parameter(
        'filter[type]',
        'query',
        { type: 'string' },
        `Only changes of these types, comma-separated (${types.join(', ')}); a filtered page may hold fewer than page[size]`,
        { value: 'books', offered: true },
      ),
      parameter(
        'include',
        'query',
        { type: 'string', enum: ['resource'] },
        '`resource`: the current state of each changed record that still exists, in `included` (not on a stream)',
        { value: 'resource' },
      ),
      parameter(
        'Last-Event-ID',
        'header',
        { type: 'string' },
        'A stream resumes after this change id (what EventSource sends when it reconnects)',
      ),
    ],
    responses: {
      200: {
        description: 'A page of changes, or with Accept: text/event-stream a stream of them',
        content: {
          [JSON_API]: { schema: page },
          'text/event-stream': {
            schema: { type: 'string' as const },
            example:
              'id: 12\nevent: change\ndata: {"type":"changes","id":"12","attributes":{"op":"update"},"relationships":{"resource":{"data":{"type":"books","id":"3"}}}}\n\n',
          },
        },
      },
      406: failure(
        'The Accept header lists JSON:API only with parameters or extensions this server does not support, and not text/event-stream',
      ),
      400: failure('A malformed page[after] or Last-Event-ID, page[size] out of range, an unknown type or parameter'),
      410: failure(
        'The changes after page[after] are no longer kept, or it is from before the database was restored, copied or re-created: read the lists again',
      ),
      503: failure(
        'This process has MAX_CHANGE_STREAMS streams open, or this client MAX_CHANGE_STREAMS_PER_CLIENT, or a page of more than 1,000 changes found as many long answers in flight as MAX_LONG_ANSWERS (or MAX_LONG_ANSWERS_PER_CLIENT) allows (Retry-After says when to try again)',
      ),
    },
  }
}
