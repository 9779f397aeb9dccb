import type { Server } from 'bun'
import { Elysia } from 'elysia'
import {
  changeObject,
  DEFAULT_CHANGES_PAGE_SIZE,
  includedRecord,
  nextLink,
  parseChangesQuery,
} from '../../jsonapi/changes'
import { httpError } from '../../jsonapi/errors'
import { EVENT_STREAM, prefersEventStream } from '../../jsonapi/media-type'
import type { ResourceRegistry } from '../../resources/registry'
import { ChangeFeed } from '../../service/change-feed'
import type { Store } from '../../store/store'
import type { ClientAddresses } from '../access/client-address'
import { clientKey } from '../access/client-key'
import { changesDocs } from '../openapi/changes-docs'
import { jsonApiResponse, READ_CACHE_CONTROL, type ResponseSettings, send } from '../responses'
import type { ChangeStreams } from './change-streams'

export const CHANGES_PATH = '/changes'

interface ChangeRouteOptions {
  readonly registry: ResourceRegistry
  readonly store: Store
  readonly prefix: string
  readonly maxPageSize: number
  readonly streams: ChangeStreams
  /** Whom a stream counts for (MAX_CHANGE_STREAMS_PER_CLIENT). */
  readonly addresses: ClientAddresses
}

/**
 * GET /api/v1/changes: a page of the change feed as a JSON:API document, or with
 * `Accept: text/event-stream` a live stream of it (docs/changes.md).
 */
export function changeRoutes({ registry, store, prefix, maxPageSize, streams, addresses }: ChangeRouteOptions) {
  const feed = new ChangeFeed(registry, store)
  const limits = {
    defaultSize: Math.min(DEFAULT_CHANGES_PAGE_SIZE, maxPageSize),
    maxSize: maxPageSize,
    isPosition: (text: string) => store.changes.isPosition(text),
  }
  const path = `${prefix}${CHANGES_PATH}`

  const stream = async (request: Request, server: Server<unknown> | null): Promise<Response> => {
    const query = parseChangesQuery(request.url, registry, limits, true)
    let after = query.after
    const lastEventId = request.headers.get('last-event-id')
    if (after === null && lastEventId !== null && lastEventId !== '') {
      if (!limits.isPosition(lastEventId)) {
        throw httpError(400, `Last-Event-ID must be the id of a change from this feed (got "${lastEventId}")`, {
          header: 'Last-Event-ID',
        })
      }
      after = lastEventId
    }
    const headers = {
      'content-type': `${EVENT_STREAM}; charset=utf-8`,
      'cache-control': 'no-cache',
      // nginx would otherwise hold events back in its buffer.
      'x-accel-buffering': 'no',
    }
    const position = await feed.streamStart(after)
    // HEAD: the headers a stream would have, and the answer complete.
    if (request.method === 'HEAD') return new Response(null, { headers })
    const client = {
      key: clientKey(request, server, addresses),
      // The connection closes a second after its last progress: a client that reads nothing loses it.
      dropConnection: () => server?.timeout(request, 1),
    }
    streams.admit(client.key)
    // A stream is quiet between changes: no idle timeout ends it (its heartbeat keeps proxies' off).
    server?.timeout(request, 0)
    const body = streams.start(position, query.types ? new Set(query.types) : null, client)
    return new Response(body, { headers })
  }

  const page = async (request: Request, set: ResponseSettings) => {
    const query = parseChangesQuery(request.url, registry, limits, false)
    const window = await feed.page(query)
    const document = {
      data: window.changes.map(changeObject),
      ...(query.includeResources
        ? { included: window.included.map(({ resource, record }) => includedRecord(registry, resource, record)) }
        : {}),
      links: { next: nextLink(path, query, window.next) },
      meta: { latest: window.latest },
    }
    return send(set, jsonApiResponse(200, document, { 'cache-control': READ_CACHE_CONTROL }), request)
  }

  return new Elysia({ name: 'change-feed' }).get(
    path,
    ({ request, set, server }) =>
      prefersEventStream(request.headers.get('accept')) ? stream(request, server) : page(request, set),
    { detail: changesDocs(registry, maxPageSize) },
  )
}
