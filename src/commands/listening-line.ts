import type { Config } from '../config'
import { DOCS_PATH } from '../http/openapi/openapi'
import type { LogFields } from '../logger'
import { shownDatabaseUrl } from '../store/open'

/**
 * The fields of the `listening` line: where the service answers, its docs page, and the database
 * (without its password) with the setting of its kind that says how it is used: SQLite's
 * durability, or PostgreSQL's pool size (its durability is the server's: `synchronous_commit`)
 * and its read replicas, if any (without their passwords).
 */
export function listeningFields(config: Config, url: string | undefined): LogFields {
  const database = shownDatabaseUrl(config.databaseUrl)
  const replicas =
    config.databaseReplicaUrl.length > 0 ? config.databaseReplicaUrl.map(shownDatabaseUrl).join(',') : undefined
  const how =
    config.database.kind === 'sqlite'
      ? { durability: config.durability }
      : { pool_size: config.databasePoolSize, replicas }
  return { url, docs: url === undefined ? undefined : docsUrl(url), database, ...how }
}

/**
 * The docs page's URL, to open in a browser: on a service listening on every address (0.0.0.0,
 * ::), this machine's, `localhost`, as the README says, since a browser may refuse the former.
 */
function docsUrl(listening: string): string {
  const docs = new URL(DOCS_PATH, listening)
  if (docs.hostname === '0.0.0.0' || docs.hostname === '[::]') docs.hostname = 'localhost'
  return docs.href
}
