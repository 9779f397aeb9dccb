import { type CorsOrigins, parseCorsOrigins } from '../../http/access/cors'
import { parseTrustedProxies } from '../../http/access/trusted-proxies'
import { boolean, checkedBy, integer, optionalPath, type Setting } from '../setting'

/** Who may call the API, how often, from which pages, and whether writes must name the version they change. */
export const accessSettings = {
  apiTokensFile: {
    flag: '--api-tokens-file',
    env: 'API_TOKENS_FILE',
    kind: optionalPath('a file'),
    fallback: '',
    help: 'file of API tokens, "NAME read|write SHA256" a line (catalogue token create makes them); read again on SIGHUP',
    doc: 'API tokens, `NAME read\\|write SHA256` a line (`catalogue token create` makes them); read again on SIGHUP. Without it the API is open (see [operations.md](operations.md))',
    brief: 'API tokens; without it the API is open ([docs/access.md](docs/access.md))',
  },
  publicRead: {
    flag: '--public-read',
    env: 'PUBLIC_READ',
    kind: boolean,
    fallback: 'false',
    help: 'true: with API tokens, reads need none (writes still do)',
    doc: '`true`: with tokens, reads need none; writes still need a `write` token',
  },
  rateLimit: {
    flag: '--rate-limit',
    env: 'RATE_LIMIT',
    kind: integer(0, 1_000_000),
    fallback: '0',
    help: 'requests a minute per API token, or per client address without one (429 above it; 0: no limit)',
    doc: 'Requests a minute per token, or per client address without one; more get 429',
    docDefault: '`0` (off)',
  },
  trustedProxies: {
    flag: '--trusted-proxies',
    env: 'TRUSTED_PROXIES',
    kind: checkedBy<readonly string[]>(
      'IPv4 or IPv6 addresses or CIDR ranges, separated by commas',
      parseTrustedProxies,
    ),
    fallback: '',
    help: 'reverse proxies in front of the service, addresses or CIDR ranges separated by commas: from them, X-Forwarded-For (else Forwarded) names the client (rate limit, log); from any other peer it is ignored (docs/deployment.md)',
    doc: 'The reverse proxies in front of the service, as addresses or CIDR ranges (`127.0.0.1`, `10.0.0.0/8`, `fd00::/8`). A request whose TCP peer is one of them is counted and logged as the client its `X-Forwarded-For` header (else, without one, its `Forwarded` `for=`) names: the first address from the right that is not a listed proxy. From any other peer those headers are ignored; any client inside a listed range can choose its address, and a range wider than an IPv4 /8 or an IPv6 /32 is warned of at start. Empty: every client is its TCP peer ([deployment.md](deployment.md#behind-a-reverse-proxy))',
    docDefault: 'none',
  },
  corsOrigins: {
    flag: '--cors-origins',
    env: 'CORS_ORIGINS',
    kind: checkedBy<CorsOrigins | null>('`*`, or origins separated by commas', parseCorsOrigins),
    fallback: '',
    help: 'origins browsers may call the API from, comma-separated, or *',
    doc: 'Origins browsers may call the API from: `*` or a comma-separated list, each as `https://app.example` (no path, no trailing slash)',
  },
  requireIfMatch: {
    flag: '--require-if-match',
    env: 'REQUIRE_IF_MATCH',
    kind: boolean,
    fallback: 'false',
    help: 'true: every write but a create (PATCH, PUT, DELETE, POST to a relationship, atomic updates) needs If-Match (428 without it)',
    doc: '`true`: every write but a create needs `If-Match` (428 without): PATCH, PUT and DELETE, POST to a relationship, and atomic operations that change stored records (`If-Match: *` lets those through); see [caching.md](caching.md)',
    brief: "Writes that could overwrite another client's need `If-Match`",
  },
} satisfies Record<string, Setting<unknown>>
