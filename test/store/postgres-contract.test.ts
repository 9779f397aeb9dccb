import { setDefaultTimeout } from 'bun:test'
import { SQL } from 'bun'
import { resources } from '../../src/resources/registry'
import { PostgresStore } from '../../src/store/postgres'
import { afterAll, describe, POSTGRES_SERVER } from '../support/postgres-tests'
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

// Each contract test gets a database of its own, empty, so that ids start from 1 as the contract says.
// (Within the describe of postgres-tests.ts: registered only when there is a PostgreSQL to run on.)
describe('PostgreSQL', () =>
  describeStoreContract(
    'PostgresStore',
    async () => {
      const name = `t_${Bun.randomUUIDv7().replaceAll('-', '_')}`
      await admin.unsafe(`CREATE DATABASE ${name}`)
      created.push(name)
      const url = new URL(SERVER)
      url.pathname = `/${name}`
      const store = await PostgresStore.open(url.toString(), resources, { poolSize: 4 })
      return {
        store,
        cleanup: async () => {
          await store.close()
          await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
        },
      }
    },
    { gaplessIds: false },
  ))
