import type { Server } from 'bun'
import type { ReadRouting, RequestKind } from '../../store/read-routing'
import { tokenNameOf } from './access-control'
import type { ClientAddresses } from './client-address'

/**
 * Whom a request counts for: its API token's name, else its client's address (client-address.ts).
 * The long answers' per-client cap counts by it, and read replicas remember whose commits a
 * client's reads must see by it.
 */
export function clientKey(request: Request, server: Server<unknown> | null, addresses: ClientAddresses): string {
  const token = tokenNameOf(request)
  return token === undefined ? addresses.key(request, server) : `token:${token}`
}

/** Runs a request's handling as its client's: ReadRouting.forClient, keyed by clientKey. */
export type RequestRouting = <T>(
  request: Request,
  server: Server<unknown> | null,
  kind: RequestKind,
  work: () => T,
) => T

/** The read replicas' routing of each request, by its client; null without replicas. */
export function requestRouting(routing: ReadRouting | null, addresses: ClientAddresses): RequestRouting | null {
  if (routing === null) return null
  return (request, server, kind, work) => routing.forClient(clientKey(request, server, addresses), kind, work)
}
