import { setDefaultTimeout } from 'bun:test'
import { SQL } from 'bun'
import { resources } from '../../src/resources/registry'
import { PostgresStore } from '../../src/store/postgres/postgres-store'
import { describeWithPgBouncer, type PgBouncer, startPgBouncer } from '../support/pgbouncer'
import { afterAll, beforeAll, describe, POSTGRES_SERVER } from '../support/postgres-tests'
import { describeStoreContract } from './contract'

// Processes and databases: Bun's 5 s default is short on a busy shared machine (per file, so set here).
setDefaultTimeout(30_000)

/** The server the tests use: POSTGRES_TEST_URL, the local one or a throwaway cluster (postgres-tests.ts). */
const SERVER = POSTGRES_SERVER
const admin = new SQL(SERVER, { max: 1 })
const created: string[] = []

afterAll(async () => {
  for (const name of created) await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await admin.close()
})

/** A new empty database on the server, so that ids start from 1 as the contract says; its name. */
async function newDatabase(): Promise<string> {
  const name = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`
  await admin.unsafe(`CREATE DATABASE ${name}`)
  created.push(name)
  return name
}

/** The store on `url` for one contract test, and its cleanup: the database dropped. */
async function opened(name: string, url: string, options: Parameters<typeof PostgresStore.open>[2]) {
  const store = await PostgresStore.open(url, resources, options)
  return {
    store,
    cleanup: async () => {
      await store.close()
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    },
  }
}

// Each contract test gets a database of its own, empty.
// (Within the describe of postgres-tests.ts: registered only when there is a PostgreSQL to run on.)
describe('PostgreSQL', () =>
  describeStoreContract(
    'PostgresStore',
    async () => {
      const name = await newDatabase()
      const url = new URL(SERVER)
      url.pathname = `/${name}`
      return opened(name, url.toString(), { poolSize: 4 })
    },
    { gaplessIds: false },
  ))

// The same contract through PgBouncer in transaction pooling mode, set up as docs/postgres.md says:
// prepared statements off, the statement timeout set on the database (PgBouncer ignores the one
// the store sends at connection). Its server connections are fewer than the store's and taken in
// turn, so that consecutive transactions of one client land on different ones.
describeWithPgBouncer('PostgreSQL through PgBouncer (transaction pooling, DATABASE_PREPARED_STATEMENTS=false)', () => {
  let bouncer: PgBouncer
  beforeAll(async () => {
    bouncer = await startPgBouncer(SERVER, { poolSize: 2 })
  })
  afterAll(async () => {
    await bouncer.stop()
  })
  describeStoreContract(
    'PostgresStore through PgBouncer',
    async () => {
      const name = await newDatabase()
      await admin.unsafe(`ALTER DATABASE ${name} SET statement_timeout = 30000`)
      await bouncer.fill(name)
      return opened(name, bouncer.url(name), { poolSize: 4, preparedStatements: false })
    },
    { gaplessIds: false },
  )
})
