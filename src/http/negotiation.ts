import { Elysia } from 'elysia'
import { checkAccept, prefersEventStream } from '../jsonapi/media-type'
import { CHANGES_PATH } from './changes/change-routes'
import { HEALTH_PATH, READY_PATH } from './observability/health'
import { METRICS_PATH } from './observability/metrics'

/** Outside the API: probes and scrapers (`Accept: text/plain;version=0.0.4`) get their answer whatever they accept. */
const unnegotiated: ReadonlySet<string> = new Set([HEALTH_PATH, READY_PATH, METRICS_PATH])

/** Answers 406 before any work when the client accepts no representation the service has. */
export const acceptNegotiation = new Elysia({ name: 'jsonapi-accept' }).onRequest(({ request }) => {
  const refused = checkAccept(request.headers.get('accept'))
  // The path is looked at only for a refusal, so an ordinary request pays nothing for it.
  if (!refused) return
  const path = new URL(request.url).pathname
  if (unnegotiated.has(path)) return
  // The change feed is also a stream of Server-Sent Events.
  if (path.endsWith(CHANGES_PATH) && prefersEventStream(request.headers.get('accept'))) return
  throw refused
})
