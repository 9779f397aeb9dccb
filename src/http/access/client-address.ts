import { isIP } from 'node:net'
import type { Server } from 'bun'
import type { TrustedProxies } from './trusted-proxies'

/*
 * Whose request this is: the one place the client's address is found, for the rate limit, the
 * long answers' per-client cap, the read replicas' read-your-writes and the request log.
 *
 * It is the TCP peer's address, unless the peer is one of TRUSTED_PROXIES: then the forwarding
 * header is read from right to left (each proxy appends the address it was called from), skipping
 * the addresses that are trusted proxies themselves, and the first that is not one is the client.
 * What lies left of it was written by the client or by proxies nobody vouches for, and is never
 * read: a client cannot choose its address. `X-Forwarded-For` is read, else `Forwarded` (RFC 7239)
 * when it has a `for=`. That order because nginx, Caddy and most load balancers append to
 * X-Forwarded-For and pass a client's own `Forwarded` on untouched: read first, a client could
 * name any address in it. A header from a peer that is not a trusted proxy is ignored.
 */

/**
 * Entries of a forwarding header examined, from the right, at most: a chain of 16 trusted proxies
 * is far beyond any deployment. Each is found with lastIndexOf, and nothing left of them is split
 * or read, so the longest header that reaches the service costs about what one of 16 does. Bun
 * answers 431 itself to request headers past about 16 KiB in all (an X-Forwarded-For of 1,400 IPv4
 * entries passes, one of 1,500 does not); the function alone, given 10,000 entries, took 6 µs
 * against 5 µs for 16 (one entry, 0.8 µs; a peer that is not a trusted proxy, 0.3 µs; no
 * TRUSTED_PROXIES, 0.04 µs). Past the 16th, the client is taken to be that entry, a trusted proxy.
 */
export const MAX_FORWARDED_ENTRIES = 16

/** An entry is a node (a few dozen characters) or, in Forwarded, a node and a host, a protocol and a proxy's own node: a longer one is malformed. */
const MAX_ENTRY_LENGTH = 1024

/** What an entry says of the hop it names. */
type Hop =
  | { readonly kind: 'address'; readonly address: string }
  /** An obfuscated identifier (RFC 7239 §6.3, `_` and letters): the proxy's stable name for a client it hides. */
  | { readonly kind: 'hidden'; readonly name: string }
  /** `unknown`: the proxy could not tell whom it was called by. */
  | { readonly kind: 'unknown' }

const NODE_PORT = /^(?:\d{1,5}|_[A-Za-z0-9._-]+)$/
const OBFUSCATED = /^_[A-Za-z0-9._-]+$/

/** An RFC 7239 node (`192.0.2.1`, `[2001:db8::1]:4711`, `unknown`, `_hidden`), or an X-Forwarded-For entry (a bare IPv6 too); null when malformed. */
function hopOf(node: string): Hop | null {
  if (node.startsWith('[')) {
    const close = node.indexOf(']')
    const port = node.slice(close + 1)
    if (close === -1 || (port !== '' && !(port.startsWith(':') && NODE_PORT.test(port.slice(1))))) return null
    const address = node.slice(1, close)
    return isIP(address) === 6 ? { kind: 'address', address } : null
  }
  if (isIP(node) !== 0) return { kind: 'address', address: node }
  // A name and a port: IPv4, unknown or obfuscated (an IPv6 address with a port is bracketed).
  const colon = node.indexOf(':')
  if (colon !== -1 && (node.indexOf(':', colon + 1) !== -1 || !NODE_PORT.test(node.slice(colon + 1)))) return null
  const name = colon === -1 ? node : node.slice(0, colon)
  if (isIP(name) === 4) return { kind: 'address', address: name }
  if (name.toLowerCase() === 'unknown') return { kind: 'unknown' }
  return OBFUSCATED.test(name) ? { kind: 'hidden', name } : null
}

/** The node of one Forwarded element's `for` parameter; `unknown` when it has none; null when the element is malformed. */
function forwardedHop(element: string): Hop | null {
  let hop: Hop | null = { kind: 'unknown' }
  let seen = false
  for (const pair of element.split(';')) {
    const text = pair.trim()
    if (text === '') continue
    const equals = text.indexOf('=')
    if (equals <= 0) return null
    let value = text.slice(equals + 1)
    if (value.startsWith('"')) {
      // A node never needs an escape: a quoted value holds no quote or backslash.
      if (value.length < 2 || !value.endsWith('"') || /["\\]/.test(value.slice(1, -1))) return null
      value = value.slice(1, -1)
    } else if (value.includes('"')) return null
    if (text.slice(0, equals).toLowerCase() !== 'for') continue
    // Each parameter at most once in an element (RFC 7239 §4).
    if (seen) return null
    seen = true
    hop = hopOf(value)
  }
  return hop
}

/** Where the Forwarded header is read from: only when it says whom it forwards (a proxy may set only proto or host). */
const FORWARDED_FOR = /(?:^|[\s;,])for=/i

/**
 * The client a trusted peer forwards: the first hop from the right that is not a trusted proxy;
 * undefined when there is no forwarding header or it is malformed (the peer is then the client).
 */
function forwardedClient(headers: Headers, proxies: TrustedProxies): string | undefined {
  const xff = headers.get('x-forwarded-for')
  const forwarded = xff === null ? headers.get('forwarded') : null
  const rfc = forwarded !== null && FORWARDED_FOR.test(forwarded)
  const header = xff ?? (rfc ? forwarded : null)
  if (header === null) return undefined
  // The last trusted hop seen: whom an `unknown` on its left stands for, and the client when every hop is trusted.
  let nearest: string | undefined
  let end = header.length
  for (let examined = 0; examined < MAX_FORWARDED_ENTRIES && end >= 0; examined++) {
    // lastIndexOf would read a fromIndex of -1 as 0.
    const start = end === 0 ? -1 : header.lastIndexOf(',', end - 1)
    const entry = header.slice(start + 1, end).trim()
    end = start
    if (entry === '') continue
    if (entry.length > MAX_ENTRY_LENGTH) return undefined
    const hop = rfc ? forwardedHop(entry) : hopOf(entry)
    if (hop === null) return undefined
    if (hop.kind === 'unknown') return nearest
    if (hop.kind === 'hidden') return hop.name
    if (!proxies.has(hop.address)) return hop.address
    nearest = hop.address
  }
  return nearest
}

/** The client's address of each request, found once and remembered. */
export class ClientAddresses {
  private readonly found = new WeakMap<Request, string>()

  /** Without trusted proxies (null, or none listed) the client is always the TCP peer, and no header is read. */
  constructor(private readonly proxies: TrustedProxies | null) {
    if (proxies?.entries.length === 0) this.proxies = null
  }

  /**
   * The client's address: an IP address as the socket or the header gives it, or a proxy's
   * obfuscated name for a client it hides (`_abc`). Undefined without a server (the app answering
   * app.handle() directly, in the tests).
   */
  of(request: Request, server: Server<unknown> | null): string | undefined {
    const peer = server?.requestIP(request)?.address
    const { proxies } = this
    if (proxies === null || peer === undefined || !proxies.has(peer)) return peer
    const known = this.found.get(request)
    if (known !== undefined) return known
    const client = forwardedClient(request.headers, proxies) ?? peer
    this.found.set(request, client)
    return client
  }

  /** The rate limit's and the long answers' key for a request without a token: its client's address (see clientOf). */
  key(request: Request, server: Server<unknown> | null): string {
    // No server when the app answers app.handle() directly (the tests): one key for all.
    const address = this.of(request, server)
    return `address:${address === undefined ? 'local' : clientOf(address)}`
  }
}

/**
 * Whom an address stands for in the limits: an IPv4 address itself (an IPv4-mapped IPv6 address
 * too), an IPv6 address by its /64 prefix, since one host or home network is given a whole /64
 * and could otherwise rotate through it to dodge the limit and flood the key table.
 */
export function clientOf(address: string): string {
  const bare = address.replace(/%.*$/, '')
  if (!bare.includes(':')) return bare
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare)
  if (mapped) return mapped[1] as string
  const [head = '', tail] = bare.split('::')
  const headGroups = head === '' ? [] : head.split(':')
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':')
  const groups =
    tail === undefined
      ? headGroups
      : [...headGroups, ...Array(Math.max(0, 8 - headGroups.length - tailGroups.length)).fill('0'), ...tailGroups]
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(':')}::/64`
}
