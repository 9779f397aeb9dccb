import { type CorsOrigins, parseCorsOrigins } from '../../http/access/cors'
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
