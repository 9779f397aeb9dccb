import { wideTrustedRanges } from '../http/access/trusted-proxies'
import type { Logger } from '../logger'

/**
 * Warns once at start of TRUSTED_PROXIES ranges wider than an IPv4 /8 or an IPv6 /32 (0.0.0.0/0,
 * ::/0...; trusted-proxies.ts says why those bounds): every client inside a trusted range can
 * choose the address it is counted and logged as. Accepted all the same: a setting that works.
 */
export function warnOfWideTrustedProxies(logger: Logger, entries: readonly string[]): void {
  const wide = wideTrustedRanges(entries)
  if (wide.length === 0) return
  logger.log(
    'warn',
    'TRUSTED_PROXIES holds a range wider than an IPv4 /8 or an IPv6 /32: every client inside it can choose the address it is counted (RATE_LIMIT) and logged as, by sending X-Forwarded-For itself; list the proxies\' own addresses or ranges (docs/deployment.md, "Behind a reverse proxy")',
    { trusted_proxies: wide.join(', ') },
  )
}
