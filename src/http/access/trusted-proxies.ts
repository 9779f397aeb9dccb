import { BlockList, isIP } from 'node:net'

/*
 * TRUSTED_PROXIES: the addresses (or CIDR ranges) of the reverse proxies in front of the service.
 * A request whose TCP peer is one of them may say whom it forwards (client-address.ts); from any
 * other peer those headers are ignored. Matched by node:net's BlockList, which also matches an
 * IPv4 rule against the same address mapped into IPv6 (`::ffff:127.0.0.1`, as a dual-stack
 * socket reports an IPv4 peer) and the other way round.
 */

/** The setting's entries, each checked: `{ error }` names the first that is not an address or range. */
export function parseTrustedProxies(text: string): readonly string[] | { readonly error: string } {
  const entries = text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
  for (const entry of entries) {
    if (rangeOf(entry) === null) {
      return {
        error: `TRUSTED_PROXIES: "${entry}" is not an IP address or a CIDR range (such as 127.0.0.1, 10.0.0.0/8 or fd00::/8)`,
      }
    }
  }
  return entries
}

interface Range {
  readonly address: string
  readonly family: 'ipv4' | 'ipv6'
  /** Undefined for one address. */
  readonly prefix?: number
}

/** An entry as an address or a range; null when it is neither. */
function rangeOf(entry: string): Range | null {
  const slash = entry.indexOf('/')
  const address = slash === -1 ? entry : entry.slice(0, slash)
  const version = isIP(address)
  if (version === 0) return null
  const family = version === 4 ? 'ipv4' : 'ipv6'
  if (slash === -1) return { address, family }
  const prefix = entry.slice(slash + 1)
  const bits = version === 4 ? 32 : 128
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > bits) return null
  return { address, family, prefix: Number(prefix) }
}

/** The proxies whose word on a request's client is taken. */
export class TrustedProxies {
  private readonly list = new BlockList()

  /** `entries` as parseTrustedProxies gives them; one that is not an address or range throws. */
  constructor(readonly entries: readonly string[]) {
    for (const entry of entries) {
      const range = rangeOf(entry)
      if (range === null) throw new Error(`not an IP address or CIDR range: ${entry}`)
      if (range.prefix === undefined) this.list.addAddress(range.address, range.family)
      else this.list.addSubnet(range.address, range.prefix, range.family)
    }
  }

  /** Whether `address` (as a socket or a forwarding header gives it) is one of the proxies. */
  has(address: string): boolean {
    // A zone (fe80::1%eth0) names the interface, not the host.
    const zone = address.indexOf('%')
    const bare = zone === -1 ? address : address.slice(0, zone)
    const version = isIP(bare)
    return version !== 0 && this.list.check(bare, version === 4 ? 'ipv4' : 'ipv6')
  }
}

/*
 * A trusted range lets every client inside it choose the address it is counted and logged as (it
 * sends X-Forwarded-For itself). A range wider than an IPv4 /8 or an IPv6 /32 spans networks of many
 * owners: a /8 is the largest block one network holds (10.0.0.0/8, the largest private one), a /32
 * the usual allocation to a whole provider. Private IPv6 ranges (fc00::/7, fe80::/10) are wider
 * and hold only one site's own hosts. An IPv6 range holding IPv4-mapped addresses (::ffff:0:0/96)
 * trusts those IPv4 peers too (BlockList matches them both ways): it is measured as IPv4 there.
 */
const MAPPED_IPV4 = subnet('::ffff:0:0', 96)
const PRIVATE_IPV6: readonly [BlockList, number][] = [
  [subnet('fc00::', 7), 7],
  [subnet('fe80::', 10), 10],
]

function subnet(address: string, prefix: number): BlockList {
  const list = new BlockList()
  list.addSubnet(address, prefix, 'ipv6')
  return list
}

/** Whether an entry of TRUSTED_PROXIES is a range wider than a proxy tier needs (see above). */
function tooWide(entry: string): boolean {
  const range = rangeOf(entry)
  if (range?.prefix === undefined) return false
  const { address, family, prefix } = range
  if (family === 'ipv4') return prefix < 8
  // Within the mapped block, an IPv4 range of prefix - 96; holding it whole, every IPv4 peer.
  if (MAPPED_IPV4.check(address, 'ipv6')) return prefix < 96 + 8
  if (subnet(address, prefix).check('::ffff:0:0', 'ipv6')) return true
  if (PRIVATE_IPV6.some(([block, widest]) => block.check(address, 'ipv6') && prefix >= widest)) return false
  return prefix < 32
}

/** The entries of TRUSTED_PROXIES too wide to be a proxy tier's, for a warning at start. */
export function wideTrustedRanges(entries: readonly string[]): readonly string[] {
  return entries.filter(tooWide)
}
