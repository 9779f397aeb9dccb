import { join } from 'node:path'
import { parseDatabaseUrl } from '../../store/open'
import { type Durability, durabilities } from '../../store/sqlite/open-database'
import { boolean, checkedBy, integer, list, milliseconds, oneOf, type Setting, seconds, text } from '../setting'

/** Where the data lives unless DATA_DIR says otherwise, and the database file's name in it. */
const DEFAULT_DATA_DIR = 'data'
const DATABASE_FILE = 'catalogue.db'

/** The SQLite database in the data folder: what DATABASE_URL is when it is not set. */
export function defaultDatabaseUrl(dataDir: string): string {
  return `sqlite://${join(dataDir, DATABASE_FILE)}`
}

/** The database, where it is and how the service waits on it. */
export const databaseSettings = {
  dataDir: {
    flag: '--data-dir',
    env: 'DATA_DIR',
    kind: text('a folder'),
    fallback: DEFAULT_DATA_DIR,
    help: `folder of the service's data, relative to the working folder or absolute: without DATABASE_URL the database is ${DATABASE_FILE} in it (made when missing)`,
    doc: `The folder of the service's data: without \`DATABASE_URL\`, the database is \`${DATABASE_FILE}\` in it (relative to the working directory; created)`,
    brief: `The folder of the default SQLite database, \`${DATABASE_FILE}\``,
  },
  databaseUrl: {
    flag: '--database-url',
    env: 'DATABASE_URL',
    // Checked here; where it points (Config.database) and its default in DATA_DIR are rules.ts's.
    kind: checkedBy<string>('a `sqlite://` or `postgres://` URL', (url) => {
      const location = parseDatabaseUrl(url)
      return typeof location === 'string' ? { error: location } : url
    }),
    fallback: defaultDatabaseUrl(DEFAULT_DATA_DIR),
    help: `sqlite://relative/path.db, sqlite:///absolute/path.db, sqlite://:memory: or postgres://user@host:port/db; unset: ${DATABASE_FILE} in DATA_DIR`,
    doc: "`sqlite://relative/path.db` (relative to the working directory; the folder is created), `sqlite:///absolute/path.db`, `sqlite://:memory:`, or `postgres://user@host:port/db` (the database name is required) for the PostgreSQL store ([postgres.md](postgres.md); read workers are SQLite's, so none start over PostgreSQL)",
    docDefault: `\`${DATABASE_FILE}\` in \`DATA_DIR\` (\`${defaultDatabaseUrl(DEFAULT_DATA_DIR)}\`)`,
    brief: 'The SQLite file, or `postgres://user@host:port/db` ([docs/postgres.md](docs/postgres.md))',
  },
  databaseReplicaUrl: {
    flag: '--database-replica-url',
    env: 'DATABASE_REPLICA_URL',
    // Each URL, and that the primary is PostgreSQL too, are checked by the rule in rules.ts.
    kind: list('`postgres://` URLs, separated by commas'),
    fallback: '',
    help: "PostgreSQL: read replicas (standbys of DATABASE_URL), postgres:// URLs separated by commas: a client's reads go to one that has replayed its last write, else to the primary (docs/postgres.md)",
    doc: "PostgreSQL: read replicas (hot standbys of `DATABASE_URL`'s cluster), one `postgres://` URL or several separated by commas. A client's reads go to one that has replayed its last write and lags by at most `REPLICA_MAX_LAG`, else to the primary; writes always go to the primary ([postgres.md](postgres.md#read-replicas))",
  },
  replicaMaxLag: {
    flag: '--replica-max-lag',
    env: 'REPLICA_MAX_LAG',
    kind: seconds(1, 3600),
    fallback: '5',
    help: 'PostgreSQL: seconds a replica may lag behind the primary before reads leave it, 1 to 3600',
    doc: 'PostgreSQL: seconds a replica may lag behind the primary before reads leave it, until it catches up',
  },
  busyTimeoutMs: {
    flag: '--busy-timeout',
    env: 'BUSY_TIMEOUT',
    kind: milliseconds(0, 600_000),
    fallback: '5000',
    help: 'milliseconds a write waits for a lock another connection holds (503 after it)',
    doc: 'SQLite: milliseconds a write waits for the write lock another process holds before it gets 503 (it waits on timers: the process answers other requests meanwhile)',
  },
  durability: {
    flag: '--durability',
    env: 'DURABILITY',
    kind: oneOf<Durability>(durabilities),
    fallback: 'full',
    help: 'SQLite: full (a write is answered once on disk: survives power loss) or normal (survives a crash of the service, not of the machine; faster writes)',
    doc: "SQLite: `full`, a write is answered once its commit is on disk (survives a power loss); `normal`, once it is in the WAL file (survives a crash of the service, not of the machine; writes cost less). PostgreSQL's is the server's own `synchronous_commit`",
    brief: 'SQLite: `full` answers a write once it is on disk; `normal` once it is in the WAL',
  },
  databasePoolSize: {
    flag: '--database-pool-size',
    env: 'DATABASE_POOL_SIZE',
    kind: integer(1, 1000),
    fallback: '10',
    help: 'PostgreSQL: most connections the service opens',
    doc: 'PostgreSQL: most connections the service opens',
  },
  databaseConnectTimeout: {
    flag: '--database-connect-timeout',
    env: 'DATABASE_CONNECT_TIMEOUT',
    kind: seconds(1, 600),
    fallback: '10',
    help: 'PostgreSQL: seconds to wait for a connection (503 after it)',
    doc: 'PostgreSQL: seconds to wait for a connection (503 after it)',
  },
  statementTimeoutMs: {
    flag: '--statement-timeout',
    env: 'STATEMENT_TIMEOUT',
    kind: milliseconds(0, 3_600_000),
    fallback: '30000',
    help: 'PostgreSQL: milliseconds one statement may run before it is cancelled (503; 0: no limit)',
    doc: 'PostgreSQL: milliseconds one statement may run before it is cancelled (503; `0`: no limit). Behind PgBouncer the server must run with the same value: the service checks it at start ([postgres.md](postgres.md#behind-pgbouncer))',
  },
  databaseListenUrl: {
    flag: '--database-listen-url',
    env: 'DATABASE_LISTEN_URL',
    kind: checkedBy<string>('a `postgres://` URL, or `off`', (text) =>
      text === '' || text === 'off' || /^postgres(ql)?:\/\//.test(text)
        ? text
        : { error: `DATABASE_LISTEN_URL must be a postgres:// URL or off (got "${text}")` },
    ),
    fallback: '',
    docDefault: '`DATABASE_URL`',
    helpDefault: 'DATABASE_URL',
    help: "PostgreSQL: where the change feed LISTENs for other instances' writes, a direct connection (through PgBouncer in transaction mode none arrive: the service warns at start); off: poll only, every 100 ms",
    doc: "PostgreSQL: where the change feed `LISTEN`s for other instances' writes, so their changes reach this instance's streams at once: a direct connection, not through PgBouncer in transaction mode, which does not deliver notifications (the service logs a warning at start when it finds one, and when `LISTEN` fails: streams then poll). `off`: streams find them by polling, every 100 ms ([changes.md](changes.md), [postgres.md](postgres.md#behind-pgbouncer))",
  },
  databasePreparedStatements: {
    flag: '--database-prepared-statements',
    env: 'DATABASE_PREPARED_STATEMENTS',
    kind: boolean,
    fallback: 'true',
    help: 'PostgreSQL: false sends no named prepared statements, as PgBouncer in transaction pooling needs (the start refuses such a pooler with true; docs/postgres.md)',
    doc: 'PostgreSQL: `false` sends no named prepared statements (each query is parsed anew), for PgBouncer in transaction pooling mode, which shares server connections between clients; the service and the operator commands take it, and refuse to start through such a pooler with `true` ([postgres.md](postgres.md#behind-pgbouncer))',
  },
} satisfies Record<string, Setting<unknown>>
