import type { Server } from 'bun'
import { Elysia } from 'elysia'
import { DEFAULT_CHANGES_PAGE_SIZE, parseChangesQuery } from '../../jsonapi/changes'
import { httpError } from '../../jsonapi/errors'
import { EVENT_STREAM, prefersEventStream } from '../../jsonapi/media-type'
import type { ResourceRegistry } from '../../resources/registry'
import { ChangeFeed } from '../../service/change-feed'
import type { Store } from '../../store/store'
import type { ClientAddresses } from '../access/client-address'
import { clientKey } from '../access/client-key'
import { changesDocs } from '../openapi/changes-docs'
import type { ResponseSettings } from '../responses'
import type { LongAnswers } from '../streaming/long-answers'
import { ChangePages } from './change-pages'
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
  /** The long answers' slots, which a long page takes (change-pages.ts). */
  readonly longAnswers: LongAnswers
}

/**
 * GET /api/v1/changes: a page of the change feed as a JSON:API document, or with
 * `Accept: text/event-stream` a live stream of it (docs/changes.md).
 */
export function changeRoutes(options: ChangeRouteOptions) {
  const { registry, store, prefix, maxPageSize, streams, addresses, longAnswers } = options
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

  const pages = new ChangePages({ registry, feed, path, longAnswers })
  const page = (request: Request, set: ResponseSettings, server: Server<unknown> | null) =>
    pages.answer(parseChangesQuery(request.url, registry, limits, false), request, set, server)

  return new Elysia({ name: 'change-feed' }).get(
    path,
    ({ request, set, server }) =>
      prefersEventStream(request.headers.get('accept')) ? stream(request, server) : page(request, set, server),
    { detail: changesDocs(registry, maxPageSize) },
  )
}
