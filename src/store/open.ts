import type { ResourceRegistry } from '../resources/registry'
import { PostgresStore } from './postgres'
import { SqliteStore } from './sqlite'
import type { Store } from './store'

/** Where the data lives, as parsed from DATABASE_URL. */
export type DatabaseLocation =
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'postgres'; readonly url: string }

/**
 * Parses `sqlite://relative/path.db`, `sqlite:///absolute/path.db`, `sqlite://:memory:` and
 * `postgres://` / `postgresql://` URLs. Returns an error sentence for anything else.
 */
export function parseDatabaseUrl(url: string): DatabaseLocation | string {
  if (url.startsWith('sqlite://')) {
    const path = url.slice('sqlite://'.length)
    if (path === '') return 'DATABASE_URL sqlite:// needs a file path, as in sqlite://data/catalogue.db'
    return { kind: 'sqlite', path }
  }
  if (/^postgres(ql)?:\/\//.test(url)) return { kind: 'postgres', url }
  return `DATABASE_URL must start with sqlite:// or postgres:// (got "${url}")`
}

/** The URL as logs and messages may show it: a password in it replaced by `***`. */
export function shownDatabaseUrl(url: string): string {
  if (!/^postgres(ql)?:\/\//.test(url) || !URL.canParse(url)) return url
  const parsed = new URL(url)
  if (parsed.password === '') return url
  parsed.password = '***'
  return parsed.toString()
}

export interface StoreOptions {
  /** How long a write waits for a lock another connection holds before it fails as `busy`. */
  readonly busyTimeoutMs?: number
  /** For a read worker: a connection that only reads, the writer having migrated the schema. */
  readonly readOnly?: boolean
  /** PostgreSQL: most connections in the pool. */
  readonly poolSize?: number
  /** PostgreSQL: seconds to wait for a connection to be established. */
  readonly connectTimeoutSeconds?: number
  /** PostgreSQL: milliseconds a statement may run (0: no limit). */
  readonly statementTimeoutMs?: number
}

export async function openStore(
  location: DatabaseLocation,
  registry: ResourceRegistry,
  options: StoreOptions = {},
): Promise<Store> {
  switch (location.kind) {
    case 'sqlite':
      return SqliteStore.open(location.path, registry, {
        busyTimeoutMs: options.busyTimeoutMs,
        readOnly: options.readOnly,
      })
    case 'postgres':
      return PostgresStore.open(location.url, registry, {
        poolSize: options.poolSize,
        connectTimeoutSeconds: options.connectTimeoutSeconds,
        statementTimeoutMs: options.statementTimeoutMs,
      })
  }
}
